/**
 * User-management service entry point: `node services/user-manager/main.ts` (settings from the
 * environment, see `--help`). SIGTERM/SIGINT stop accepting connections and finish requests in
 * flight (a roster import runs to its end); a second signal exits at once.
 */
import { ConfigError, describeSettings } from "../../lib/config.ts";
import { currentNamespace, loadKubeConfig } from "../../lib/kube.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import { createLogger } from "../../lib/logger.ts";
import { buildApp } from "./app.ts";
import { loadUserManagerConfig, settings } from "./config.ts";
import { createMetrics } from "./metrics.ts";
import { describePermission, missingPermissions } from "./permissions.ts";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(
    "userland user-manager: REST API to create, list, start, stop and delete Userlands and import class rosters.\n" +
      "Callers authenticate with Kubernetes bearer tokens; Kubernetes RBAC on userlands.userland.dev decides what they may do.\n\n" +
      `Settings (environment variables):\n${describeSettings(settings)}\n` +
      `  ${"LOG_LEVEL".padEnd(34)} Log level: debug, info, warn, error (default: "info")\n` +
      `  ${"KUBECONFIG".padEnd(34)} kubeconfig file (default: the in-cluster ServiceAccount)\n`,
  );
  process.exit(0);
}

const log = createLogger("user-manager");

try {
  const config = loadUserManagerConfig();
  let kc;
  try {
    // Outside a pod, client-node's in-cluster loader "succeeds" with an unusable server address.
    if (!process.env.KUBECONFIG && !process.env.KUBERNETES_SERVICE_HOST) throw new Error("neither is set");
    kc = loadKubeConfig();
  } catch (error) {
    throw new ConfigError("user-manager", [
      `no Kubernetes credentials: set KUBECONFIG, or run in a pod with a ServiceAccount (${(error as Error).message})`,
    ]);
  }
  const rest = new KubeRest(kc, "userland-user-manager");
  const metrics = createMetrics({ defaultMetrics: true });
  rest.onRequest = (verb, code) => metrics.kubeRequests.inc({ verb, code: String(code) });
  const namespace = config.namespace || (await currentNamespace());
  const app = await buildApp({ config, rest, namespace, log, metrics });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "shutting down: finishing requests in flight");
    app
      .close()
      .then(() => rest.close())
      .then(
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

  const address = await app.listen({ host: config.host, port: config.port });
  log.info({ address, namespace }, "user-manager listening");

  // Not fatal: the Role may be applied just after the Deployment; /readyz and the API report it too.
  missingPermissions(rest, namespace).then(
    (missing) => {
      for (const p of missing)
        log.warn(`the ServiceAccount lacks a permission it needs: ${describePermission(p, namespace)}`);
      if (missing.length === 0) log.info("the ServiceAccount has every permission it needs");
    },
    (error: unknown) =>
      log.warn({ err: (error as Error).message }, "could not check the ServiceAccount's permissions"),
  );
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n\nRun with --help to list every setting.\n`);
    process.exit(2);
  }
  log.fatal({ err: error }, "user-manager failed to start");
  process.exit(1);
}
