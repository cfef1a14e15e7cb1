/**
 * The Userland operator: reconciles Userlands into Deployments, Services and PVCs.
 * `node operator/main.ts --help` lists its settings. SIGTERM/SIGINT: reconciles in progress finish,
 * the Lease is released; a second signal exits at once.
 */
import { hostname } from "node:os";
import { createAdminServer } from "../lib/adminServer.ts";
import { currentNamespace, loadKubeConnection } from "../lib/kubeConnection.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import { ServedNamespaces } from "../lib/namespaces.ts";
import { runComponent } from "../lib/service.ts";
import { loadOperatorConfig, operatorSettings, type OperatorConfig } from "./config.ts";
import { Controller } from "./controller.ts";
import { Culler } from "./culler.ts";
import { LeaderElector } from "./leaderElection.ts";
import { optimizeHeapForSize } from "./heap.ts";
import { createMetrics } from "./metrics.ts";

async function start(config: OperatorConfig, log: Logger) {
  const metrics = createMetrics({ defaultMetrics: true });
  // Not client-node's KubeConfig: loading it costs the operator a third of its memory (lib/kubeConnection.ts).
  const rest = new KubeRest(await loadKubeConnection(), "userland-operator");
  rest.onRequest = (verb, code) => metrics.apiRequests.inc({ verb, code: String(code) });
  // The Lease stays in the own namespace whatever is served: one leader for the installation.
  const namespace = config.namespace || (await currentNamespace());
  const namespaces = new ServedNamespaces(config.watchNamespaces, namespace);
  const identity = config.identity || `${hostname()}-${process.pid}`;

  // One controller per leadership term: a replica that loses the Lease drains and drops its caches,
  // and starts from a fresh list if it leads again.
  const newController = () =>
    new Controller({
      rest,
      namespaces,
      workers: config.workers,
      resyncPeriodMs: config.resyncPeriod,
      log,
      metrics,
      freezeCache: config.freezeCache,
      teachers: {
        userPrefix: config.sessionUserPrefix,
        groupPrefix: config.sessionGroupPrefix,
        ttlMs: config.teacherCacheTtl,
      },
      copyImage: config.copyImage,
      copyRetryMs: config.copyRetry,
      handInSnapshotClass: config.handInSnapshotClass,
      archiveClients: config.archiveClients,
      proxyPods: config.proxyPods,
      policyPodCidrs: config.policyPodCidrs,
      grading: { images: config.autograderImages, resources: config.autograderResources },
    });
  let controller: Controller | undefined;
  let culler: Culler | undefined;
  let term: Promise<void> = Promise.resolve();

  const lead = (): void => {
    term = term.then(async () => {
      metrics.leader.set(1);
      controller = newController();
      culler = new Culler(controller.ctx, config.cullInterval);
      await controller.start();
      // Only now: the mode slows the caches' first fill several times over (heap.ts).
      if (optimizeHeapForSize()) log.info("caches synced; heap optimized for size from now on");
      culler.start();
    });
  };
  const stopLeading = (): void => {
    term = term.then(async () => {
      metrics.leader.set(0);
      await culler?.stop();
      await controller?.stop();
      controller = undefined;
      culler = undefined;
    });
  };

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

  const admin = createAdminServer({
    registry: metrics.registry,
    readiness: () => {
      // A standby replica is ready too: it is healthy and waiting for the Lease.
      const leader = controller !== undefined;
      const synced = controller?.synced ?? false;
      return { ready: !leader || synced, details: { leader, synced, identity } };
    },
  });
  const http = await admin.listen(config.httpPort, config.httpAddress, "OPERATOR_HTTP_PORT");
  log.info({ namespace, namespaces: namespaces.toString(), identity, http }, "operator started");

  if (elector) elector.start();
  else lead();

  return {
    stopping: "shutting down: finishing reconciles in progress",
    stop: async () => {
      stopLeading();
      await term;
      await elector?.stop();
      await admin.close();
      await rest.close();
    },
  };
}

await runComponent({
  name: "operator",
  summary:
    "userland operator: reconciles userland.dev Templates and Userlands into Deployments, Services and PVCs.",
  settings: operatorSettings,
  kubernetes: true,
  load: loadOperatorConfig,
  start,
});
