/**
 * Container images for the real node: built locally by cluster/images/build.sh (no registry is
 * reachable) and imported into the node's containerd under their final names only, because an
 * extra `import-<date>:<tag>` name is one the CRI later resolves as docker.io/library/... and fails on.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "../repoRoot.ts";

const execFileAsync = promisify(execFile);

export interface BuiltImage {
  /** e.g. "userland.local/tools:0123abcd" (the tag is a hash of the recipe). */
  ref: string;
  /** The OCI image-layout archive. */
  archive: string;
}

/** The repository and tag of a built image, as a chart's `image` values name them. */
export function repositoryAndTag(image: BuiltImage): { repository: string; tag: string } {
  const colon = image.ref.lastIndexOf(":");
  return { repository: image.ref.slice(0, colon), tag: image.ref.slice(colon + 1) };
}

/**
 * Builds (or finds cached) the named images; `env` passes inputs such as COREDNS_BIN. NODE_BIN,
 * for the Node-based images, defaults to the Node 24 the project installs (as in platform.sh).
 */
export function buildImages(
  names: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<Record<string, BuiltImage>> {
  return runImageBuild(join(repoRoot, "cluster", "images", "build.sh"), names, {
    NODE_BIN: join(repoRoot, "node_modules", "node", "bin", "node"),
    ...env,
  });
}

/** Builds (or finds cached) the platform's own image from the repository's Dockerfile. */
export async function buildPlatformImage(): Promise<BuiltImage> {
  const { platform } = await runImageBuild(join(repoRoot, "cluster", "images", "platform.sh"), [], {});
  if (!platform) throw new Error("cluster/images/platform.sh printed no platform image");
  return platform;
}

async function runImageBuild(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<Record<string, BuiltImage>> {
  const { stdout } = await execFileAsync("bash", [script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: unknown) => {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`${script} ${args.join(" ")} failed:\n${stderr.split("\n").slice(-20).join("\n")}`);
  });
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] ?? "{}") as Record<string, BuiltImage>;
}

/** Imports an archive into containerd's CRI namespace as exactly `image.ref`. */
export async function importImage(ctr: string, socket: string, image: BuiltImage): Promise<void> {
  const base = repositoryAndTag(image).repository;
  await execFileAsync(
    ctr,
    ["--address", socket, "--namespace", "k8s.io", "images", "import", "--base-name", base, image.archive],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const { stdout } = await execFileAsync(ctr, [
    "--address",
    socket,
    "--namespace",
    "k8s.io",
    "images",
    "list",
    "--quiet",
  ]);
  const names = stdout.split("\n").filter(Boolean);
  if (!names.includes(image.ref)) {
    throw new Error(
      `importing ${image.archive} did not create ${image.ref} (containerd has: ${names.join(", ")})`,
    );
  }
  // Any other name the import made is removed: only the final name may exist (see above).
  const extra = names.filter((n) => n.startsWith("import-"));
  if (extra.length > 0) {
    await execFileAsync(ctr, ["--address", socket, "--namespace", "k8s.io", "images", "remove", ...extra]);
  }
}
