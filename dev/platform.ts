/**
 * The whole platform on one machine, for `npm start` and the end-to-end tests: a real control
 * plane, the CRDs, example Templates, the operator, user-manager, auth service and proxy (each its
 * real main.ts, as a child process under its own ServiceAccount with exactly the Helm chart's
 * rights, rendered by helm from the chart), a local OpenID provider and demo
 * environments that stand in for IDE containers. Everything listens on 127.0.0.1; the proxy
 * reaches demo environments through its upstream override file (the documented resolver seam).
 */
import { appointConsoleTeacher } from "./consoleTeacher.ts";
import { spawn, type ChildProcess } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { childNames } from "../api/naming.ts";
import type { Userland } from "../api/v1alpha1/index.ts";
import { Informer } from "../lib/informer.ts";
import { paths } from "../api/kubePaths.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { generateSigningKey, parseSigningKeys, publicJwks } from "../lib/session.ts";
import {
  ControlPlane,
  diesWithParent,
  kubeconfigYaml,
  type ControlPlaneInfo,
} from "../cluster/controlPlane.ts";
import {
  createChartObjects,
  renderChartRbac,
  serviceAccountOf,
  type ChartObject,
  type Component,
} from "../cluster/chartRbac.ts";
import { installCustomResourceDefinitions } from "../cluster/customResourceDefinitions.ts";
import { heldPort, listeningSocket, portOf, socketsFor, type HeldPort } from "../cluster/ports.ts";
import { startDemoEnvironment, type DemoEnvironment } from "./demoEnvironment.ts";
import { startDevIdentityProvider, type DevIdentityProvider } from "./identityProvider.ts";
import { startDevIdentityProviderProcess } from "./identityProviderProcess.ts";
import { templatesPath, userlandsPath } from "../api/v1alpha1/index.ts";
import { repoRoot } from "../cluster/repoRoot.ts";

export const NAMESPACE = "userland";
export const DEMO_TEMPLATE = "demo";

export interface PlatformPorts {
  proxy: number;
  auth: number;
  userManager: number;
  identityProvider: number;
}

export interface PlatformOptions {
  /** Working directory (certificates, keys, logs). */
  dir: string;
  /** Fixed ports for `npm start`; any free port when omitted (tests). */
  ports?: Partial<PlatformPorts>;
  log?: (line: string) => void;
  /**
   * More Templates each at a port of its own on 127.0.0.1, besides the demo at the proxy's port (as
   * on the real platform: cookies ignore ports): the port is relayed to the proxy, which serves the
   * Template there (PROXY_HOST_TEMPLATES).
   */
  templatePorts?: string[];
  /** Whether a student with no environment gets one of the demo at sign-in (default true). */
  provision?: boolean;
  /**
   * Tests of a start's last step: each demo environment's address is published at once, but it
   * listens only this long after its Userland is Ready, as a pod whose Service does not route yet
   * (connections are refused until then). Unset: it listens as soon as it is published.
   */
  demoListensAfterReadyMs?: number;
  /** PROXY_VISIT_QUIET (default 5m): tests of a teacher's visit end it sooner. */
  visitQuiet?: string;
  /**
   * The chart's watchNamespaces (USERLAND_WATCH_NAMESPACES of the operator, user-manager and
   * proxy, and their rights rendered for it): e.g. ["*"]. Unset: the platform namespace alone.
   */
  watchNamespaces?: string[];
  /** More settings for one component (benchmarks: e.g. the operator's resync period). */
  componentEnv?: Partial<Record<Component, Record<string, string>>>;
  /**
   * Node options before a component's script (benchmarks: e.g. a V8 flag), read at each start, so
   * a restart takes what the caller put here since.
   */
  nodeArgs?: Partial<Record<Component, string[]>>;
  /**
   * The local identity provider in a process of its own (dev/identityProviderProcess.ts), not in
   * this one: benchmarks whose own process is busy with simulated students.
   */
  identityProviderProcess?: boolean;
}

/** A credentials file the platform wrote for a component. */
export interface Credential {
  component: Component;
  serviceAccount: string;
  /** A kubeconfig (the component's Kubernetes client) or a bare token (its calls to the user-manager). */
  kind: "kubeconfig" | "token";
  file: string;
}

