/**
 * Auth service entry point: `node services/auth/main.ts` (settings from the environment, see
 * `--help`). /metrics and /healthz are on the admin listener (AUTH_ADMIN_PORT), never on the
 * public AUTH_PORT. SIGTERM/SIGINT stop accepting connections and finish in-flight requests; a
 * second signal exits at once.
 */
import { createAdminServer } from "../../lib/adminServer.ts";
import { currentNamespace, loadKubeConnection } from "../../lib/kubeConnection.ts";
import { listenOptions } from "../../lib/listen.ts";
import { runComponent } from "../../lib/service.ts";
import { buildApp } from "./app.ts";
import { configWarnings, loadAuthConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";

await runComponent({
  name: "auth",
  summary: "userland auth service: OpenID Connect and GitHub login, session cookies, forward-auth.",
  settings,
  // Only with AUTH_ENDED_SESSIONS (KUBECONFIG, or the pod's ServiceAccount; USERLAND_NAMESPACE).
  kubernetes: true,
  compactHeapWhenIdle: true,
  load: loadAuthConfig,
  start: async (config, log) => {
    for (const warning of configWarnings(config)) log.warn(warning);
    const metrics = createMetrics({ defaultMetrics: true });
    const kube = config.endedSessions
      ? { kc: await loadKubeConnection(), namespace: await currentNamespace() }
      : undefined;
    const app = await buildApp(config, { log, metrics, kube });
    // Prometheus scrapes this port; the public one (AUTH_PORT) has no /metrics.
    const admin = createAdminServer({ registry: metrics.registry });
    const address = await app.listen(listenOptions("AUTH_PORT", config.port, config.host));
    const adminUrl = await admin.listen(config.adminPort, config.adminHost, "AUTH_ADMIN_PORT");
    log.info(
      {
        address,
        adminUrl,
        publicUrl: config.publicUrl.href,
        providers: [config.oidc && "oidc", config.github && "github"].filter(Boolean),
      },
      "auth service listening",
    );
    return { stop: () => app.close().then(() => admin.close()) };
  },
});
