/** A scratch folder per test, removed afterwards even where a copy made it read-only. */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

export async function scratch(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "coursework-"));
  t.after(async () => {
    execFileSync("chmod", ["-R", "u+rwx", dir]);
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

/** sha256sum's canonical manifest hash of a folder, computed by coreutils alone (manifest.ts's check). */
export function sha256sumOfFolder(dir: string): string {
  const out = execFileSync(
    "bash",
    ["-c", "find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum"],
    { cwd: dir, encoding: "utf8" },
  );
  return out.split(" ")[0]!;
}

/** Extracts with Debian's unzip where installed, else with Python's zipfile. */
export function extract(zip: string, into: string): string {
  if (existsSync("/usr/bin/unzip")) {
    execFileSync("/usr/bin/unzip", ["-q", zip, "-d", into]);
    return "unzip";
  }
  execFileSync("python3", [
    "-c",
    "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
    zip,
    into,
  ]);
  return "python3 zipfile";
}
