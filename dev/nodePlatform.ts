/**
 * The platform as its Helm chart installs it on the real node (cluster/node), reached from this
 * machine: what the install test, the IDE benchmark and the local platform share.
 *
 * - A login provider that pods and this machine's browser reach at one URL: the local OpenID
 *   provider on 127.0.0.1, its issuer named by MACHINE_HOST, relayed into the node at NODE_IP.
 * - The values that fit the chart to this machine (the real node's scheduling, plain http, its
 *   addresses), beside the ones deploy/README.md has an admin set.
 * - deploy/'s Templates with their images built here (cluster/node/localTemplates.ts).
 * - Relays from 127.0.0.1 to the proxy and auth Services, and the host → port map a browser
 *   (--host-resolver-rules) or an HTTP client uses in place of DNS and an Ingress controller.
 */
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { repoRoot } from "../cluster/repoRoot.ts";
import { waitFor } from "../cluster/processes.ts";
import { MACHINE_HOST, NODE_IP, POD_CIDR, SERVICE_CIDR } from "../cluster/addresses.ts";
import { REAL_NODE_LABEL } from "../cluster/node/config.ts";
import { onRealNode } from "../cluster/node/addons.ts";
import { localTemplate } from "../cluster/node/localTemplates.ts";
import type { Relays } from "../cluster/node/relay.ts";
import type { Template } from "../api/v1alpha1/index.ts";
import { startDevIdentityProvider, type DevIdentityProvider } from "./identityProvider.ts";

/** The students' domain here: <template>.ide.test, auth.ide.test (no DNS: see PlatformHosts). */
export const NODE_PLATFORM_DOMAIN = "ide.test";
/**
 * deploy/'s Templates that run on the real node, by file: those whose images are built here
 * (cluster/node/localTemplates.ts). Not cloud9.yaml: LinuxServer.io's image has no local recipe and
 * comes only from a registry, which the node has no route to.
 */
export const LOCAL_TEMPLATE_FILES = ["jupyter.yaml", "phpmyadmin-mariadb.yaml", "code-server.yaml"];

/**
 * The local OpenID provider on 127.0.0.1:`port` (0: any free port), reachable from the node's pods
 * at the same issuer URL.
 */
export async function startLoginProvider(
  relays: Relays,
  opts: { redirectUris: string[]; port?: number },
): Promise<DevIdentityProvider> {
  const idp = await startDevIdentityProvider({
    port: opts.port ?? 0,
    issuerHost: MACHINE_HOST,
    redirectUris: opts.redirectUris,
  });
  const port = Number(new URL(idp.issuer).port);
  await relays.exposeInside(`${NODE_IP}:${port}`, port).catch(async (error: unknown) => {
    await idp.close();
    throw error;
  });
  return idp;
}

/** What deploy/README.md's `helm install` sets, with this machine's provider, domain and CIDRs. */
export function guideValues(idp: DevIdentityProvider, oidcSecret: string, domain = NODE_PLATFORM_DOMAIN) {
  return {
    baseDomain: domain,
    auth: {
      oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: { existingSecret: oidcSecret } },
      allowed: { domains: ["example.invalid"] },
    },
    networkPolicy: { podCIDRs: [POD_CIDR], serviceCIDRs: [SERVICE_CIDR] },
  };
}

export interface MachineValueOptions {
  /** The Template every new student gets at first sign-in (auth.provision). */
  provisionTemplate?: string;
  /** Shorter timers than the chart's, to see idle culling within a test. */
  fastTimers?: boolean;
}

/** The values that fit the chart to the real node and this machine. */
export function machineValues(opts: MachineValueOptions = {}) {
  return {
    publicScheme: "http",
    nodeSelector: REAL_NODE_LABEL,
    tolerations: onRealNode.tolerations,
    // This cluster's ranges (the chart's defaults are another cluster's: issue 41 item 3), and the
    // node's own address, where the API server and the provider's relays are.
    networkPolicy: {
      podCIDRs: [POD_CIDR],
      serviceCIDRs: [SERVICE_CIDR],
      extraDeniedCIDRs: [`${NODE_IP}/32`],
    },
    auth: {
      // The local OpenID provider speaks plain http.
      extraEnv: [{ name: "AUTH_OIDC_ALLOW_HTTP", value: "true" }],
      ...(opts.provisionTemplate ? { provision: { enabled: true, template: opts.provisionTemplate } } : {}),
    },
    proxy: { startOnAccess: true, ...(opts.fastTimers ? { activityFlush: "5s" } : {}) },
    ...(opts.fastTimers ? { operator: { cullInterval: "5s" } } : {}),
  };
}

/** deploy/'s Templates with locally built images, ready to create (`edit` may change each). */
export async function localTemplates(
  node: { ctr: string; socket: string },
  edit: (template: Template) => void = () => undefined,
): Promise<Template[]> {
  const templates: Template[] = [];
  for (const file of LOCAL_TEMPLATE_FILES) {
    const template = await localTemplate(file, node);
    edit(template);
    templates.push(template);
  }
  return templates;
}

/** Where this machine reaches the platform: 127.0.0.1 ports in place of DNS and an Ingress. */
export interface PlatformHosts {
  domain: string;
  proxyPort: number;
  authPort: number;
  /** The base domain's port: the proxy, or with `console` the Ingress's path routing (ingressStandIn). */
  basePort: number;
  /** The 127.0.0.1 port for a URL's host (the provider keeps its own port), or undefined. */
  portFor(url: URL): number | undefined;
  /** chromium's --host-resolver-rules for the same map; nothing else resolves. */
  resolverRules: string;
}

