/**
 * Proxy entry point: `node services/proxy/main.ts` (settings from the environment, see `--help`).
 * SIGTERM/SIGINT: /readyz turns 503, the listener closes, WebSockets are closed (editors reconnect
 * to another replica), in-flight requests get PROXY_SHUTDOWN_GRACE to finish, pending activity is
 * written; a second signal exits at once.
 */
import { ConfigError, describeSettings } from "../../lib/config.ts";
import { currentNamespace, loadKubeConfig } from "../../lib/kube.ts";
import { createLogger } from "../../lib/logger.ts";
import { buildProxyApp } from "./app.ts";
import { loadProxyConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(
    "userland proxy: sends each student's HTTP and WebSocket traffic to their own environment.\n\n" +
      `Settings (environment variables):\n${describeSettings(settings)}\n` +
      `  ${"LOG_LEVEL".padEnd(34)} Log level (default: "info")\n` +
      `  ${"KUBECONFIG".padEnd(34)} kubeconfig file (default: the in-cluster ServiceAccount)\n`,
  );
  process.exit(0);
}

const log = createLogger("proxy");

try {
  const config = loadProxyConfig();
  const namespace = config.namespace || (await currentNamespace());
  const app = await buildProxyApp(config, {
    kc: loadKubeConfig(),
    log,
    namespace,
    metrics: createMetrics({ defaultMetrics: true }),
  });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down: draining connections");
    app.close(config.shutdownGraceMs).then(
      () => {
        log.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);

  const { url, adminUrl } = await app.proxy.listen({
    host: config.host,
    port: config.port,
    adminHost: config.adminHost,
    adminPort: config.adminPort,
  });
  log.info({ url, adminUrl, namespace, resolver: app.resolver.kind }, "proxy listening");
  app.synced.catch((error: unknown) => log.error({ err: error }, "caches did not sync"));
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n\nRun with --help to list every setting.\n`);
    process.exit(2);
  }
  log.fatal({ err: error }, "proxy failed to start");
  process.exit(1);
}
