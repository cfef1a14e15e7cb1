/**
 * Auth service entry point: `node services/auth/main.ts` (settings from the environment, see
 * `--help`). SIGTERM/SIGINT stop accepting connections and finish in-flight requests; a second
 * signal exits at once.
 */
import { ConfigError, describeSettings } from "../../lib/config.ts";
import { createLogger } from "../../lib/logger.ts";
import { buildApp } from "./app.ts";
import { configWarnings, loadAuthConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(
    "userland auth service: OpenID Connect and GitHub login, session cookies, forward-auth.\n\n" +
      `Settings (environment variables):\n${describeSettings(settings)}\n  ${"LOG_LEVEL".padEnd(34)} Log level (default: "info")\n`,
  );
  process.exit(0);
}

const log = createLogger("auth");

try {
  const config = loadAuthConfig();
  for (const warning of configWarnings(config)) log.warn(warning);
  const app = await buildApp(config, { log, metrics: createMetrics({ defaultMetrics: true }) });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "shutting down");
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);

  const address = await app.listen({ host: config.host, port: config.port });
  log.info(
    {
      address,
      publicUrl: config.publicUrl.href,
      providers: [config.oidc && "oidc", config.github && "github"].filter(Boolean),
    },
    "auth service listening",
  );
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n\nRun with --help to list every setting.\n`);
    process.exit(2);
  }
  log.fatal({ err: error }, "auth service failed to start");
  process.exit(1);
}
