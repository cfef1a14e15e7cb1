/**
 * The Userland operator: reconciles Userlands into Deployments, Services and PVCs.
 * `node operator/main.ts --help` lists its settings.
 */
import { createServer } from "node:http";
import { hostname } from "node:os";
import { ConfigError, describeSettings, loadConfig } from "../lib/config.ts";
import { currentNamespace, loadKubeConfig } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { operatorSettings } from "./config.ts";
import { Controller } from "./controller.ts";
import { Culler } from "./culler.ts";
import { LeaderElector } from "./leaderElection.ts";
import { OperatorMetrics } from "./metrics.ts";

if (process.argv.includes("--help")) {
  console.log(`Usage: node operator/main.ts\n\nReconciles userland.dev Templates and Userlands. Settings (environment variables):\n${describeSettings(operatorSettings)}\n\nKUBECONFIG selects a kubeconfig file; without it the in-cluster ServiceAccount is used.`);
  process.exit(0);
}

let config;
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

const controller = new Controller({
  kc,
  rest,
  namespace,
  workers: config.workers,
  resyncPeriodMs: config.resyncPeriod,
  log,
  metrics,
  freezeCache: config.freezeCache,
});
const culler = new Culler(controller.ctx, config.cullInterval);
let leading = false;

async function lead(): Promise<void> {
  leading = true;
  metrics.leader.set(1);
  await controller.start();
  culler.start();
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
      onStartedLeading: () => void lead(),
      // Another replica may already be reconciling: stop at once and let the Deployment restart us.
      onStoppedLeading: () => process.exit(1),
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
    const ready = !leading || controller.synced;
    return send(ready ? 200 : 503, JSON.stringify({ leader: leading, synced: controller.synced, identity }) + "\n", "application/json");
  }
  if (req.url === "/metrics") {
    metrics.registry.metrics().then((text) => send(200, text, metrics.registry.contentType), () => send(500, "error\n"));
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
  await culler.stop();
  await controller.stop();
  await elector?.stop();
  server.close();
  await rest.close();
  log.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

if (elector) elector.start();
else await lead();
