/**
 * A real Gateway API implementation on the real node: Traefik (built from its Go module on demand,
 * cluster/onDemandTools.ts) with its Kubernetes Gateway provider, run inside the node's
 * network namespace as a node-level ingress would run on a host network. It watches the API server
 * with the node's own add-ons kubeconfig (through the relay the node's components use), programs
 * the Gateways of its GatewayClass and the HTTPRoutes attached to them, and dials the routes'
 * backends (the pods behind their Services, from their EndpointSlices) from inside; the test
 * reaches its listener on 127.0.0.1 through a relay the caller owns.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeNamespace } from "../../cluster/node/namespace.ts";
import { onDemandBinDir } from "../../cluster/onDemandTools.ts";
import type { Relays } from "../../cluster/node/relay.ts";
import { ProcessGroup, waitFor } from "../../cluster/processes.ts";
import { k8s } from "../../lib/kube.ts";
import { eventually, testCluster } from "./cluster.ts";
import { realNode } from "./realNode.ts";

/** Traefik's GatewayClass controller, as its provider matches it. */
const TRAEFIK_CONTROLLER = "traefik.io/gateway-controller";

/**
 * The port of Traefik's entry point inside the node (on its loopback: nothing there listens on
 * it). Its Gateway provider gives a listener the entry point with the listener's port, so a
 * Gateway's HTTP listeners use this port.
 */
export const GATEWAY_PORT = 80;
/** Traefik's own entry point for /ping and its API, apart from the Gateway's. */
const TRAEFIK_PORT = 18080;

const gatewayApi = { group: "gateway.networking.k8s.io", version: "v1" };

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** A router of Traefik's runtime configuration, as its API lists it. */
interface TraefikRouter {
  name: string;
  rule: string;
  status: string;
}

export interface NodeGateway {
  /** The Gateway's listener on this machine's loopback: every host's port for the browser. */
  port: number;
  /** Traefik's log file (kept until stop). */
  log: string;
  /** The routers Traefik routes with now (its API): its configuration, not the routes' status. */
  routers(): Promise<TraefikRouter[]>;
  stop(): Promise<void>;
}

/** Creates (or keeps) the cluster-scoped GatewayClass `name` handled by Traefik. */
export async function createTraefikGatewayClass(name: string): Promise<void> {
  const custom = (await testCluster()).kc.makeApiClient(k8s.CustomObjectsApi);
  await custom
    .createClusterCustomObject({
      ...gatewayApi,
      plural: "gatewayclasses",
      body: {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "GatewayClass",
        metadata: { name },
        spec: { controllerName: TRAEFIK_CONTROLLER },
      },
    })
    .catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
}

