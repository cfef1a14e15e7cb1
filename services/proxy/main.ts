/**
 * Proxy entry point: `node services/proxy/main.ts` (settings from the environment, see `--help`).
 * SIGTERM/SIGINT: /readyz turns 503, the listener closes, WebSockets are closed (editors reconnect
 * to another replica), in-flight requests get PROXY_SHUTDOWN_GRACE to finish, pending activity is
 * written; a second signal exits at once.
 */
import { currentNamespace, loadKubeConnection } from "../../lib/kubeConnection.ts";
import { runComponent } from "../../lib/service.ts";
import { buildProxyApp } from "./app.ts";
import { loadProxyConfig } from "./config.ts";
import { settings } from "./settings.ts";
import { createMetrics } from "./metrics.ts";

await runComponent({
  name: "proxy",
  summary: "userland proxy: sends each student's HTTP and WebSocket traffic to their own environment.",
  settings,
  kubernetes: true,
  compactHeapWhenIdle: true,
  load: loadProxyConfig,
  start: async (config, log) => {
    const namespace = config.namespace || (await currentNamespace());
    const app = await buildProxyApp(config, {
      kc: await loadKubeConnection(),
      log,
      namespace,
      metrics: createMetrics({ defaultMetrics: true }),
    });
    const { url, adminUrl } = await app.proxy.listen({
      host: config.host,
      port: config.port,
      adminHost: config.adminHost,
      adminPort: config.adminPort,
      socketNames: { main: "PROXY_PORT", admin: "PROXY_ADMIN_PORT" },
    });
    log.info({ url, adminUrl, namespace, resolver: app.resolver.kind }, "proxy listening");
    app.synced.catch((error: unknown) => log.error({ err: error }, "caches did not sync"));
    return {
      stopping: "shutting down: draining connections",
      stoppingFields: { graceMs: config.shutdownGraceMs },
      stop: () => app.close(config.shutdownGraceMs),
    };
  },
});
