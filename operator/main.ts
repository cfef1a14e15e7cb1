/**
 * The Userland operator: reconciles Userlands into Deployments, Services and PVCs.
 * `node operator/main.ts --help` lists its settings.
 */
import { createServer } from "node:http";
import { hostname } from "node:os";
import { ConfigError, describeSettings, loadConfig, type ConfigOf } from "../lib/config.ts";
import { currentNamespace, loadKubeConfig } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { operatorSettings } from "./config.ts";
import { Controller } from "./controller.ts";
import { Culler } from "./culler.ts";
import { LeaderElector } from "./leaderElection.ts";
import { OperatorMetrics } from "./metrics.ts";

if (process.argv.includes("--help")) {
  console.log(
    `Usage: node operator/main.ts\n\nReconciles userland.dev Templates and Userlands. Settings (environment variables):\n${describeSettings(operatorSettings)}\n\nKUBECONFIG selects a kubeconfig file; without it the in-cluster ServiceAccount is used.`,
  );
  process.exit(0);
}

let config: ConfigOf<typeof operatorSettings>;
try {
  config = loadConfig("userland-operator", operatorSettings);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(2);
}

const log = createLogger("operator");
const metrics = new OperatorMetrics();
const kc = loadKubeConfig();
const rest = new KubeRest(kc, "userland-operator");
rest.onRequest = (verb, code) => metrics.apiRequests.inc({ verb, code: String(code) });
const namespace = config.namespace || (await currentNamespace());
const identity = config.identity || `${hostname()}-${process.pid}`;

// One controller per leadership term: a replica that loses the Lease drains and drops its caches,
// and starts from a fresh list if it leads again.
const newController = () =>
  new Controller({
    kc,
    rest,
    namespace,
    workers: config.workers,
    resyncPeriodMs: config.resyncPeriod,
    log,
    metrics,
    freezeCache: config.freezeCache,
  });
let controller: Controller | undefined;
let culler: Culler | undefined;
let term: Promise<void> = Promise.resolve();

function lead(): void {
  term = term.then(async () => {
    metrics.leader.set(1);
    controller = newController();
    culler = new Culler(controller.ctx, config.cullInterval);
    await controller.start();
    culler.start();
  });
}

function stopLeading(): void {
  term = term.then(async () => {
    metrics.leader.set(0);
    await culler?.stop();
    await controller?.stop();
    controller = undefined;
    culler = undefined;
  });
}

const elector = config.leaderElection
  ? new LeaderElector({
      rest,
      namespace,
      name: config.leaseName,
      identity,
      leaseDurationMs: config.leaseDuration,
      renewDeadlineMs: config.renewDeadline,
      retryPeriodMs: config.retryPeriod,
      log,
      onStartedLeading: lead,
      onStoppedLeading: stopLeading,
    })
  : undefined;

const server = createServer((req, res) => {
  const send = (code: number, body: string, type = "text/plain") => {
    res.writeHead(code, { "content-type": type });
    res.end(body);
  };
  if (req.url === "/healthz") return send(200, "ok\n");
  if (req.url === "/readyz") {
    // A standby replica is ready too: it is healthy and waiting for the Lease.
    const leader = controller !== undefined;
    const synced = controller?.synced ?? false;
    return send(
      !leader || synced ? 200 : 503,
      JSON.stringify({ leader, synced, identity }) + "\n",
      "application/json",
    );
  }
  if (req.url === "/metrics") {
    metrics.registry.metrics().then(
      (text) => send(200, text, metrics.registry.contentType),
      () => send(500, "error\n"),
    );
    return;
  }
  send(404, "not found\n");
});
server.listen(config.httpPort, config.httpAddress, () => {
  const address = server.address();
  log.info({ namespace, identity, http: address }, "operator started");
});

let shuttingDown = false;
async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) {
    log.warn({ signal }, "second signal: exiting now");
    process.exit(1);
  }
  shuttingDown = true;
  log.info({ signal }, "shutting down: finishing reconciles in progress");
  stopLeading();
  await term;
  await elector?.stop();
  server.close();
  await rest.close();
  log.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

if (elector) elector.start();
else lead();
