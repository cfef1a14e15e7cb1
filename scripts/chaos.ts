/**
 * `npm run chaos`: the operator's convergence under faults, at scale, on a private kwok control
 * plane (loopback only). See reliability/chaos.ts for what is injected and checked.
 */
import { randomBytes } from "node:crypto";
import { KubeRest } from "../lib/kubeRest.ts";
import { privateControlPlane, startAndConnect } from "../cluster/harness/privateControlPlane.ts";
import { Chaos, formatReport } from "../reliability/chaos.ts";

const HELP = `Usage: npm run chaos [-- --help]

Starts a private control plane (etcd, kube-apiserver, kwok; under .userland/chaos), creates
Templates and Userlands, runs two operator replicas, injects random faults for a bounded time
(deleted and hand-edited Deployments, Services and PVCs, enabled flips, template switches and
rollouts, operator restarts, leader kills, kube-apiserver restarts), then checks that everything
converges: exactly the desired children, no orphans, no claim deleted by the operator.
Exits 1 if it does not converge within the bound or a check fails.

Environment:
  CHAOS_USERLANDS          Userlands to create (default 1000)
  CHAOS_SECONDS            how long faults are injected (default 120)
  CHAOS_CONVERGE_SECONDS   bound for convergence, after set-up and after the faults (default 300)
  CHAOS_RATE               object faults per second (default 5)
  CHAOS_PROCESS_EVERY      seconds between operator/API server faults (default 20)
  CHAOS_SEED               seed of the random choices, to repeat a run
  CHAOS_WORKERS            operator reconcile workers (default: the operator's default)
  CHAOS_KEEP=1             keep the control plane's files (logs, audit log) afterwards`;

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(HELP);
  process.exit(0);
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`${name} must be a non-negative number, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return n;
}

const userlands = Math.max(1, Math.floor(envNumber("CHAOS_USERLANDS", 1000)));
const faultSeconds = envNumber("CHAOS_SECONDS", 120);
const convergeSeconds = envNumber("CHAOS_CONVERGE_SECONDS", 300);
const seed = process.env.CHAOS_SEED ? envNumber("CHAOS_SEED", 0) : undefined;
const workers = process.env.CHAOS_WORKERS;

const controlPlane = privateControlPlane("chaos", { nodes: 2 });
let chaos: Chaos | undefined;
let stopping: Promise<void> | undefined;
const keepFiles = process.env.CHAOS_KEEP === "1";

function stopAll(): Promise<void> {
  stopping ??= (async () => {
    await chaos?.stopOperators().catch((e: unknown) => console.error("stopping operators:", e));
    await controlPlane.stop({ keepFiles }).catch((e: unknown) => console.error("stopping control plane:", e));
  })();
  return stopping;
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(130); // a second signal: leave at once
    console.error(`\n${signal}: stopping the operators and the control plane…`);
    void stopAll().then(() => process.exit(130));
  });
}

let code = 1;
try {
  const { info, cluster } = await startAndConnect(controlPlane, { crds: true });
  const namespace = `chaos-${randomBytes(3).toString("hex")}`;
  const admin = new KubeRest(cluster.kc, "userland-chaos");
  await admin.create("/api/v1/namespaces", { metadata: { name: namespace } });
  await admin.close();

  chaos = new Chaos({
    controlPlane,
    cluster,
    namespace,
    userlands,
    faultSeconds,
    convergeSeconds,
    faultsPerSecond: envNumber("CHAOS_RATE", 5),
    processFaultEvery: envNumber("CHAOS_PROCESS_EVERY", 20),
    seed,
    operatorEnv: { LOG_LEVEL: "warn", ...(workers ? { OPERATOR_WORKERS: workers } : {}) },
    log: (line) => console.error(`[chaos] ${line}`),
  });
  const report = await chaos.run();
  console.log(`\n${formatReport(report)}`);
  if (keepFiles) console.log(`\ncontrol plane files (logs, audit log): ${info.dir}`);
  code = report.failures.length === 0 ? 0 : 1;
} catch (error) {
  console.error(`chaos run failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await stopAll();
}
process.exit(code);
