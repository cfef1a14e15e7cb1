/**
 * `npm run soak`: the proxy under load and faults on a private control plane (loopback only).
 * See reliability/soak.ts for what runs and what is checked; exits 1 when a check fails.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { privateControlPlane, startAndConnect } from "../cluster/harness/privateControlPlane.ts";
import { PROXY_RSS_BOUND_MIB, formatSoakReport, runSoak } from "../reliability/soak.ts";

const HELP = `npm run soak [-- options]

The proxy (services/proxy/main.ts, as a process) under load and faults on a private control plane
(.userland/soak; etcd, kube-apiserver, controllers and kwok on 127.0.0.1), with the real operator:
every user has a Userland, a session cookie, a loopback environment reached through the proxy's
resolver overrides, keep-alive HTTP clients and long-lived WebSockets. After a warm-up, upstreams
restart and Userlands are stopped and started, all the time. Afterwards: requests by status,
WebSocket counts, wrong-user count (must be 0), the proxy's RSS and open fds (flat, back to the
baseline once clients close), and the proxy's RSS at start, at its peak (never above --rss-bound) and
--idle seconds after the clients closed (at most --idle-share x the start), with its memory by part.
Exit status 1 when a check fails.

Options (or environment):
  --users N            SOAK_USERS          users (default 200)
  --seconds N          SOAK_SECONDS        load duration incl. warm-up (default 300)
  --warmup N           SOAK_WARMUP         fault-free seconds at the start (default min(20, seconds/5))
  --clients N          SOAK_CLIENTS        keep-alive HTTP clients per user (default 1)
  --websockets N       SOAK_WEBSOCKETS     WebSockets per user (default 1)
  --think-ms N         SOAK_THINK_MS       pause between one client's requests (default 250)
  --message-ms N       SOAK_MESSAGE_MS     pause between one WebSocket's messages (default 1000)
  --restart-ms N       SOAK_RESTART_MS     mean pause between upstream restarts (default 10000/users, >= 100)
  --flip-ms N          SOAK_FLIP_MS        mean pause between Userland stops (default 30000/users, >= 500)
  --idle N             SOAK_IDLE           seconds after the clients close when the proxy's memory is
                                           read again, by part (default 60; 0: not waited, not checked)
  --rss-bound N        SOAK_RSS_BOUND      MiB the proxy's RSS may never pass (default ${PROXY_RSS_BOUND_MIB}, the
                                           bound for the default size; the chart's limit is above it)
  --idle-share N       SOAK_IDLE_SHARE     the RSS read after --idle may be at most N x the RSS at
                                           start (default 1.5)
  --proxy-node-options="FLAGS"             SOAK_PROXY_NODE_OPTIONS: Node.js options of the proxy's
                                           process (default: the chart's proxy.nodeOptions; empty:
                                           V8's defaults), e.g. "--max-semi-space-size=8 --trace-gc"
  --proxy-output FILE                      append everything the proxy prints to FILE
  --json FILE                              also write the full report as JSON
  -q, --quiet                              no progress lines
  -h, --help
`;

const { values } = parseArgs({
  options: {
    users: { type: "string" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    clients: { type: "string" },
    websockets: { type: "string" },
    "think-ms": { type: "string" },
    "message-ms": { type: "string" },
    "restart-ms": { type: "string" },
    "flip-ms": { type: "string" },
    idle: { type: "string" },
    "rss-bound": { type: "string" },
    "idle-share": { type: "string" },
    "proxy-node-options": { type: "string" },
    "proxy-output": { type: "string" },
    json: { type: "string" },
    quiet: { type: "boolean", short: "q" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function number(flag: string | undefined, env: string, fallback?: number): number | undefined {
  const raw = flag ?? process.env[env];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    process.stderr.write(`${env}: "${raw}" is not a number\n\n${HELP}`);
    process.exit(2);
  }
  return n;
}

const users = number(values.users, "SOAK_USERS", 200) as number;
const seconds = number(values.seconds, "SOAK_SECONDS", 300) as number;
if (users < 2 || seconds < 10) {
  process.stderr.write("the soak needs at least 2 users and 10 seconds\n");
  process.exit(2);
}
// Unset: the chart's (proxy.nodeOptions); set but empty: V8's defaults.
const proxyNodeOptions = values["proxy-node-options"] ?? process.env.SOAK_PROXY_NODE_OPTIONS;
const log = values.quiet ? () => undefined : (line: string) => process.stderr.write(`[soak] ${line}\n`);

const controlPlane = privateControlPlane("soak", { log: (line) => log(`control plane: ${line}`) });
let exitCode: number;
let stopping = false;
/** Stops the control plane; its logs stay in .userland/soak when the soak failed. */
const stop = async (keepFiles = false) => {
  if (stopping) return;
  stopping = true;
  await controlPlane
    .stop({ keepFiles })
    .catch((error: unknown) => process.stderr.write(`stopping: ${String(error)}\n`));
};
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    void stop().then(() => process.exit(130));
  });

try {
  const { cluster } = await startAndConnect(controlPlane);
  const namespace = "soak";
  const { k8s } = await import("../lib/kube.ts");
  await cluster.kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });

  const report = await runSoak({
    cluster,
    namespace,
    users,
    seconds,
    warmupSeconds: number(values.warmup, "SOAK_WARMUP"),
    httpClientsPerUser: number(values.clients, "SOAK_CLIENTS"),
    websocketsPerUser: number(values.websockets, "SOAK_WEBSOCKETS"),
    thinkMs: number(values["think-ms"], "SOAK_THINK_MS", 250),
    messageMs: number(values["message-ms"], "SOAK_MESSAGE_MS"),
    restartEveryMs: number(values["restart-ms"], "SOAK_RESTART_MS"),
    flipEveryMs: number(values["flip-ms"], "SOAK_FLIP_MS"),
    idleSeconds: number(values.idle, "SOAK_IDLE"),
    rssBoundMiB: number(values["rss-bound"], "SOAK_RSS_BOUND", PROXY_RSS_BOUND_MIB),
    idleRssShare: number(values["idle-share"], "SOAK_IDLE_SHARE"),
    proxyNodeOptions: proxyNodeOptions?.split(/\s+/).filter(Boolean),
    proxyOutputFile: values["proxy-output"],
    log,
  });
  process.stdout.write(`${formatSoakReport(report)}\n`);
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
  exitCode = report.failures.length === 0 ? 0 : 1;
} catch (error) {
  process.stderr.write(`soak failed: ${(error as Error).stack ?? String(error)}\n`);
  exitCode = 1;
}
await stop(exitCode !== 0);
process.exit(exitCode);
