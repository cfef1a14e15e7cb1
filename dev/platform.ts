/**
 * The whole platform on one machine, for `npm start` and the end-to-end tests: a real control
 * plane, the CRDs, example Templates, the operator, user-manager, auth service and proxy (each its
 * real main.ts, as a child process under its own ServiceAccount), a local OpenID provider and demo
 * environments that stand in for IDE containers. Everything listens on 127.0.0.1; the proxy
 * reaches demo environments through its upstream override file (the documented resolver seam).
 */
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
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { customResourceDefinitions } from "../api/crds.ts";
import type { Userland } from "../api/v1alpha1/index.ts";
import { Informer } from "../lib/informer.ts";
import { KubeRest, paths } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { generateSigningKey, parseSigningKeys, publicJwks } from "../lib/session.ts";
import {
  ControlPlane,
  diesWithParent,
  freePort,
  kubeconfigYaml,
  repoRoot,
  type ControlPlaneInfo,
} from "../cluster/controlPlane.ts";
import { startDemoEnvironment, type DemoEnvironment } from "./demo-environment.ts";
import { startDevIdentityProvider, type DevIdentityProvider } from "./identity-provider.ts";

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
  /** Fixed ports for `npm start`; free ports when omitted (tests). */
  ports?: Partial<PlatformPorts>;
  log?: (line: string) => void;
}

export interface Platform {
  url: string;
  authUrl: string;
  userManagerUrl: string;
  identityProviderUrl: string;
  namespace: string;
  controlPlane: ControlPlaneInfo;
  /** An admin (cluster-admin) client. */
  rest: KubeRest;
  /** Mints a token for a ServiceAccount in the platform namespace (for API callers such as a teacher). */
  token(serviceAccount: string): Promise<string>;
  logsDir: string;
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

/** Namespaced rights of each component, as in the Helm chart's Roles. */
const roles: Record<string, { apiGroups: string[]; resources: string[]; verbs: string[] }[]> = {
  "userland-operator": [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get", "list", "watch", "update", "patch"],
    },
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands/status", "templates/status"],
      verbs: ["get", "update", "patch"],
    },
    { apiGroups: ["userland.dev"], resources: ["templates"], verbs: ["get", "list", "watch"] },
    {
      apiGroups: ["apps"],
      resources: ["deployments"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {
      apiGroups: [""],
      resources: ["services", "persistentvolumeclaims"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
  ],
  "userland-user-manager": [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: ["userland.dev"], resources: ["templates"], verbs: ["get", "list"] },
    // Asks the API server whether a caller may do what they ask (RBAC decides for the user-manager).
    { apiGroups: ["authorization.k8s.io"], resources: ["localsubjectaccessreviews"], verbs: ["create"] },
  ],
  "userland-proxy": [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["get", "list", "watch", "patch"] },
    { apiGroups: ["userland.dev"], resources: ["templates"], verbs: ["get", "list", "watch"] },
  ],
  // Callers of the user-manager API: the auth service provisions, a teacher manages a class.
  "userland-provisioner": [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["create", "get"] },
  ],
  "userland-teacher": [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: ["userland.dev"], resources: ["templates"], verbs: ["get", "list"] },
  ],
};

