/**
 * Runs the real operator (operator/main.ts) as a child process against a control plane, under a
 * real ServiceAccount token, scoped to one namespace: for tests, benchmarks, chaos and soak runs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeRest } from "../../lib/kubeRest.ts";
import type { GrantOptions } from "../chartRbac.ts";
import { grantComponentRights } from "./chartRights.ts";
import { kubeconfigYaml } from "../controlPlane.ts";
import { installCustomResourceDefinitions } from "../customResourceDefinitions.ts";
import { listeningSocket, portOf, socketsFor } from "../ports.ts";
import { diesWithParent, waitFor } from "../processes.ts";
import { repoRoot } from "../repoRoot.ts";
import { requestServiceAccountToken, type ClusterAccess } from "./connect.ts";

/** A clean shutdown takes well under a second; past this the operator hangs, and the caller hears so. */
const STOP_GRACE_MS = 20_000;

const crdsInstalled = new Map<string, Promise<void>>();

/** Creates or updates the generated CRDs and waits until the API server serves them; once per control plane. */
export function installCrdsOnce(cluster: ClusterAccess): Promise<void> {
  const key = cluster.info.server;
  const pending =
    crdsInstalled.get(key) ??
    (async () => {
      const rest = new KubeRest(cluster.kc, "userland-tests");
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

/**
 * The operator's ServiceAccount in `namespace` with the chart's rights (cluster/chartRbac.ts): there,
 * or in each of `grant.watchNamespaces` ("*": cluster-wide, deleted through `grant.after`).
 */
export async function operatorKubeconfig(
  namespace: string,
  c: ClusterAccess,
  grant: GrantOptions = {},
): Promise<{ path: string; username: string }> {
  const account = await grantComponentRights(c, "operator", namespace, grant);
  const token = await requestServiceAccountToken(c, namespace, account);
  const dir = mkdtempSync(join(tmpdir(), "userland-operator-"));
  const path = join(dir, "kubeconfig");
  writeFileSync(path, kubeconfigYaml(c.info.server, readFileSync(c.info.caFile), account, token, namespace));
  return { path, username: `system:serviceaccount:${namespace}:${account}` };
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
  // Dies with the test file's process even when that is killed (a file's timeout, an interrupted
  // run): a fresh clone's interrupted run left an operator reconciling on, its parent gone.
  const child = spawn(
    ...diesWithParent(process.execPath, [join(repoRoot, "operator", "main.ts")], "SIGKILL"),
    {
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
    },
  );
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
        // Bounded: an operator that accepts but never answers must fail the wait, not hang it.
        const r = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) });
        return (await r.json()) as { leader: boolean; synced: boolean; identity: string };
      } catch {
        return undefined;
      }
    },
    metrics: async () => (await fetch(`${base}/metrics`)).text(),
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      let overdue = false;
      const timer = setTimeout(() => ((overdue = true), child.kill("SIGKILL")), STOP_GRACE_MS);
      const code = await exited;
      clearTimeout(timer);
      if (overdue)
        throw new Error(
          `the operator did not exit within ${STOP_GRACE_MS} ms of ${signal}:\n${output.slice(-3000)}`,
        );
      return code;
    },
  };
}

export async function waitForLeadership(operator: OperatorProcess, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    "the operator to lead with synced caches",
    async () => {
      const r = await operator.readyz();
      return Boolean(r?.leader && r.synced);
    },
    timeoutMs,
    { alive: () => operator.child.exitCode === null, intervalMs: 100 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; the operator's log:\n${operator.logs().slice(-3000)}`);
  });
}
