/**
 * User-management service entry point: `node services/user-manager/main.ts` (settings from the
 * environment, see `--help`). /metrics and /healthz are on the admin listener
 * (USER_MANAGER_ADMIN_PORT), never on the API's port. SIGTERM/SIGINT stop accepting connections and
 * finish requests in flight (a roster import runs to its end); a second signal exits at once.
 */
import { createAdminServer } from "../../lib/adminServer.ts";
import { ConfigError } from "../../lib/config.ts";
import { currentNamespace, loadKubeConnection } from "../../lib/kubeConnection.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import { ServedNamespaces } from "../../lib/namespaces.ts";
import type { Logger } from "../../lib/logger.ts";
import { listenOptions } from "../../lib/listen.ts";
import { runComponent } from "../../lib/service.ts";
import { buildApp } from "./app.ts";
import { loadUserManagerConfig, settings, type UserManagerConfig } from "./config.ts";
import { createMetrics } from "./metrics.ts";
import { describePermission, missingPermissions } from "./permissions.ts";
import { moveLegacySessionMarks } from "./legacySessionMarks.ts";
import { UserlandStore } from "./store.ts";

async function kubeConnection() {
  try {
    return await loadKubeConnection();
  } catch (error) {
    throw new ConfigError("user-manager", [
      `no Kubernetes credentials: set KUBECONFIG, or run in a pod with a ServiceAccount (${(error as Error).message})`,
    ]);
  }
}

async function start(config: UserManagerConfig, log: Logger) {
  const rest = new KubeRest(await kubeConnection(), "userland-user-manager");
  const metrics = createMetrics({ defaultMetrics: true });
  rest.onRequest = (verb, code) => metrics.kubeRequests.inc({ verb, code: String(code) });
  const namespace = config.namespace || (await currentNamespace());
  const app = await buildApp({ config, rest, namespace, log, metrics });
  // Prometheus scrapes this port; the API's port, routed from the internet, has no /metrics.
  const admin = createAdminServer({ registry: metrics.registry });

  const address = await app.listen(listenOptions("USER_MANAGER_PORT", config.port, config.host));
  const adminUrl = await admin.listen(config.adminPort, config.adminHost, "USER_MANAGER_ADMIN_PORT");
  log.info({ address, adminUrl, namespace }, "user-manager listening");

  // Not fatal: the Role may be applied just after the Deployment; /readyz and the API report it too.
  // Each served namespace needs the Role ("" asks about every namespace at once, for "*").
  const served = new ServedNamespaces(config.watchNamespaces, namespace);
  Promise.all([
    ...(served.all ? [""] : served.names).map(async (ns) =>
      (await missingPermissions(rest, ns)).map((p) => describePermission(p, ns)),
    ),
    missingPermissions(rest, namespace, "own").then((own) =>
      own.map((p) => describePermission(p, namespace)),
    ),
  ]).then(
    (perNamespace) => {
      const missing = [...new Set(perNamespace.flat())];
      for (const p of missing) log.warn(`the ServiceAccount lacks a permission it needs: ${p}`);
      if (missing.length === 0) log.info("the ServiceAccount has every permission it needs");
    },
    (error: unknown) =>
      log.warn({ err: (error as Error).message }, "could not check the ServiceAccount's permissions"),
  );
  // Marks an older version wrote on Userlands go into the session records (issue 41 item 4); a
  // failure is logged and tried again at the next start (the marks stay where they were).
  moveLegacySessionMarks(new UserlandStore(rest, served, log), rest, namespace, Date.now).then(
    (moved) => {
      if (moved > 0) log.info({ moved }, "moved ended-session marks from Userlands into session records");
    },
    (error: unknown) =>
      log.warn({ err: (error as Error).message }, "could not move ended-session marks from Userlands"),
  );
  return {
    stopping: "shutting down: finishing requests in flight",
    stop: async () => {
      await app.close();
      await admin.close();
      await rest.close();
    },
  };
}

await runComponent({
  name: "user-manager",
  summary:
    "userland user-manager: REST API to create, list, start, stop and delete Userlands and import class rosters.\n" +
    "Callers authenticate with Kubernetes bearer tokens; Kubernetes RBAC on userlands.userland.dev decides what they may do.",
  settings,
  kubernetes: true,
  compactHeapWhenIdle: true,
  load: loadUserManagerConfig,
  start,
});
