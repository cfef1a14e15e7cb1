/**
 * `npm start` with real IDEs: a control plane and the real node (cluster/), the platform installed
 * with its Helm chart from the image built from the Dockerfile, deploy/'s Templates with locally
 * built images, and every way in on 127.0.0.1, as the kwok demo has them:
 *
 *   <base>     the proxy: VS Code (code-server), which every new student gets at first sign-in
 *   <base+1>   the auth service        <base+2>  the user-manager API
 *   <base+3>   the local OpenID provider (any name signs in; never for production)
 *   <base+4>   the proxy: Jupyter      <base+5>  the proxy: MariaDB + phpMyAdmin
 *
 * "ada" is given Jupyter and "grace" phpMyAdmin, as a teacher would; anyone else gets VS Code at
 * first sign-in (auto-provisioning gives the default only to a student with no environment yet).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { userlandNameFor } from "../api/naming.ts";
import { buildPlatformImage, importImage, repositoryAndTag } from "../cluster/node/images.ts";
import { Relays } from "../cluster/node/relay.ts";
import { startRealCluster, type RealCluster } from "../cluster/realCluster.ts";
import { k8s } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { appointConsoleTeacher } from "./consoleTeacher.ts";
import type { DevIdentityProvider } from "./identityProvider.ts";
import {
  helmInstall,
  localTemplates,
  machineValues,
  serviceAddress,
  startLoginProvider,
  waitForPlatformReady,
} from "./nodePlatform.ts";
import { templatesPath, userlandsPath } from "../api/v1alpha1/index.ts";

export const REAL_PLATFORM_NAMESPACE = "ide";

export interface RealPlatform {
  /** Open this: VS Code for any name. */
  url: string;
  /** Template name → its URL. */
  templates: Record<string, string>;
  /** Pre-assigned students: user → Template. */
  assigned: Record<string, string>;
  authUrl: string;
  userManagerUrl: string;
  /** The teachers' console (sign in as CONSOLE_TEACHER). */
  consoleUrl: string;
  identityProviderUrl: string;
  namespace: string;
  kubeconfig: string;
  binDir: string;
  stop(): Promise<void>;
}

/** The Template every new student gets at first sign-in (provisioning), served at the base port. */
export const DEFAULT_TEMPLATE = "code-server";
/** Where each Template is served, as an offset from the base port (the default at the base itself). */
const TEMPLATE_PORT_OFFSETS: Record<string, number> = { [DEFAULT_TEMPLATE]: 0, jupyter: 4, phpmyadmin: 5 };
const ASSIGNED: Record<string, string> = { ada: "jupyter", grace: "phpmyadmin" };

export async function startRealPlatform(opts: {
  dir: string;
  base: number;
  log: (line: string) => void;
}): Promise<RealPlatform> {
  const { base, log } = opts;
  const cluster: RealCluster = await startRealCluster(opts.dir, log);
  const relays = Relays.into(cluster.node.namespacePid);
  let idp: DevIdentityProvider | undefined;
  // Also after a failed start: npm start then runs the demo on the same ports.
  const stop = async () => {
    await idp?.close();
    await relays.close().catch(() => undefined);
    await cluster.stop();
  };
  try {
    const { kc, node, binDir } = cluster;
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const rest = new KubeRest(kc);
    const containerd = { ctr: join(binDir, "ctr"), socket: node.containerdSocket };
    const local = (port: number) => `http://127.0.0.1:${port}`;
    const templatePorts = Object.entries(TEMPLATE_PORT_OFFSETS).map(([t, offset]): [string, number] => [
      t,
      base + offset,
    ]);

    log("[platform] building (or finding cached) the platform image and the IDE images…");
    const image = await buildPlatformImage();
    await importImage(containerd.ctr, containerd.socket, image);
    const templates = await localTemplates(containerd);

    idp = await startLoginProvider(relays, {
      port: base + 3,
      redirectUris: [`${local(base + 1)}/callback/oidc`],
    });
    const namespace = REAL_PLATFORM_NAMESPACE;
    await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
    await core
      .createNamespacedSecret({
        namespace,
        body: { metadata: { name: "userland-oidc" }, stringData: { "client-secret": idp.clientSecret } },
      })
      .catch(() => undefined);
    log("[platform] helm install…");
    mkdirSync(opts.dir, { recursive: true });
    await helmInstall({
      binDir,
      kubeconfig: cluster.controlPlane.kubeconfigPath,
      dir: join(opts.dir, "helm"),
      namespace,
      values: [
        machineValues({ provisionTemplate: DEFAULT_TEMPLATE }),
        {
          image: repositoryAndTag(image),
          // Every host is 127.0.0.1 with a port of its own (cookies ignore ports): no Ingress.
          baseDomain: "127.0.0.1",
          ingress: { enabled: false },
          auth: {
            publicUrl: local(base + 1),
            extraRedirectHosts: [
              ...templatePorts.map(([, port]) => `127.0.0.1:${port}`),
              `127.0.0.1:${base + 2}`,
            ],
            defaultRedirect: `${local(base)}/_userland/home`,
            // The proxy's hop at a host with a port of its own (the chart's default has none).
            clearSiteUrl: `${local(base)}/_userland/signed-out`,
            oidc: {
              issuer: idp.issuer,
              clientId: idp.clientId,
              clientSecret: { existingSecret: "userland-oidc" },
            },
            provision: { enabled: true, template: DEFAULT_TEMPLATE },
          },
          // The console's origin reaches only the user-manager here: Open goes to the proxy's port.
          userManager: {
            console: { publicUrl: `${local(base + 2)}/console/`, visitUrl: `${local(base)}/_userland/visit` },
          },
          proxy: {
            defaultTemplate: DEFAULT_TEMPLATE,
            hostTemplates: templatePorts.map(([t, port]) => `127.0.0.1:${port}=${t}`),
            // A visit at <userland>--<template>.localhost:<port>, apart from 127.0.0.1's pages.
            visitDomain: "localhost",
          },
        },
        // One replica each is plenty on one machine.
        {
          operator: { replicas: 1 },
          userManager: { replicas: 1 },
          auth: { replicas: 1 },
          proxy: { replicas: 1 },
        },
      ],
    });
    await waitForPlatformReady(apps, namespace);
    // The console's teacher, with every teacher's role the guides describe.
    await appointConsoleTeacher(rest, namespace);
    for (const template of templates) {
      await rest.create(templatesPath(namespace), template);
    }
    for (const [user, template] of Object.entries(ASSIGNED)) {
      await rest.create(userlandsPath(namespace), {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Userland",
        metadata: { name: userlandNameFor(user, template) },
        spec: { user, templateName: template, enabled: false },
      });
    }

    const proxy = await serviceAddress(core, namespace, "proxy");
    for (const [, port] of templatePorts) await relays.expose(proxy, port);
    await relays.expose(await serviceAddress(core, namespace, "auth"), base + 1);
    await relays.expose(await serviceAddress(core, namespace, "user-manager"), base + 2);

    return {
      url: `${local(base)}/`,
      templates: Object.fromEntries(templatePorts.map(([t, port]) => [t, `${local(port)}/`])),
      assigned: ASSIGNED,
      authUrl: local(base + 1),
      userManagerUrl: local(base + 2),
      consoleUrl: `${local(base + 2)}/console/`,
      identityProviderUrl: idp.issuer,
      namespace,
      kubeconfig: cluster.controlPlane.kubeconfigPath,
      binDir,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
