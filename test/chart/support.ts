/**
 * Helm and kubectl for the chart and RBAC tests: both are built from Go modules with the control
 * plane (cluster/build.sh), run as child processes, and talk only to the test control plane on
 * 127.0.0.1 (helm itself never contacts a cluster here: lint and template are offline).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { testCluster } from "../support/cluster.ts";

export const chartDir = join(repoRoot, "charts", "userland");
export const crdDir = join(chartDir, "crds");

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; resolves with its exit code and output (never rejects on a non-zero exit). */
export function run(
  command: string,
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
) {
  return new Promise<RunResult>((resolve, reject) => {
    const child = execFile(
      command,
      args,
      {
        cwd: repoRoot,
        env: opts.env ?? process.env,
        maxBuffer: 64 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 120_000,
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          reject(new Error(`${command} ${args.join(" ")}: ${error.message}`));
          return;
        }
        resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

let helmHome: string | undefined;

/**
 * helm with its cache/config/data in a scratch directory and no cluster configured, or, with
 * `kubeconfig`, talking to that cluster (helm install).
 */
export async function helm(args: string[], opts: { kubeconfig?: string } = {}): Promise<RunResult> {
  const { info } = await testCluster();
  const binary = join(info.binDir, "helm");
  if (!existsSync(binary)) {
    throw new Error(`${binary} is missing: cluster/build.sh builds it with the control plane`);
  }
  if (!helmHome) {
    const home = mkdtempSync(join(tmpdir(), "userland-helm-"));
    helmHome = home;
    process.once("exit", () => rmSync(home, { recursive: true, force: true }));
  }
  return run(binary, args, {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: helmHome,
      HELM_CACHE_HOME: join(helmHome, "cache"),
      HELM_CONFIG_HOME: join(helmHome, "config"),
      HELM_DATA_HOME: join(helmHome, "data"),
      // Nothing to connect to unless asked: lint and template must not need a cluster.
      KUBECONFIG: opts.kubeconfig ?? join(helmHome, "no-kubeconfig"),
    },
  });
}

/** kubectl as the test admin. */
export async function kubectl(args: string[], input?: string): Promise<RunResult> {
  const { info } = await testCluster();
  return run(join(info.binDir, "kubectl"), [`--kubeconfig=${info.kubeconfig}`, ...args], {
    input,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir() },
  });
}

/** Throws with the command's output unless it succeeded. */
export function ok(result: RunResult, what: string): string {
  if (result.code !== 0) {
    throw new Error(`${what} failed (exit ${result.code}):\n${result.stderr}\n${result.stdout}`.trim());
  }
  return result.stdout;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

export function parseManifests(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === "object" && "kind" in o);
}

export const CLUSTER_SCOPED_KINDS = new Set([
  "ClusterRole",
  "ClusterRoleBinding",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
  "MutatingAdmissionPolicy",
  "MutatingAdmissionPolicyBinding",
  "CustomResourceDefinition",
  "Namespace",
]);

/** Renders the chart with `values` (given as a values file, as an admin would). */
export async function renderChart(release: string, namespace: string, values: unknown = {}): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "userland-values-"));
  try {
    const file = join(dir, "values.json");
    writeFileSync(file, JSON.stringify(values));
    return ok(
      await helm(["template", release, chartDir, "--namespace", namespace, "--values", file]),
      "helm template",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Values that keep one test's cluster-scoped objects apart from another's: the people roles get
 * the namespace in their names (the components' cluster-scoped objects already do).
 */
export function isolatedValues(
  namespace: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const { rbac, ...rest } = extra;
  return {
    rbac: {
      templateAdminRoleName: `${namespace}-template-admin`,
      teacherRoleName: `${namespace}-teacher`,
      courseTeacherRoleName: `${namespace}-course-teacher`,
      visitorRoleName: `${namespace}-environment-visitor`,
      teacherVisitorRoleName: `${namespace}-teacher-visitor`,
      ...(rbac as Record<string, unknown> | undefined),
    },
    ...rest,
  };
}

/** Deletes the cluster-scoped objects of `objects` when the test ends (the namespace takes the rest). */
export function cleanUpClusterScoped(t: TestContext, objects: KubeObject[]): void {
  const clusterScoped = objects.filter(
    (o) => CLUSTER_SCOPED_KINDS.has(o.kind) && o.kind !== "CustomResourceDefinition",
  );
  t.after(async () => {
    for (const o of clusterScoped) {
      const kind = group(o.apiVersion) ? `${o.kind}.${group(o.apiVersion)}` : o.kind;
      const result = await kubectl(["delete", kind, o.metadata.name, "--ignore-not-found", "--wait=false"]);
      if (result.code !== 0) console.error(`cleanup of ${o.kind} ${o.metadata.name}: ${result.stderr}`);
    }
  });
}

function group(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/** Applies `objects` as the admin with server-side apply; returns kubectl's report. */
export async function applyManifests(namespace: string, objects: KubeObject[]): Promise<string> {
  const stream = objects.map((o) => JSON.stringify(o)).join("\n");
  return ok(
    await kubectl(
      ["apply", "--server-side", "--field-manager=userland-chart-test", "--namespace", namespace, "-f", "-"],
      stream,
    ),
    "kubectl apply",
  );
}

/** Renders and installs the chart into `namespace`; cluster-scoped objects are deleted afterwards. */
export async function installChart(
  t: TestContext,
  release: string,
  namespace: string,
  values: Record<string, unknown> = {},
): Promise<KubeObject[]> {
  const objects = parseManifests(await renderChart(release, namespace, isolatedValues(namespace, values)));
  cleanUpClusterScoped(t, objects);
  await applyManifests(namespace, objects);
  return objects;
}

/**
 * Installs CRDs that cluster/build.sh copied from Go modules into the tools directory (e.g.
 * monitoring.coreos.com_servicemonitors.yaml) and waits until the API server serves them.
 * Server-side apply: these CRDs are too large for client-side apply's annotation, and test files
 * running in parallel may apply the same ones.
 */
export async function installToolCrds(files: string[]): Promise<void> {
  const { info } = await testCluster();
  const paths = files.map((f) => join(info.binDir, f));
  for (const path of paths) {
    if (!existsSync(path))
      throw new Error(`${path} is missing: cluster/build.sh copies it from its Go module`);
  }
  const args = paths.flatMap((p) => ["-f", p]);
  ok(
    await kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager=userland-tests", ...args]),
    "kubectl apply (CRDs)",
  );
  ok(
    await kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...args]),
    "kubectl wait (CRDs established)",
  );
}