export interface Platform {
  url: string;
  authUrl: string;
  userManagerUrl: string;
  /** The teachers' console (sign in as CONSOLE_TEACHER). */
  consoleUrl: string;
  identityProviderUrl: string;
  /** Where each of `templatePorts` is served. */
  templateUrls: Record<string, string>;
  namespace: string;
  controlPlane: ControlPlaneInfo;
  /** An admin (cluster-admin) client. */
  rest: KubeRest;
  /** Mints a token for a ServiceAccount in the platform namespace (for API callers such as a teacher). */
  token(serviceAccount: string): Promise<string>;
  /** Each component's ServiceAccount, as the chart names it; its credentials are that account's. */
  serviceAccounts: Record<Component, string>;
  /** The credentials each component was given (all of them). */
  credentials: Credential[];
  /** A ServiceAccount bound to the chart's teacher ClusterRole. */
  teacher: string;
  logsDir: string;
  /** Each component's process id now (a restart changes it). */
  pids(): Record<Component, number>;
  /**
   * Stops a component (SIGTERM, waits for its exit), runs `whileStopped` if given, and starts it
   * again with the same settings on the same port; resolves once it is spawned (its log starts anew).
   */
  restart(component: Component, whileStopped?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** The local platform's Template: a demo environment on port 8080. */
const demoTemplate = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name: DEMO_TEMPLATE },
  spec: {
    displayName: "Demo",
    description:
      "Stands in for an IDE on the local platform: shows whose environment it is and echoes WebSocket messages.",
    template: {
      spec: {
        containers: [
          {
            name: "demo",
            image: "registry.invalid/userland-demo:1",
            ports: [{ name: "http", containerPort: 8080 }],
          },
        ],
      },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    idleTimeout: "2h",
  },
};

/** The chart's release name here, so objects get the names a default `helm install userland` gives them. */
const RELEASE = "userland";
/** The chart's ClusterRole for teachers (rbac.teacherRoleName), and the local teacher's ServiceAccount. */
const TEACHER = "userland-teacher";
export { CONSOLE_TEACHER } from "./consoleTeacher.ts";

/**
 * The chart values that decide rights: the auth service provisions on first login (its one right,
 * create userlands); the rest are the chart's defaults.
 */
const chartValues = {
  auth: { provision: { enabled: true, template: DEMO_TEMPLATE } },
  rbac: { teacherRoleName: TEACHER },
};

/** The chart's rights as the local platform creates them (`binDir`: where helm is). */
export function platformRights(binDir: string, watchNamespaces?: string[]): Promise<ChartObject[]> {
  return renderChartRbac({
    helm: join(binDir, "helm"),
    namespace: NAMESPACE,
    release: RELEASE,
    values: watchNamespaces ? { ...chartValues, watchNamespaces } : chartValues,
  });
}

export async function startPlatform(opts: PlatformOptions): Promise<Platform> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`[platform] ${line}\n`));
  const dir = opts.dir;
  const logsDir = join(dir, "logs");
  mkdirSync(logsDir, { recursive: true });
  const children: { name: string; child: ChildProcess }[] = [];
  /** How each component was started, so restart() starts it the same way. */
  const started = new Map<
    string,
    { script: string; env: Record<string, string>; ports: Record<string, number> }
  >();
  const demos = new Map<string, DemoEnvironment>();
  /** Each demo's address by Service name, published to the proxy (with demoListensAfterReadyMs, before it listens). */
  const addresses = new Map<string, string>();
  const heldPorts: HeldPort[] = [];
  /** Demo starts not finished yet (delayed by demoListensAfterReadyMs, or listening): stop waits for them. */
  const delayedStarts = new Set<NodeJS.Timeout>();
  const pendingStarts = new Set<Promise<void>>();
  let stopping = false;
  let idp: DevIdentityProvider | undefined;
  let informer: Informer<Userland> | undefined;
  const relays: { close(): Promise<void> }[] = [];
  /** Sockets bound for a component that has not started (closed once passed on). */
  const unpassed: Server[] = [];

  const controlPlane = new ControlPlane({
    dir: join(dir, "cluster"),
    log: (line) => log(`control plane: ${line}`),
  });
  const stop = async () => {
    // A demo whose delayed start fired after this would listen on with nothing to close it, and
    // keep the process (a test file's) alive.
    stopping = true;
    for (const timer of delayedStarts) clearTimeout(timer);
    await informer?.stop();
    for (const { child } of children.reverse()) child.kill("SIGTERM");
    await Promise.all(
      children.map(({ child }) =>
        child.exitCode === null ? new Promise((r) => child.once("exit", r)) : Promise.resolve(),
      ),
    );
    await Promise.allSettled(pendingStarts);
    for (const demo of demos.values()) await demo.close();
    for (const held of heldPorts) held.release();
    for (const relay of relays) await relay.close();
    for (const server of unpassed) if (server.listening) server.close();
    await idp?.close();
    await rest.close();
    await controlPlane.stop({ keepFiles: true });
  };

  const info = await controlPlane.start();
  const ca = readFileSync(info.caFile);
  const adminKc = await import("../lib/kube.ts").then(({ k8s }) => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(info.kubeconfig);
    return kc;
  });
  const rest = new KubeRest(adminKc, "userland-platform");
  try {
    await installCustomResourceDefinitions(rest);
    await rest.create("/api/v1/namespaces", { metadata: { name: NAMESPACE } });
    // Exactly the chart's rights: its ServiceAccounts, Roles, ClusterRoles and admission policy.
    const rights = await platformRights(info.binDir, opts.watchNamespaces);
    await createChartObjects(rest, NAMESPACE, rights);
    const serviceAccounts: Record<Component, string> = {
      operator: serviceAccountOf(rights, "operator"),
      "user-manager": serviceAccountOf(rights, "user-manager"),
      proxy: serviceAccountOf(rights, "proxy"),
      auth: serviceAccountOf(rights, "auth"),
    };
    // A teacher for kubectl, bound as deploy/README.md tells admins to: a RoleBinding to the chart's ClusterRole.
    await rest.create(paths.namespaced("", "v1", "serviceaccounts", NAMESPACE), {
      metadata: { name: TEACHER },
    });
    await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", NAMESPACE), {
      metadata: { name: TEACHER },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: TEACHER },
      subjects: [{ kind: "ServiceAccount", name: TEACHER, namespace: NAMESPACE }],
    });
    // The console's teacher, with every teacher's role the guides describe.
    await appointConsoleTeacher(rest, NAMESPACE);
    await rest.create(templatesPath(NAMESPACE), demoTemplate);
    for (const template of exampleTemplates()) {
      await rest
        .create(templatesPath(NAMESPACE), template)
        .catch((error: unknown) => log(`example Template not applied: ${(error as Error).message}`));
    }

    const token = async (serviceAccount: string): Promise<string> => {
      const request = await rest.create<{ status: { token: string } }>(
        paths.namespaced("", "v1", "serviceaccounts", NAMESPACE, serviceAccount, "token"),
        {
          spec: { audiences: [], expirationSeconds: 24 * 3600 },
        },
      );
      return request.status.token;
    };
    // Each component's credentials are its own ServiceAccount's, as the chart's pods get them.
    const credentials: Credential[] = [];
    const kubeconfigFor = async (component: Component): Promise<string> => {
      const serviceAccount = serviceAccounts[component];
      const file = join(dir, `${serviceAccount}.kubeconfig`);
      writeFileSync(
        file,
        kubeconfigYaml(info.server, ca, serviceAccount, await token(serviceAccount), NAMESPACE),
        { mode: 0o600 },
      );
      credentials.push({ component, serviceAccount, kind: "kubeconfig", file });
      return file;
    };
    const tokenFile = async (component: Component): Promise<string> => {
      const serviceAccount = serviceAccounts[component];
      const file = join(dir, `${serviceAccount}.token`);
      writeFileSync(file, await token(serviceAccount), { mode: 0o600 });
      credentials.push({ component, serviceAccount, kind: "token", file });
      return file;
    };

    // The components' sockets are bound here and passed down (cluster/ports.ts): every URL is
    // known before any component starts, and no port can be taken in between.
    const sockets = {
      proxy: await listeningSocket(opts.ports?.proxy ?? 0),
      auth: await listeningSocket(opts.ports?.auth ?? 0),
      userManager: await listeningSocket(opts.ports?.userManager ?? 0),
    };
    unpassed.push(...Object.values(sockets));
    const ports = {
      proxy: portOf(sockets.proxy),
      auth: portOf(sockets.auth),
      userManager: portOf(sockets.userManager),
    };
    const templatePorts = new Map<string, number>();
    for (const template of opts.templatePorts ?? []) {
      const relay = await relayTo(0, ports.proxy);
      relays.push(relay);
      templatePorts.set(template, relay.port);
    }
    const templateHosts = [...templatePorts].map(([template, port]) => [`127.0.0.1:${port}`, template]);
    // Session keys: the auth service signs, the proxy only verifies.
    const privateKeys = { keys: [await generateSigningKey()] };
    const privateFile = join(dir, "session-keys.private.json");
    const publicFile = join(dir, "session-keys.public.json");
    writeFileSync(privateFile, JSON.stringify(privateKeys), { mode: 0o600 });
    writeFileSync(publicFile, JSON.stringify(publicJwks(await parseSigningKeys(privateKeys))));

    const url = `http://127.0.0.1:${ports.proxy}`;
    const authUrl = `http://127.0.0.1:${ports.auth}`;
    const userManagerUrl = `http://127.0.0.1:${ports.userManager}`;
    const provider = { port: opts.ports?.identityProvider ?? 0, redirectUris: [`${authUrl}/callback/oidc`] };
    idp = opts.identityProviderProcess
      ? await startDevIdentityProviderProcess({
          ...provider,
          logFile: join(logsDir, "identity-provider.log"),
        })
      : await startDevIdentityProvider(provider);

    const watching = opts.watchNamespaces
      ? { USERLAND_WATCH_NAMESPACES: opts.watchNamespaces.join(",") }
      : ({} as Record<string, string>);
    /** Starts a component; `listen`: the sockets it serves on, by the setting each replaces. */
    const run = (
      name: Component,
      script: string,
      env: Record<string, string>,
      listen: Record<string, Server> = {},
    ) => {
      started.set(name, {
        script,
        env,
        ports: Object.fromEntries(Object.entries(listen).map(([key, server]) => [key, portOf(server)])),
      });
      const out = join(logsDir, `${name}.log`);
      // Straight to the file, not through a pipe: a component must still be able to log its
      // shutdown after this process has died (it then gets SIGTERM from the kernel).
      const logFd = openSync(out, "w");
      const passed = socketsFor(listen);
      const child = spawn(
        ...diesWithParent(
          process.execPath,
          [...(opts.nodeArgs?.[name] ?? []), join(repoRoot, script)],
          "SIGTERM",
        ),
        {
          cwd: repoRoot,
          env: {
            ...process.env,
            USERLAND_NAMESPACE: NAMESPACE,
            ...env,
            ...opts.componentEnv?.[name],
            ...passed.env,
          },
          stdio: ["ignore", logFd, logFd, ...passed.fds],
        },
      );
      closeSync(logFd);
      passed.close();
      child.once("exit", (code, signal) => log(`${name} exited (${signal ?? code}); log: ${out}`));
      children.push({ name, child });
    };
    const restart = async (name: Component, whileStopped?: () => Promise<void>) => {
      const how = started.get(name);
      const index = children.findIndex((c) => c.name === name);
      const old = children[index];
      if (!how || !old) throw new Error(`${name} was not started`);
      children.splice(index, 1);
      if (old.child.exitCode === null && old.child.signalCode === null) {
        const exited = new Promise((r) => old.child.once("exit", r));
        old.child.kill("SIGTERM");
        await exited;
      }
      await whileStopped?.();
      const listen: Record<string, Server> = {};
      for (const [key, port] of Object.entries(how.ports)) listen[key] = await listeningSocket(port);
      run(name, how.script, how.env, listen);
    };

    run("operator", "operator/main.ts", {
      ...watching,
      KUBECONFIG: await kubeconfigFor("operator"),
      OPERATOR_HTTP_ADDRESS: "127.0.0.1",
      OPERATOR_HTTP_PORT: "0", // nothing here calls it; the log says where it listens
      OPERATOR_LEADER_ELECTION: "true",
      // Exams start only with the proxy's pods named (docs/decisions/0013-exams.md). The proxy runs
      // on the machine here, and kwok enforces no NetworkPolicy: the chart's value, for the record.
      OPERATOR_PROXY_PODS: `${NAMESPACE}:app.kubernetes.io/component=proxy`,
    });
    run(
      "user-manager",
      "services/user-manager/main.ts",
      {
        ...watching,
        KUBECONFIG: await kubeconfigFor("user-manager"),
        USER_MANAGER_ADMIN_HOST: "127.0.0.1",
        USER_MANAGER_ADMIN_PORT: "0", // /metrics; the log says where (adminUrl)
        USER_MANAGER_SESSION_PUBLIC_KEYS_FILE: publicFile,
        USER_MANAGER_LOGIN_URL: `${authUrl}/login`,
        USER_MANAGER_CONSOLE_URL: `${userManagerUrl}/console/`,
        // The console is on a port of its own here, not beside the proxy as in the chart.
        USER_MANAGER_VISIT_URL: `${url}/_userland/visit`,
      },
      { USER_MANAGER_PORT: sockets.userManager },
    );
    const authUserManagerToken = await tokenFile("auth");
    run(
      "auth",
      "services/auth/main.ts",
      {
        AUTH_ADMIN_HOST: "127.0.0.1",
        AUTH_ADMIN_PORT: "0", // /metrics; the log says where (adminUrl)
        AUTH_PUBLIC_URL: `${authUrl}/`,
        AUTH_SESSION_KEYS_FILE: privateFile,
        AUTH_COOKIE_SECURE: "false",
        AUTH_ALLOWED_REDIRECT_HOSTS: [
          `127.0.0.1:${ports.proxy}`,
          `127.0.0.1:${ports.userManager}`,
          ...templateHosts.map(([host]) => host),
        ].join(","),
        AUTH_DEFAULT_REDIRECT: `${url}/_userland/home`,
        AUTH_CLEAR_SITE_URL: `${url}/_userland/signed-out`,
        AUTH_OIDC_ISSUER: idp.issuer,
        AUTH_OIDC_ALLOW_HTTP: "true",
        AUTH_OIDC_CLIENT_ID: idp.clientId,
        AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
        AUTH_OIDC_DISPLAY_NAME: "local test login (any name)",
        AUTH_USERNAME_CLAIM: "preferred_username",
        // Ended sessions refused at /forward-auth and /whoami, as the chart's default has it.
        AUTH_ENDED_SESSIONS: "true",
        KUBECONFIG: await kubeconfigFor("auth"),
        // /logout ends the session everywhere through the user-manager (the chart's auth.signOut),
        // with the auth service's own ServiceAccount token: one file, as the chart mounts one
        // projected token for sign-out and provisioning.
        AUTH_SIGN_OUT_URL: userManagerUrl,
        AUTH_SIGN_OUT_TOKEN_FILE: authUserManagerToken,
        ...(opts.provision === false
          ? {}
          : {
              AUTH_PROVISION_URL: userManagerUrl,
              AUTH_PROVISION_TEMPLATE: DEMO_TEMPLATE,
              AUTH_PROVISION_TOKEN_FILE: authUserManagerToken,
              // As the chart: a sign-in to the console starts no environment for the teacher.
              AUTH_PROVISION_SKIP_URLS: `${userManagerUrl}/console/`,
            }),
      },
      { AUTH_PORT: sockets.auth },
    );
    const overridesFile = join(dir, "upstreams.json");
    writeFileSync(overridesFile, "{}");
    run(
      "proxy",
      "services/proxy/main.ts",
      {
        ...watching,
        KUBECONFIG: await kubeconfigFor("proxy"),
        PROXY_ADMIN_HOST: "127.0.0.1",
        PROXY_ADMIN_PORT: "0",
        PROXY_SESSION_PUBLIC_KEYS_FILE: publicFile,
        PROXY_LOGIN_URL: `${authUrl}/login`,
        PROXY_DEFAULT_TEMPLATE: DEMO_TEMPLATE,
        ...(templateHosts.length > 0
          ? { PROXY_HOST_TEMPLATES: templateHosts.map(([host, t]) => `${host}=${t}`).join(",") }
          : {}),
        PROXY_UPSTREAM_OVERRIDES_FILE: overridesFile,
        PROXY_USER_MANAGER_URL: userManagerUrl,
        // A teacher's visit opens at <userland>--<template>.localhost:<port>, an origin of its own
        // (browsers send every *.localhost to loopback), apart from 127.0.0.1 where the teacher's
        // own environment, home and console are.
        PROXY_VISIT_DOMAIN: "localhost",
        // The Start button asks the user-manager with the proxy's own token, as in the chart: the
        // user-manager lets it because the proxy may patch Userlands.
        PROXY_USER_MANAGER_TOKEN_FILE: await tokenFile("proxy"),
        PROXY_ACTIVITY_FLUSH: "10s",
        ...(opts.visitQuiet ? { PROXY_VISIT_QUIET: opts.visitQuiet } : {}),
      },
      { PROXY_PORT: sockets.proxy },
    );

    // Demo environments: one loopback server per Userland Service, published to the proxy's overrides.
    informer = new Informer<Userland>(rest, {
      path: userlandsPath(NAMESPACE),
      log: createLogger("demo-environments", "warn"),
    });
    const publish = () => {
      const map = Object.fromEntries(
        [...addresses].map(([service, url]) => [`${NAMESPACE}/${service}`, url]),
      );
      writeFileSync(`${overridesFile}.tmp`, JSON.stringify(map, null, 2));
      renameSync(`${overridesFile}.tmp`, overridesFile);
    };
    const starting = new Set<string>();
    const startDemo = (u: Userland, service: string, port?: number): Promise<void> => {
      if (stopping) return Promise.resolve();
      const started = startDemoEnvironment(
        { userland: u.metadata.name ?? "", user: u.spec.user, template: u.spec.templateName },
        port,
      ).then((demo) => {
        demos.set(service, demo);
        addresses.set(service, demo.url);
        publish();
      });
      pendingStarts.add(started);
      return started.finally(() => pendingStarts.delete(started));
    };
    /** With demoListensAfterReadyMs: each Service's port, held from the first sight of it. */
    const reserved = new Map<string, Promise<number>>();
    const ensureDemo = async (u: Userland) => {
      // Named as the operator names it (api/naming.ts), so the address is published as soon as the
      // Userland exists: its status, which also names the Service, is first written when it is
      // Ready, and a proxy asked before the address is in its overrides answers 502 ("unresolved").
      const service = childNames(u.spec.templateName, u.metadata.name ?? "").service;
      if (demos.has(service)) return;
      const delayMs = opts.demoListensAfterReadyMs;
      if (delayMs === undefined) {
        if (starting.has(service)) return;
        starting.add(service);
        return startDemo(u, service);
      }
      // Published now, listening later: the port is held (cluster/ports.ts), so nothing else takes it.
      let port = reserved.get(service);
      if (!port) {
        port = heldPort().then((held) => {
          heldPorts.push(held);
          addresses.set(service, `http://127.0.0.1:${held.port}`);
          publish();
          return held.port;
        });
        reserved.set(service, port);
      }
      const listenOn = await port;
      if (u.status?.phase !== "Ready" || starting.has(service)) return;
      starting.add(service);
      const timer = setTimeout(() => {
        delayedStarts.delete(timer);
        startDemo(u, service, listenOn).catch((error: unknown) =>
          log(`demo environment: ${(error as Error).message}`),
        );
      }, delayMs);
      delayedStarts.add(timer);
    };
    const onUserland = (u: Userland) =>
      void ensureDemo(u).catch((error: unknown) => log(`demo environment: ${(error as Error).message}`));
    informer.on("add", onUserland);
    informer.on("update", onUserland);
    await informer.start();

    await waitFor(
      "the components to answer",
      async () => {
        const answers = await Promise.all(
          [`${authUrl}/healthz`, `${userManagerUrl}/healthz`].map((u) =>
            fetch(u).then(
              (r) => r.ok,
              () => false,
            ),
          ),
        );
        return answers.every(Boolean);
      },
      60_000,
      () => {
        const exited = children.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
        if (!exited) return;
        const out = join(logsDir, `${exited.name}.log`);
        const tail = readFileSync(out, "utf8").trim().split("\n").slice(-3).join("\n");
        throw new Error(`${exited.name} stopped while starting; its log (${out}) ends:\n${tail}`);
      },
    );

    return {
      url: `${url}/`,
      authUrl,
      userManagerUrl,
      consoleUrl: `${userManagerUrl}/console/`,
      identityProviderUrl: idp.issuer,
      templateUrls: Object.fromEntries(
        [...templatePorts].map(([template, port]) => [template, `http://127.0.0.1:${port}/`]),
      ),
      namespace: NAMESPACE,
      controlPlane: info,
      rest,
      token,
      serviceAccounts,
      credentials,
      teacher: TEACHER,
      logsDir,
      pids: () =>
        Object.fromEntries(children.map(({ name, child }) => [name, child.pid ?? 0])) as Record<
          Component,
          number
        >,
      restart,
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** Listens on 127.0.0.1:`port` (0: any) and passes every connection to 127.0.0.1:`target` unchanged. */
async function relayTo(port: number, target: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    port: portOf(server),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** deploy/*.yaml Templates, so the local platform shows the real examples too. */
function exampleTemplates(): unknown[] {
  const deployDir = join(repoRoot, "deploy");
  let files: string[];
  try {
    files = readdirSync(deployDir).filter((f) => f.endsWith(".yaml"));
  } catch {
    return [];
  }
  return files
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(deployDir, f), "utf8")).map((d) => d.toJS() as { kind?: string }),
    )
    .filter((d) => d?.kind === "Template");
}

/** Polls `check` (errors count as "not yet") until it holds; `fatal` may throw to give up early. */
async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
  fatal: () => void = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    fatal();
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