/** "clusterIP:80" of a platform component's Service (the port students' traffic uses). */
export async function serviceAddress(core: CoreV1Api, namespace: string, component: string): Promise<string> {
  const services = await core.listNamespacedService({
    namespace,
    labelSelector: `app.kubernetes.io/component=${component}`,
  });
  const service = services.items.find((s) => s.spec?.ports?.some((p) => p.port === 80));
  if (!service?.spec?.clusterIP) throw new Error(`no ${component} Service with port 80 in ${namespace}`);
  return `${service.spec.clusterIP}:80`;
}

/**
 * What the chart's Ingress does on the base domain (charts/userland/templates/ingress.yaml): /console
 * and /api/v1 go to the user-manager, everything else to the proxy. A plain HTTP forwarder on
 * 127.0.0.1 (no upgrades: the base domain serves pages and JSON only; Templates' hosts, where
 * WebSockets are, keep their direct relay to the proxy). Resolves with its port and a close().
 */
export async function ingressStandIn(
  proxyPort: number,
  userManagerPort: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    const toUserManager = /^\/(console|api\/v1)(\/|\?|$)/.test(path);
    const upstream = request(
      {
        host: "127.0.0.1",
        port: toUserManager ? userManagerPort : proxyPort,
        method: req.method,
        path,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`ingress stand-in: ${error.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Relays from 127.0.0.1 to the proxy's and the auth service's Services; with `console`, also to
 * the user-manager's, behind ingressStandIn on the base domain (the teachers' console at
 * http://<domain>/console/, as the chart's Ingress serves it). `close` stops the stand-in (the
 * relays close with `relays`).
 */
export async function exposePlatform(
  relays: Relays,
  core: CoreV1Api,
  namespace: string,
  domain = NODE_PLATFORM_DOMAIN,
  opts: { console?: boolean } = {},
): Promise<PlatformHosts & { close(): Promise<void> }> {
  const proxyPort = await relays.expose(await serviceAddress(core, namespace, "proxy"));
  const authPort = await relays.expose(await serviceAddress(core, namespace, "auth"));
  const ingress = opts.console
    ? await ingressStandIn(
        proxyPort,
        await relays.expose(await serviceAddress(core, namespace, "user-manager")),
      )
    : undefined;
  const basePort = ingress?.port ?? proxyPort;
  return {
    domain,
    proxyPort,
    authPort,
    basePort,
    portFor(url) {
      if (url.hostname === `auth.${domain}`) return authPort;
      if (url.hostname === domain) return basePort;
      if (url.hostname.endsWith(`.${domain}`)) return proxyPort;
      if (url.hostname === MACHINE_HOST) return Number(url.port);
      return undefined;
    },
    // First match wins: auth, then every Template host, then the base domain, then the provider.
    resolverRules:
      `MAP auth.${domain} 127.0.0.1:${authPort}, MAP *.${domain} 127.0.0.1:${proxyPort}, ` +
      `MAP ${domain} 127.0.0.1:${basePort}, MAP ${MACHINE_HOST} 127.0.0.1, MAP * ~NOTFOUND`,
    close: async () => ingress?.close(),
  };
}

/**
 * `helm install` of charts/userland, the values files in order (later ones win); `dir` keeps them
 * and helm's own cache and configuration.
 */
export async function helmInstall(opts: {
  binDir: string;
  kubeconfig: string;
  dir: string;
  namespace: string;
  release?: string;
  values: Record<string, unknown>[];
}): Promise<void> {
  mkdirSync(opts.dir, { recursive: true });
  const files = opts.values.map((values, i) => {
    const file = join(opts.dir, `values-${i}.json`);
    writeFileSync(file, JSON.stringify(values));
    return file;
  });
  await promisify(execFile)(
    join(opts.binDir, "helm"),
    [
      "install",
      opts.release ?? "userland",
      join(repoRoot, "charts", "userland"),
      "--namespace",
      opts.namespace,
      ...files.flatMap((f) => ["--values", f]),
    ],
    {
      env: {
        PATH: process.env.PATH,
        // helm's Kubernetes client caches discovery under $HOME/.kube: keep it out of the repository.
        HOME: opts.dir,
        KUBECONFIG: opts.kubeconfig,
        HELM_CACHE_HOME: join(opts.dir, "helm", "cache"),
        HELM_CONFIG_HOME: join(opts.dir, "helm", "config"),
        HELM_DATA_HOME: join(opts.dir, "helm", "data"),
      },
    },
  ).catch((error: unknown) => {
    throw new Error(`helm install: ${(error as { stderr?: string }).stderr ?? String(error)}`);
  });
}

/** Waits until the chart's four Deployments have every replica Ready. */
export function waitForPlatformReady(apps: AppsV1Api, namespace: string, timeoutMs = 300_000): Promise<void> {
  return waitFor(
    `every component in ${namespace} to be Ready`,
    async () => {
      const deployments = (await apps.listNamespacedDeployment({ namespace })).items;
      return (
        deployments.length === 4 &&
        deployments.every((d) => (d.status?.readyReplicas ?? 0) >= (d.spec?.replicas ?? 1))
      );
    },
    timeoutMs,
  );
}