/** Starts Traefik in the real node's namespace and exposes its Gateway entry point through `relays`. */
export async function startNodeGateway(relays: Relays): Promise<NodeGateway> {
  const node = await realNode();
  const dir = mkdtempSync(join(tmpdir(), "userland-traefik-"));
  const ns = NodeNamespace.attach(new ProcessGroup(join(dir, "logs"), () => undefined), node.namespacePid);
  await ns.startDaemon(
    "traefik",
    join(await onDemandBinDir(), "traefik"),
    [
      `--entryPoints.web.address=127.0.0.1:${GATEWAY_PORT}`,
      // Its own entry point ("traefik"): /ping, and the API whose routers say what Traefik routes now.
      `--entryPoints.traefik.address=127.0.0.1:${TRAEFIK_PORT}`,
      "--ping.entryPoint=traefik",
      "--api.insecure=true",
      "--api.dashboard=false",
      "--providers.kubernetesgateway=true",
      // The machine has no way out: no version check, no usage report.
      "--global.checkNewVersion=false",
      "--global.sendAnonymousUsage=false",
      "--log.level=INFO",
      // One JSON line per request on its output (the log file), which tests read for hosts and paths.
      "--accesslog=true",
      "--accesslog.format=json",
    ],
    // The provider reads KUBECONFIG (cluster-external client): the node's add-ons credentials, the
    // API server at the node's address, as kube-network-policies and the provisioner reach it.
    { ...process.env, KUBECONFIG: join(node.dir, "addons.kubeconfig") },
  );
  const log = join(dir, "logs", "traefik.log");
  const traefikPort = await relays.expose(`127.0.0.1:${TRAEFIK_PORT}`);
  await waitFor(
    "Traefik's /ping (in the node namespace)",
    async () => (await fetch(`http://127.0.0.1:${traefikPort}/ping`).catch(() => undefined))?.status === 200,
    60_000,
    { alive: () => ns.isRunning("traefik"), logs: log, intervalMs: 250 },
  );
  const port = await relays.expose(`127.0.0.1:${GATEWAY_PORT}`);
  return {
    port,
    log,
    routers: async () => {
      const response = await fetch(`http://127.0.0.1:${traefikPort}/api/http/routers?per_page=1000`);
      if (!response.ok) throw new Error(`Traefik's API: ${response.status} ${await response.text()}`);
      return (await response.json()) as TraefikRouter[];
    },
    async stop() {
      await ns.stopDaemon("traefik");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const conditionsText = (conditions: Condition[] | undefined) =>
  (conditions ?? []).map((c) => `${c.type}=${c.status} (${c.reason}: ${c.message})`).join("; ");

/** Waits until Traefik has programmed the Gateway `namespace`/`name`; returns its listeners' names. */
export async function waitForGatewayProgrammed(namespace: string, name: string, timeoutMs = 60_000) {
  const custom = (await testCluster()).kc.makeApiClient(k8s.CustomObjectsApi);
  let last = "";
  return eventually(
    `Gateway ${namespace}/${name} to be Programmed by Traefik`,
    async () => {
      const gateway = (await custom.getNamespacedCustomObject({
        ...gatewayApi,
        namespace,
        plural: "gateways",
        name,
      })) as {
        status?: { conditions?: Condition[]; listeners?: { name: string; conditions?: Condition[] }[] };
      };
      last = conditionsText(gateway.status?.conditions);
      const programmed = gateway.status?.conditions?.some(
        (c) => c.type === "Programmed" && c.status === "True",
      );
      return programmed ? (gateway.status?.listeners ?? []).map((l) => l.name) : undefined;
    },
    timeoutMs,
    500,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}: ${last}`, { cause: error });
  });
}

/**
 * Waits until every HTTPRoute in `namespace` is Accepted with its references resolved by Traefik
 * (its parent status names Traefik's controller); returns the routes' names.
 */
export async function waitForRoutesAccepted(namespace: string, timeoutMs = 60_000): Promise<string[]> {
  const custom = (await testCluster()).kc.makeApiClient(k8s.CustomObjectsApi);
  let last = "";
  return eventually(
    `every HTTPRoute in ${namespace} Accepted by Traefik`,
    async () => {
      const { items } = (await custom.listNamespacedCustomObject({
        ...gatewayApi,
        namespace,
        plural: "httproutes",
      })) as {
        items: {
          metadata: { name: string };
          status?: { parents?: { controllerName: string; conditions?: Condition[] }[] };
        }[];
      };
      const state = items.map((route) => {
        const parent = route.status?.parents?.find((p) => p.controllerName === TRAEFIK_CONTROLLER);
        const ok = ["Accepted", "ResolvedRefs"].every((type) =>
          parent?.conditions?.some((c) => c.type === type && c.status === "True"),
        );
        return { name: route.metadata.name, ok, text: conditionsText(parent?.conditions) };
      });
      last = state.map((s) => `${s.name}: ${s.text || "no status from Traefik"}`).join("\n");
      return items.length > 0 && state.every((s) => s.ok) ? state.map((s) => s.name) : undefined;
    },
    timeoutMs,
    500,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${last}`, { cause: error });
  });
}

/**
 * A hostname's part of a Traefik router's rule, as its Gateway provider writes it (buildHostRule in
 * pkg/provider/kubernetes/gateway/httproute.go): Host("h"), or for a wildcard a regular expression
 * with the first label free, both quoted as Go's %q does.
 */
function hostRule(hostname: string): string {
  if (!hostname.includes("*")) return `Host(${JSON.stringify(hostname)})`;
  const pattern = hostname.replaceAll(".", "\\.").replace("*\\.", "[a-z0-9-\\.]+\\.");
  return `HostRegexp(${JSON.stringify(`^${pattern}$`)})`;
}

/**
 * Waits until Traefik routes every HTTPRoute in `namespace` for each of its hostnames: an HTTPRoute
 * is Accepted in its status before Traefik applies the configuration (it throttles provider
 * changes), and a browser sent in between had auth.<domain> answered by the proxy's wildcard route
 * (a redirect loop). Returns the routes' names.
 */
export async function waitForRoutersLive(
  gateway: NodeGateway,
  namespace: string,
  timeoutMs = 60_000,
): Promise<string[]> {
  const custom = (await testCluster()).kc.makeApiClient(k8s.CustomObjectsApi);
  let last = "";
  return eventually(
    `Traefik routing every HTTPRoute of ${namespace} for each of its hostnames`,
    async () => {
      const { items } = (await custom.listNamespacedCustomObject({
        ...gatewayApi,
        namespace,
        plural: "httproutes",
      })) as { items: { metadata: { name: string }; spec: { hostnames?: string[] } }[] };
      const routers = await gateway.routers();
      const missing: string[] = [];
      for (const route of items) {
        // Traefik's router names: httproute-<namespace>-<route>-gw-<gateway>-…@kubernetesgateway.
        const prefix = `httproute-${namespace}-${route.metadata.name}-gw-`;
        const rules = routers
          .filter((r) => r.name.startsWith(prefix) && r.status === "enabled")
          .map((r) => r.rule)
          .join(" ");
        for (const hostname of route.spec.hostnames ?? [])
          if (!rules.includes(hostRule(hostname))) missing.push(`${route.metadata.name}: ${hostname}`);
      }
      last = missing.join(", ");
      return items.length > 0 && missing.length === 0 ? items.map((r) => r.metadata.name) : undefined;
    },
    timeoutMs,
    500,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; not routed yet: ${last}`, { cause: error });
  });
}
