/**
 * Proxy entry point: `node services/proxy/main.ts` (settings from the environment, see `--help`).
 * SIGTERM/SIGINT: /readyz turns 503, the listener closes, WebSockets are closed (editors reconnect
 * to another replica), in-flight requests get PROXY_SHUTDOWN_GRACE to finish, pending activity is
 * written; a second signal exits at once.
 */
import { currentNamespace, loadKubeConfig } from "../../lib/kube.ts";
import { createLogger } from "../../lib/logger.ts";
import { helpRequested, KUBECONFIG_HELP, runService } from "../../lib/service.ts";
import { buildProxyApp } from "./app.ts";
import { loadProxyConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";

helpRequested(
  "userland proxy: sends each student's HTTP and WebSocket traffic to their own environment.",
  settings,
  [KUBECONFIG_HELP],
);

const log = createLogger("proxy");

await runService("proxy", log, async () => {
  const config = loadProxyConfig();
  const namespace = config.namespace || (await currentNamespace());
  const app = await buildProxyApp(config, {
    kc: loadKubeConfig(),
    log,
    namespace,
    metrics: createMetrics({ defaultMetrics: true }),
  });
  const { url, adminUrl } = await app.proxy.listen({
    host: config.host,
    port: config.port,
    adminHost: config.adminHost,
    adminPort: config.adminPort,
  });
  log.info({ url, adminUrl, namespace, resolver: app.resolver.kind }, "proxy listening");
  app.synced.catch((error: unknown) => log.error({ err: error }, "caches did not sync"));
  return {
    stopping: "shutting down: draining connections",
    stoppingFields: { graceMs: config.shutdownGraceMs },
    stop: () => app.close(config.shutdownGraceMs),
  };
});
