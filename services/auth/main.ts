/**
 * Auth service entry point: `node services/auth/main.ts` (settings from the environment, see
 * `--help`). SIGTERM/SIGINT stop accepting connections and finish in-flight requests; a second
 * signal exits at once.
 */
import { runComponent } from "../../lib/service.ts";
import { buildApp } from "./app.ts";
import { configWarnings, loadAuthConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";

await runComponent({
  name: "auth",
  summary: "userland auth service: OpenID Connect and GitHub login, session cookies, forward-auth.",
  settings,
  kubernetes: false,
  load: loadAuthConfig,
  start: async (config, log) => {
    for (const warning of configWarnings(config)) log.warn(warning);
    const app = await buildApp(config, { log, metrics: createMetrics({ defaultMetrics: true }) });
    const address = await app.listen({ host: config.host, port: config.port });
    log.info(
      {
        address,
        publicUrl: config.publicUrl.href,
        providers: [config.oidc && "oidc", config.github && "github"].filter(Boolean),
      },
      "auth service listening",
    );
    return { stop: () => app.close() };
  },
});
