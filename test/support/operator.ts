/**
 * Runs the real operator (operator/main.ts) as a child process against the test control plane,
 * under a real ServiceAccount token, scoped to one test namespace.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { installCustomResourceDefinitions } from "../../cluster/customResourceDefinitions.ts";
import { k8s } from "../../lib/kube.ts";
import { kubeconfigYaml } from "../../cluster/controlPlane.ts";
import { listeningSocket, portOf, socketsFor } from "../../cluster/ports.ts";
import { eventually, serviceAccountToken, testCluster, type TestCluster } from "./cluster.ts";
import { adminRest } from "./resources.ts";
import { isAlreadyExists, KubeRest } from "../../lib/kubeRest.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";

const crdsInstalled = new Map<string, Promise<void>>();

/** Creates or updates the generated CRDs and waits until the API server serves them. */
export function installCrds(cluster?: TestCluster): Promise<void> {
  const key = cluster?.info.server ?? "shared";
  const pending =
    crdsInstalled.get(key) ??
    (async () => {
      const rest = cluster ? new KubeRest(cluster.kc, "userland-tests") : await adminRest();
      await installCustomResourceDefinitions(rest);
    })();
  crdsInstalled.set(key, pending);
  return pending;
}

export interface OperatorProcess {
  child: ChildProcess;
  port: number;
  username: string;
  logs: () => string;
  readyz: () => Promise<{ leader: boolean; synced: boolean; identity: string } | undefined>;
  metrics: () => Promise<string>;
  /** Sends a signal and waits for the process to exit. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface OperatorOptions {
  cluster?: TestCluster;
  env?: Record<string, string>;
  identity?: string;
  /** Wait until this replica leads with synced caches (default true). */
  waitForLeader?: boolean;
}

/** The operator's ServiceAccount in `namespace`, bound to the namespace-scoped admin powers it needs. */
export async function operatorKubeconfig(
  namespace: string,
  cluster?: TestCluster,
): Promise<{ path: string; username: string }> {
  const c = cluster ?? (await testCluster());
  const rbac = c.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac
    .createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "userland-operator" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ kind: "ServiceAccount", name: "userland-operator", namespace }],
      },
    })
    .catch((error: unknown) => {
      if (!isAlreadyExists(error)) throw error;
    });
  const token = await serviceAccountToken(namespace, "userland-operator", c);
  const dir = mkdtempSync(join(tmpdir(), "userland-operator-"));
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    kubeconfigYaml(c.info.server, readFileSync(c.info.caFile), "userland-operator", token, namespace),
  );
  return { path, username: `system:serviceaccount:${namespace}:userland-operator` };
}

/** Starts operator/main.ts with `kubeconfig`; logs are kept in memory (LOG_LEVEL from `env`). */
export async function spawnOperator(
  kubeconfig: string,
  username: string,
  namespace: string,
  opts: { env?: Record<string, string>; identity?: string } = {},
): Promise<OperatorProcess> {
  // Bound here and passed down (cluster/ports.ts), so the port is the operator's from the start.
  const socket = await listeningSocket();
  const port = portOf(socket);
  const passed = socketsFor({ OPERATOR_HTTP_PORT: socket });
  let output = "";
  const child = spawn(process.execPath, [join(repoRoot, "operator", "main.ts")], {
    cwd: repoRoot,
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      USERLAND_NAMESPACE: namespace,
      OPERATOR_FREEZE_CACHE: "true",
      POD_NAME: opts.identity ?? `operator-${port}`,
      LOG_LEVEL: "debug",
      ...opts.env,
      ...passed.env,
    },
    stdio: ["ignore", "pipe", "pipe", ...passed.fds],
  });
  passed.close();
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  return {
    child,
    port,
    username,
    logs: () => output,
    readyz: async () => {
      try {
        const r = await fetch(`${base}/readyz`);
        return (await r.json()) as { leader: boolean; synced: boolean; identity: string };
      } catch {
        return undefined;
      }
    },
    metrics: async () => (await fetch(`${base}/metrics`)).text(),
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function waitForLeadership(operator: OperatorProcess, timeoutMs = 30_000): Promise<void> {
  await eventually(
    "the operator to lead with synced caches",
    async () => {
      if (operator.child.exitCode !== null)
        throw new Error(`operator exited:\n${operator.logs().slice(-3000)}`);
      const r = await operator.readyz();
      return r?.leader && r.synced;
    },
    timeoutMs,
  );
}

/** The operator for one test: its own ServiceAccount and namespace, stopped when the test ends. */
export async function startOperator(
  t: TestContext,
  namespace: string,
  opts: OperatorOptions = {},
): Promise<OperatorProcess> {
  await installCrds(opts.cluster);
  const { path, username } = await operatorKubeconfig(namespace, opts.cluster);
  const handle = await spawnOperator(path, username, namespace, opts);
  t.after(async () => {
    await handle.stop("SIGKILL");
    if (process.env.SHOW_OPERATOR_LOGS) console.log(handle.logs());
  });
  if (opts.waitForLeader !== false) await waitForLeadership(handle);
  return handle;
}

/**
 * The operator serving `served` (USERLAND_WATCH_NAMESPACES), its ServiceAccount in `own` bound in
 * each of them too, or for "*" cluster-wide; stopped when the test ends.
 */
export async function startOperatorServing(
  t: TestContext,
  own: string,
  served: string[] | "*",
): Promise<OperatorProcess> {
  await installCrds();
  const { path, username } = await operatorKubeconfig(own);
  const { kc } = await testCluster();
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const subjects = [{ kind: "ServiceAccount", name: "userland-operator", namespace: own }];
  const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" };
  if (served === "*") {
    const name = `${own}-operator-all`;
    await rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef, subjects } });
    t.after(() => rbac.deleteClusterRoleBinding({ name }).catch(() => undefined));
  } else {
    for (const namespace of served.filter((ns) => ns !== own))
      await rbac
        .createNamespacedRoleBinding({
          namespace,
          body: { metadata: { name: "userland-operator" }, roleRef, subjects },
        })
        .catch((error: unknown) => {
          if (!isAlreadyExists(error)) throw error;
        });
  }
  const operator = await spawnOperator(path, username, own, {
    env: { USERLAND_WATCH_NAMESPACES: served === "*" ? "*" : served.join(",") },
  });
  t.after(async () => {
    await operator.stop("SIGKILL");
    if (process.env.SHOW_OPERATOR_LOGS) console.log(operator.logs());
  });
  await waitForLeadership(operator);
  return operator;
}