export async function startPlatform(opts: PlatformOptions): Promise<Platform> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`[platform] ${line}\n`));
  const dir = opts.dir;
  const logsDir = join(dir, "logs");
  mkdirSync(logsDir, { recursive: true });
  const children: { name: string; child: ChildProcess }[] = [];
  const demos = new Map<string, DemoEnvironment>();
  let idp: DevIdentityProvider | undefined;
  let informer: Informer<Userland> | undefined;

  const controlPlane = new ControlPlane({
    dir: join(dir, "cluster"),
    log: (line) => log(`control plane: ${line}`),
  });
  const stop = async () => {
    await informer?.stop();
    for (const { child } of children.reverse()) child.kill("SIGTERM");
    await Promise.all(
      children.map(({ child }) =>
        child.exitCode === null ? new Promise((r) => child.once("exit", r)) : Promise.resolve(),
      ),
    );
    for (const demo of demos.values()) await demo.close();
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
    // CRDs (raw JSON keeps the x-kubernetes-* keys), namespace, Roles, Templates.
    const crdBase = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    for (const crd of customResourceDefinitions) await rest.create(crdBase, crd);
    for (const crd of customResourceDefinitions)
      await waitFor(`CRD ${crd.metadata?.name}`, async () => {
        const c = await rest.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
          `${crdBase}/${crd.metadata?.name}`,
        );
        return c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True") ?? false;
      });
    await rest.create("/api/v1/namespaces", { metadata: { name: NAMESPACE } });
    for (const [name, rules] of Object.entries(roles)) {
      await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "roles", NAMESPACE), {
        metadata: { name },
        rules,
      });
      await rest.create(paths.namespaced("", "v1", "serviceaccounts", NAMESPACE), { metadata: { name } });
      await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", NAMESPACE), {
        metadata: { name },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
        subjects: [{ kind: "ServiceAccount", name, namespace: NAMESPACE }],
      });
    }
    // The user-manager reviews callers' tokens and permissions: cluster-scoped APIs.
    await rest.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      metadata: { name: "userland-user-manager-reviews" },
      rules: [
        { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
        { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
      ],
    });
    await rest.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      metadata: { name: "userland-user-manager-reviews" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "userland-user-manager-reviews",
      },
      subjects: [{ kind: "ServiceAccount", name: "userland-user-manager", namespace: NAMESPACE }],
    });
    await rest.create(paths.namespaced("userland.dev", "v1alpha1", "templates", NAMESPACE), demoTemplate);
    for (const template of exampleTemplates()) {
      await rest
        .create(paths.namespaced("userland.dev", "v1alpha1", "templates", NAMESPACE), template)
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
    const kubeconfigFor = async (serviceAccount: string): Promise<string> => {
      const path = join(dir, `${serviceAccount}.kubeconfig`);
      writeFileSync(
        path,
        kubeconfigYaml(info.server, ca, serviceAccount, await token(serviceAccount), NAMESPACE),
        { mode: 0o600 },
      );
      return path;
    };
    const tokenFile = async (serviceAccount: string): Promise<string> => {
      const path = join(dir, `${serviceAccount}.token`);
      writeFileSync(path, await token(serviceAccount), { mode: 0o600 });
      return path;
    };

    // Picked only now, right before the components listen: a port chosen before the control
    // plane started could be taken by then on a busy machine.
    const ports: PlatformPorts = {
      proxy: opts.ports?.proxy ?? (await freePort()),
      auth: opts.ports?.auth ?? (await freePort()),
      userManager: opts.ports?.userManager ?? (await freePort()),
      identityProvider: opts.ports?.identityProvider ?? (await freePort()),
    };
    // Session keys: the auth service signs, the proxy only verifies.
    const privateKeys = { keys: [await generateSigningKey()] };
    const privateFile = join(dir, "session-keys.private.json");
    const publicFile = join(dir, "session-keys.public.json");
    writeFileSync(privateFile, JSON.stringify(privateKeys), { mode: 0o600 });
    writeFileSync(publicFile, JSON.stringify(publicJwks(await parseSigningKeys(privateKeys))));

    const url = `http://127.0.0.1:${ports.proxy}`;
    const authUrl = `http://127.0.0.1:${ports.auth}`;
    const userManagerUrl = `http://127.0.0.1:${ports.userManager}`;
    idp = await startDevIdentityProvider({
      port: ports.identityProvider,
      redirectUris: [`${authUrl}/callback/oidc`],
    });

    const run = (name: string, script: string, env: Record<string, string>) => {
      const out = join(logsDir, `${name}.log`);
      // Straight to the file, not through a pipe: a component must still be able to log its
      // shutdown after this process has died (it then gets SIGTERM from the kernel).
      const logFd = openSync(out, "w");
      const child = spawn(...diesWithParent(process.execPath, [join(repoRoot, script)], "SIGTERM"), {
        cwd: repoRoot,
        env: { ...process.env, USERLAND_NAMESPACE: NAMESPACE, ...env },
        stdio: ["ignore", logFd, logFd],
      });
      closeSync(logFd);
      child.once("exit", (code, signal) => log(`${name} exited (${signal ?? code}); log: ${out}`));
      children.push({ name, child });
    };

    run("operator", "operator/main.ts", {
      KUBECONFIG: await kubeconfigFor("userland-operator"),
      OPERATOR_HTTP_ADDRESS: "127.0.0.1",
      OPERATOR_HTTP_PORT: "0", // nothing here calls it; the log says where it listens
      OPERATOR_LEADER_ELECTION: "true",
    });
    run("user-manager", "services/user-manager/main.ts", {
      KUBECONFIG: await kubeconfigFor("userland-user-manager"),
      USER_MANAGER_HOST: "127.0.0.1",
      USER_MANAGER_PORT: String(ports.userManager),
    });
    run("auth", "services/auth/main.ts", {
      AUTH_HOST: "127.0.0.1",
      AUTH_PORT: String(ports.auth),
      AUTH_PUBLIC_URL: `${authUrl}/`,
      AUTH_SESSION_KEYS_FILE: privateFile,
      AUTH_COOKIE_SECURE: "false",
      AUTH_ALLOWED_REDIRECT_HOSTS: `127.0.0.1:${ports.proxy}`,
      AUTH_DEFAULT_REDIRECT: `${url}/`,
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_ALLOW_HTTP: "true",
      AUTH_OIDC_CLIENT_ID: idp.clientId,
      AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
      AUTH_OIDC_DISPLAY_NAME: "local test login (any name)",
      AUTH_USERNAME_CLAIM: "preferred_username",
      AUTH_PROVISION_URL: userManagerUrl,
      AUTH_PROVISION_TEMPLATE: DEMO_TEMPLATE,
      AUTH_PROVISION_TOKEN_FILE: await tokenFile("userland-provisioner"),
    });
    const overridesFile = join(dir, "upstreams.json");
    writeFileSync(overridesFile, "{}");
    run("proxy", "services/proxy/main.ts", {
      KUBECONFIG: await kubeconfigFor("userland-proxy"),
      PROXY_HOST: "127.0.0.1",
      PROXY_PORT: String(ports.proxy),
      PROXY_ADMIN_HOST: "127.0.0.1",
      PROXY_ADMIN_PORT: "0",
      PROXY_SESSION_PUBLIC_KEYS_FILE: publicFile,
      PROXY_LOGIN_URL: `${authUrl}/login`,
      PROXY_DEFAULT_TEMPLATE: DEMO_TEMPLATE,
      PROXY_UPSTREAM_OVERRIDES_FILE: overridesFile,
      PROXY_USER_MANAGER_URL: userManagerUrl,
      PROXY_USER_MANAGER_TOKEN_FILE: await tokenFile("userland-provisioner"),
      PROXY_ACTIVITY_FLUSH: "10s",
    });

    // Demo environments: one loopback server per Userland Service, published to the proxy's overrides.
    informer = new Informer<Userland>(adminKc, rest, {
      path: paths.namespaced("userland.dev", "v1alpha1", "userlands", NAMESPACE),
      log: createLogger("demo-environments", "warn"),
    });
    const publish = () => {
      const map = Object.fromEntries(
        [...demos].map(([service, demo]) => [`${NAMESPACE}/${service}`, demo.url]),
      );
      writeFileSync(`${overridesFile}.tmp`, JSON.stringify(map, null, 2));
      renameSync(`${overridesFile}.tmp`, overridesFile);
    };
    const starting = new Set<string>();
    const ensureDemo = (u: Userland) => {
      const service = u.status?.service?.name;
      if (!service || demos.has(service) || starting.has(service)) return;
      starting.add(service);
      void startDemoEnvironment({
        userland: u.metadata.name ?? "",
        user: u.spec.user,
        template: u.spec.templateName,
      }).then((demo) => {
        starting.delete(service);
        demos.set(service, demo);
        publish();
      });
    };
    informer.on("add", ensureDemo);
    informer.on("update", ensureDemo);
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
      identityProviderUrl: idp.issuer,
      namespace: NAMESPACE,
      controlPlane: info,
      rest,
      token,
      logsDir,
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
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
