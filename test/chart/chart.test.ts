/**
 * charts/userland: `helm lint` and `helm template` with helm built from Go modules, the values
 * schema refusing wrong values, the rendered Deployments running what the image holds with
 * settings the components accept, and every rendered object accepted by the real control plane.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { loadConfig, type Settings } from "../../lib/config.ts";
import { operatorSettings } from "../../operator/config.ts";
import { loadAuthConfig, settings as authSettings } from "../../services/auth/config.ts";
import { loadProxyConfig } from "../../services/proxy/config.ts";
import { settings as proxySettings } from "../../services/proxy/settings.ts";
import {
  loadUserManagerConfig,
  settings as userManagerSettings,
} from "../../services/user-manager/config.ts";
import { CHART_ROLE_FOR } from "../../services/user-manager/console/forbiddenPage.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { chartProxyNodeOptions } from "../../cluster/harness/chartValues.ts";
import { PROXY_RSS_BOUND_MIB } from "../../reliability/soak.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import {
  applyManifests,
  chartDir,
  cleanUpClusterScoped,
  crdDir,
  helm,
  isolatedValues,
  kubectl,
  ok,
  parseManifests,
  renderChart,
  type KubeObject,
} from "./support.ts";

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  startupProbe?: {
    httpGet?: { path: string; port: string | number };
    periodSeconds?: number;
    failureThreshold?: number;
  };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
}
interface PodSpec {
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  containers: Container[];
}
interface Deployment extends KubeObject {
  spec: { replicas: number; template: { spec: PodSpec } };
}

const COMPONENTS = {
  operator: { main: "operator/main.ts", settings: operatorSettings as Settings, probePort: "http" },
  auth: { main: "services/auth/main.ts", settings: authSettings as Settings, probePort: "http" },
  proxy: { main: "services/proxy/main.ts", settings: proxySettings as Settings, probePort: "admin" },
  "user-manager": {
    main: "services/user-manager/main.ts",
    settings: userManagerSettings as Settings,
    probePort: "http",
  },
} as const;
type Component = keyof typeof COMPONENTS;

/** Set by the chart for every component, read by lib/ (logging, namespace) or the pod identity. */
// NODE_OPTIONS: the proxy's heap limits (proxy.nodeOptions), read by Node.js itself.
const COMMON_ENV = new Set(["LOG_LEVEL", "USERLAND_NAMESPACE", "POD_NAME", "NODE_ENV", "NODE_OPTIONS"]);

/** Values a real installation sets: a login provider (the auth service refuses to start without one). */
const loginValues = {
  auth: {
    oidc: {
      issuer: "https://login.uni.example/realms/students",
      clientId: "userland",
      clientSecret: { existingSecret: "userland-oidc", key: "client-secret" },
    },
    allowed: { domains: ["uni.example"] },
  },
};

const find = (objects: KubeObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
const deployments = (objects: KubeObject[]) =>
  objects.filter((o): o is Deployment => o.kind === "Deployment");
const componentOf = (o: KubeObject) => o.metadata.labels?.["app.kubernetes.io/component"] as Component;

test("helm is the v3 release pinned in cluster/tools/go.mod", async () => {
  const goMod = readFileSync(join(repoRoot, "cluster/tools/go.mod"), "utf8");
  const pinned = /helm\.sh\/helm\/v3 (v\S+)/.exec(goMod)?.[1];
  assert.ok(pinned, "go.mod requires helm.sh/helm/v3");
  const version = ok(await helm(["version", "--template", "{{ .Version }}"]), "helm version");
  assert.equal(version.trim(), pinned);
});

test("helm lint passes with the default values", async () => {
  const result = await helm(["lint", "--strict", chartDir]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

test("helm lint passes with a full configuration", async () => {
  const result = await helm([
    "lint",
    "--strict",
    chartDir,
    ...["--set", "auth.oidc.issuer=https://login.uni.example/", "--set", "auth.oidc.clientId=userland"],
    ...["--set", "auth.oidc.clientSecret.existingSecret=oidc", "--set", "auth.github.clientId=abc"],
    ...["--set", "auth.github.clientSecret.existingSecret=gh", "--set", "auth.oidc.userPrefix=uni:"],
    ...["--set", "auth.github.userPrefix=github:", "--set", "auth.provision.enabled=true"],
    ...["--set", "auth.provision.template=code-server", "--set", "networkPolicy.ipv6=true"],
    ...["--set", "proxy.defaultTemplate=code-server", "--set", "ingress.className=nginx"],
    ...["--set", "operator.replicas=1", "--set", "ingress.proxy.tlsSecretName="],
  ]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
});

// Each wrong value must fail lint and template, with a message that names the value at fault.
const invalidValues: { what: string; set: string[]; message: RegExp }[] = [
  {
    what: "replicas as a word",
    set: ["--set-string", "operator.replicas=two"],
    message: /replicas.*integer/is,
  },
  { what: "zero replicas", set: ["--set", "proxy.replicas=0"], message: /replicas.*(minimum|greater)/is },
  {
    what: "a misspelt key",
    set: ["--set", "operator.replica=2"],
    message: /replica.*not allowed|additional/is,
  },
  { what: "a port out of range", set: ["--set", "auth.port=70000"], message: /port/i },
  { what: "an invalid base domain", set: ["--set", "baseDomain=Not A Domain"], message: /baseDomain/ },
  { what: "an unknown scheme", set: ["--set", "publicScheme=ftp"], message: /publicScheme/ },
  { what: "a bad CIDR", set: ["--set", "networkPolicy.podCIDRs={10.0.0.0}"], message: /podCIDRs/ },
  { what: "a bad duration", set: ["--set", "proxy.upstreamTimeout=soon"], message: /upstreamTimeout/ },
  { what: "missing limits", set: ["--set", "operator.resources.limits=null"], message: /limits/ },
  {
    what: "OIDC scopes without openid",
    set: ["--set", "auth.oidc.scopes={profile}"],
    message: /scopes/,
  },
  {
    what: "a negative drain delay",
    set: ["--set", "endpointDrainSeconds=-1"],
    message: /endpointDrainSeconds/,
  },
  {
    what: "an invalid Template name",
    set: ["--set", "proxy.defaultTemplate=Code_Server"],
    message: /defaultTemplate/,
  },
];

for (const row of invalidValues) {
  test(`the values schema refuses ${row.what} (lint and template fail)`, async () => {
    const lint = await helm(["lint", chartDir, ...row.set]);
    assert.notEqual(lint.code, 0, `helm lint accepted ${row.set.join(" ")}:\n${lint.stdout}`);
    // helm reports schema violations as errors on values.yaml, with the path of the value.
    assert.match(lint.stdout + lint.stderr, /\[ERROR\] values\.yaml: .*(schema|at '\/)/i);
    assert.match(lint.stdout + lint.stderr, row.message);
    const template = await helm(["template", "x", chartDir, ...row.set]);
    assert.notEqual(template.code, 0, `helm template accepted ${row.set.join(" ")}`);
    assert.match(template.stderr, /values don't meet the specifications of the schema/);
    assert.match(template.stderr, row.message);
  });
}

test("the console's refusal page names a chart role that grants what was refused", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", loginValues));
  for (const [resource, role] of Object.entries(CHART_ROLE_FOR)) {
    const clusterRole = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === role) as
      { rules?: { apiGroups?: string[]; resources?: string[] }[] } | undefined;
    assert.ok(clusterRole, `the chart renders ${role}`);
    assert.ok(
      clusterRole.rules?.some(
        (r) => r.apiGroups?.includes("userland.dev") && r.resources?.includes(resource),
      ),
      `${role} grants ${resource}`,
    );
  }
});

test("helm template renders every component, its RBAC, Ingresses and NetworkPolicies", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", loginValues));
  const expected: [string, string][] = [
    ...(["operator", "auth", "proxy", "user-manager"] as const).flatMap((c): [string, string][] => [
      ["Deployment", `userland-${c}`],
      ["ServiceAccount", `userland-${c}`],
      ["PodDisruptionBudget", `userland-${c}`],
    ]),
    ...(["operator", "proxy", "user-manager"] as const).flatMap((c): [string, string][] => [
      ["Role", `userland-${c}`],
      ["RoleBinding", `userland-${c}`],
    ]),
    ["Service", "userland-auth"],
    ["Service", "userland-proxy"],
    ["Service", "userland-proxy-admin"],
    ["Service", "userland-user-manager"],
    ["Service", "userland-operator-metrics"],
    ["ClusterRole", "ide-userland-user-manager"],
    ["ClusterRoleBinding", "ide-userland-user-manager"],
    ["ClusterRole", "userland-template-admin"],
    ["ClusterRole", "userland-teacher"],
    ["ValidatingAdmissionPolicy", "ide-userland-proxy-activity-only"],
    ["ValidatingAdmissionPolicyBinding", "ide-userland-proxy-activity-only"],
    ["ValidatingAdmissionPolicy", "ide-userland-userland-start-stop-only"],
    ["ValidatingAdmissionPolicyBinding", "ide-userland-userland-start-stop-only"],
    ["Ingress", "userland-proxy"],
    ["Ingress", "userland-auth"],
    ["NetworkPolicy", "userland-user-environments"],
    ["NetworkPolicy", "userland-platform"],
    ["NetworkPolicy", "userland-platform-public"],
  ];
  for (const [kind, name] of expected) assert.ok(find(objects, kind, name), `${kind} ${name} is rendered`);
  // The auth service's two Roles: list and watch session records, for ended sessions (api/sessions.ts),
  // and the right the user-manager checks before it ends a signed-out session (no patch).
  const authRoles = objects.filter((o) => o.kind === "Role" && o.metadata.name.includes("auth"));
  assert.deepEqual(
    authRoles.map((o) => o.metadata.name),
    ["userland-auth-ended-sessions", "userland-auth-sign-out"],
  );
  assert.deepEqual(
    authRoles.map((o) => (o as KubeObject & { rules?: unknown }).rules),
    [
      [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"] }],
      [{ apiGroups: ["userland.dev"], resources: ["userlands/sessions"], verbs: ["delete"] }],
    ],
  );
  const authSa = find(objects, "ServiceAccount", "userland-auth") as KubeObject & {
    automountServiceAccountToken?: boolean;
  };
  assert.equal(authSa.automountServiceAccountToken, false);
  // Every namespaced object names its namespace, so `helm template | kubectl apply` lands right.
  for (const o of objects) {
    if (
      ![
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
      ].includes(o.kind)
    )
      assert.equal(o.metadata.namespace, "ide", `${o.kind} ${o.metadata.name} has metadata.namespace`);
  }

  const proxyIngress = find(objects, "Ingress", "userland-proxy") as KubeObject & {
    spec: { rules: { host: string }[]; tls: { hosts: string[]; secretName: string }[] };
  };
  assert.deepEqual(
    proxyIngress.spec.rules.map((r) => r.host),
    ["*.ide.example.org", "ide.example.org"],
  );
  assert.deepEqual(proxyIngress.spec.tls, [
    { hosts: ["*.ide.example.org", "ide.example.org"], secretName: "userland-wildcard-tls" },
  ]);
  const authIngress = find(objects, "Ingress", "userland-auth") as KubeObject & {
    spec: { rules: { host: string }[]; tls: { hosts: string[]; secretName: string }[] };
  };
  assert.deepEqual(
    authIngress.spec.rules.map((r) => r.host),
    ["auth.ide.example.org"],
  );
  assert.equal(authIngress.spec.tls[0]?.secretName, "userland-auth-tls");
});

test("the user environments' NetworkPolicy: in only from the proxy, out not to the cluster or metadata", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      networkPolicy: { podCIDRs: ["10.42.0.0/16"], serviceCIDRs: ["10.43.0.0/16"], ipv6: true },
    }),
  );
  const policy = find(objects, "NetworkPolicy", "userland-user-environments") as KubeObject & {
    spec: {
      podSelector: { matchLabels: Record<string, string>; matchExpressions?: unknown[] };
      policyTypes: string[];
      ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[] }[];
      egress: { to: { ipBlock?: { cidr: string; except?: string[] } }[]; ports?: unknown[] }[];
    };
  };
  // The operator labels every environment's pods so (operator/desired.ts).
  assert.deepEqual(policy.spec.podSelector.matchLabels, {
    "app.kubernetes.io/managed-by": "userland-operator",
  });
  // Not during an exam: the exam's own policy must be the only one that selects its pods
  // (policies add up; operator/exams/policy.ts).
  assert.deepEqual(policy.spec.podSelector.matchExpressions, [
    { key: "userland.dev/exam", operator: "DoesNotExist" },
  ]);
  assert.deepEqual(policy.spec.policyTypes, ["Ingress", "Egress"]);
  assert.deepEqual(policy.spec.ingress, [
    {
      from: [
        {
          podSelector: {
            matchLabels: {
              "app.kubernetes.io/name": "userland",
              "app.kubernetes.io/instance": "userland",
              "app.kubernetes.io/component": "proxy",
            },
          },
        },
      ],
    },
  ]);
  const blocks = policy.spec.egress
    .flatMap((e) => e.to.map((to) => to.ipBlock))
    .filter((b) => b !== undefined);
  assert.deepEqual(blocks, [
    { cidr: "0.0.0.0/0", except: ["10.42.0.0/16", "10.43.0.0/16", "169.254.169.254/32"] },
    { cidr: "::/0", except: ["fd00:ec2::254/128"] },
  ]);
});

test("each Deployment runs its component from the one image, hardened, with probes and resources", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", loginValues));
  const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  const found = deployments(objects);
  assert.equal(found.length, 4);
  const images = new Set<string>();
  for (const d of found) {
    const component = componentOf(d);
    const spec = COMPONENTS[component];
    assert.ok(spec, `${d.metadata.name} is a known component (${component})`);
    const pod = d.spec.template.spec;
    const [container, ...others] = pod.containers;
    assert.ok(container && others.length === 0, `${d.metadata.name} has one container`);
    images.add(container.image);
    // The image's ENTRYPOINT is node; the chart passes the component's entry file.
    assert.equal(container.command, undefined);
    assert.deepEqual(container.args, [spec.main]);
    assert.ok(existsSync(join(repoRoot, spec.main)), `${spec.main} exists`);
    const topDir = spec.main.split("/")[0] ?? "";
    assert.match(dockerfile, new RegExp(`COPY[^\\n]*\\b${topDir}\\b`), `the Dockerfile copies ${topDir}/`);
    assert.equal(pod.serviceAccountName, `userland-${component}`);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.securityContext?.runAsUser, 10001);
    assert.deepEqual(pod.securityContext?.seccompProfile, { type: "RuntimeDefault" });
    const sc = container.securityContext ?? {};
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.deepEqual(sc.capabilities, { drop: ["ALL"] });
    for (const kind of ["requests", "limits"] as const) {
      assert.ok(container.resources?.[kind]?.cpu && container.resources[kind].memory, `${component} ${kind}`);
    }
    assert.deepEqual(container.livenessProbe?.httpGet, { path: "/healthz", port: spec.probePort });
    assert.deepEqual(container.readinessProbe?.httpGet, { path: "/readyz", port: spec.probePort });
    assert.ok(container.ports?.some((p) => p.name === spec.probePort));
  }
  assert.equal(images.size, 1, `one image for all components: ${[...images].join(", ")}`);
  const operator = found.find((d) => componentOf(d) === "operator");
  assert.equal(operator?.spec.replicas, 2);
  const operatorEnv = operator?.spec.template.spec.containers[0]?.env ?? [];
  assert.equal(operatorEnv.find((e) => e.name === "OPERATOR_LEADER_ELECTION")?.value, "true");
  // The auth service's API token is for watching ended-session marks (auth.endedSessions).
  const auth = found.find((d) => componentOf(d) === "auth");
  assert.equal(auth?.spec.template.spec.automountServiceAccountToken, true);
  assert.equal(
    auth?.spec.template.spec.containers[0]?.env?.find((e) => e.name === "AUTH_ENDED_SESSIONS")?.value,
    "true",
  );
});

test("auth, proxy and user-manager keep serving for endpointDrainSeconds after their pod starts terminating", async () => {
  const drains = async (values: object) =>
    Object.fromEntries(
      deployments(parseManifests(await renderChart("userland", "ide", { ...loginValues, ...values }))).map(
        (d) => {
          const [container] = d.spec.template.spec.containers;
          const grace = d.spec.template.spec.terminationGracePeriodSeconds ?? 30;
          const sleep = container?.lifecycle?.preStop?.sleep?.seconds;
          // The sleep counts against the grace period: what is left must still cover the shutdown.
          if (sleep !== undefined)
            assert.ok(grace - sleep >= 20, `${d.metadata.name}: ${grace} s grace, ${sleep} s drain`);
          return [componentOf(d), sleep];
        },
      ),
    );
  assert.deepEqual(await drains({}), { auth: 5, proxy: 5, "user-manager": 5, operator: undefined });
  assert.deepEqual(await drains({ endpointDrainSeconds: 8 }), {
    auth: 8,
    proxy: 8,
    "user-manager": 8,
    operator: undefined,
  });
  assert.deepEqual(await drains({ endpointDrainSeconds: 0 }), {
    auth: undefined,
    proxy: undefined,
    "user-manager": undefined,
    operator: undefined,
  });
});

test("every component's liveness probe counts only after a startup probe allows startupSeconds to start", async () => {
  const probes = async (values: object) =>
    Object.fromEntries(
      deployments(parseManifests(await renderChart("userland", "ide", { ...loginValues, ...values }))).map(
        (d) => {
          const [container] = d.spec.template.spec.containers;
          const startup = container?.startupProbe;
          const liveness = container?.livenessProbe;
          // The same endpoint: once it answers, the component has started and liveness takes over.
          assert.deepEqual(
            startup?.httpGet,
            liveness?.httpGet,
            `${d.metadata.name}: startup probes /healthz`,
          );
          const budget = (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3);
          return [componentOf(d), budget];
        },
      ),
    );
  assert.deepEqual(await probes({}), { auth: 120, proxy: 120, "user-manager": 120, operator: 120 });
  assert.deepEqual(await probes({ startupSeconds: 300 }), {
    auth: 300,
    proxy: 300,
    "user-manager": 300,
    operator: 300,
  });
});

test("the chart's env vars are settings the components know, with values they accept", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      ...loginValues,
      proxy: {
        defaultTemplate: "code-server",
        trustedProxies: ["10.0.0.0/8"],
        hostTemplates: ["code.uni.example=code"],
      },
      userManager: {
        tokenAudiences: ["userland-user-manager", "https://kubernetes.default.svc"],
        console: { visitUrl: "https://ide.uni.example/_userland/visit" },
      },
    }),
  );
  const userManagerEnv = deployments(objects).find((d) => componentOf(d) === "user-manager")?.spec.template
    .spec.containers[0]?.env;
  assert.equal(
    userManagerEnv?.find((e) => e.name === "USER_MANAGER_VISIT_URL")?.value,
    "https://ide.uni.example/_userland/visit",
    "userManager.console.visitUrl: where the console's Open goes",
  );
  for (const d of deployments(objects)) {
    const component = componentOf(d);
    const known = new Set(Object.values(COMPONENTS[component].settings).map((s) => s.env));
    const env: Record<string, string> = {};
    for (const e of d.spec.template.spec.containers[0]?.env ?? []) {
      assert.ok(
        COMMON_ENV.has(e.name) || known.has(e.name),
        `${component}: ${e.name} is one of its settings`,
      );
      // Secrets and the downward API are filled in by the kubelet; stand in for them.
      env[e.name] = e.value ?? (e.name === "USERLAND_NAMESPACE" ? "ide" : "from-a-secret");
    }
    const load = {
      operator: () => loadConfig("operator", operatorSettings, env),
      auth: () => loadAuthConfig(env),
      proxy: () => loadProxyConfig(env),
      "user-manager": () => loadUserManagerConfig(env),
    }[component];
    assert.doesNotThrow(load, `${component} accepts the chart's settings`);
  }
});

test("the proxy's heap is bounded (proxy.nodeOptions) and its memory limit is above that bound and the soak's", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", loginValues));
  const container = deployments(objects).find((d) => componentOf(d) === "proxy")?.spec.template.spec
    .containers[0];
  const nodeOptions = container?.env?.find((e) => e.name === "NODE_OPTIONS")?.value ?? "";
  // What the soak and bench:proxy run the proxy with is what the chart deploys.
  assert.deepEqual(nodeOptions.split(" "), chartProxyNodeOptions());
  assert.match(nodeOptions, /--max-semi-space-size=\d+/);
  const oldSpaceMiB = Number(/--max-old-space-size=(\d+)/.exec(nodeOptions)?.[1]);
  assert.ok(oldSpaceMiB > 0, `the old generation is bounded: ${nodeOptions}`);
  const limit = /^(\d+)(Mi|Gi)$/.exec(container?.resources?.limits?.memory ?? "");
  assert.ok(limit, `the memory limit is in Mi or Gi: ${container?.resources?.limits?.memory}`);
  const limitMiB = Number(limit[1]) * (limit[2] === "Gi" ? 1024 : 1);
  assert.ok(
    limitMiB >= PROXY_RSS_BOUND_MIB,
    `limit ${limitMiB} MiB ≥ the soak's bound ${PROXY_RSS_BOUND_MIB} MiB`,
  );
  // Besides the old generation: the young one, code, the module graph (~120 MiB) and buffers.
  assert.ok(limitMiB >= oldSpaceMiB + 200, `limit ${limitMiB} MiB ≥ old generation ${oldSpaceMiB} + 200 MiB`);
});

test("a component with one replica gets no PodDisruptionBudget", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", { userManager: { replicas: 1 } }));
  assert.equal(find(objects, "PodDisruptionBudget", "userland-user-manager"), undefined);
  assert.ok(find(objects, "PodDisruptionBudget", "userland-proxy"));
});

test("auth.provision gives the auth service a projected token and the right to create Userlands only", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      ...loginValues,
      auth: {
        ...loginValues.auth,
        provision: { enabled: true, template: "code-server", tokenAudience: "userland-user-manager" },
      },
      userManager: { tokenAudiences: ["userland-user-manager"] },
    }),
  );
  const role = find(objects, "Role", "userland-auth-provision") as KubeObject & { rules: unknown[] };
  assert.deepEqual(role.rules, [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["create"] },
  ]);
  const auth = deployments(objects).find((d) => componentOf(d) === "auth");
  const text = JSON.stringify(auth);
  assert.match(text, /"audience":"userland-user-manager"/);
  assert.match(
    text,
    /"name":"AUTH_PROVISION_URL","value":"http:\/\/userland-user-manager\.ide\.svc\.cluster\.local"/,
  );
});

test("auth.signOut: /logout ends the session through the user-manager with a projected token and delete on userlands/sessions only", async () => {
  const envOf = (objects: KubeObject[]) =>
    Object.fromEntries(
      (
        deployments(objects).find((d) => componentOf(d) === "auth")?.spec.template.spec.containers[0]?.env ??
        []
      )
        .filter((e) => e.name.startsWith("AUTH_SIGN_OUT_"))
        .map((e) => [e.name, e.value]),
    );
  const on = parseManifests(await renderChart("userland", "ide", loginValues));
  assert.deepEqual(envOf(on), {
    AUTH_SIGN_OUT_URL: "http://userland-user-manager.ide.svc.cluster.local",
    AUTH_SIGN_OUT_TOKEN_FILE: "/var/run/secrets/userland/user-manager-token/token",
    AUTH_SIGN_OUT_TIMEOUT: "5s",
  });
  const auth = deployments(on).find((d) => componentOf(d) === "auth");
  assert.match(JSON.stringify(auth), /"name":"user-manager-token","projected"/);
  const binding = find(on, "RoleBinding", "userland-auth-sign-out") as KubeObject & {
    subjects: { name: string }[];
  };
  assert.deepEqual(
    binding.subjects.map((s) => s.name),
    ["userland-auth"],
  );

  // Off: no setting, no token for the user-manager, no Role; /logout signs out the browser only.
  const off = parseManifests(
    await renderChart("userland", "ide", {
      ...loginValues,
      auth: { ...loginValues.auth, signOut: { enabled: false } },
    }),
  );
  assert.deepEqual(envOf(off), {});
  assert.equal(find(off, "Role", "userland-auth-sign-out"), undefined);
  assert.doesNotMatch(
    JSON.stringify(deployments(off).find((d) => componentOf(d) === "auth")),
    /user-manager-token/,
  );

  // The user-manager verifies the session with the console's session keys: without them, say so.
  await assert.rejects(
    renderChart("userland", "ide", { ...loginValues, userManager: { console: { enabled: false } } }),
    /auth\.signOut\.enabled needs userManager\.console\.enabled/,
  );
});

test("auth.publicUrl puts the auth service elsewhere: its URL, the proxy's login URL and the Ingress host follow", async () => {
  const envOf = (objects: KubeObject[], component: Component, name: string) =>
    JSON.stringify(deployments(objects).find((d) => componentOf(d) === component)).match(
      new RegExp(`"name":"${name}","value":"([^"]*)"`),
    )?.[1];
  const defaults = parseManifests(await renderChart("userland", "ide", loginValues));
  assert.equal(envOf(defaults, "auth", "AUTH_PUBLIC_URL"), "https://auth.ide.example.org/");
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      ...loginValues,
      auth: { ...loginValues.auth, publicUrl: "https://login.uni.example:8443/" },
    }),
  );
  assert.equal(envOf(objects, "auth", "AUTH_PUBLIC_URL"), "https://login.uni.example:8443/");
  assert.equal(envOf(objects, "proxy", "PROXY_LOGIN_URL"), "https://login.uni.example:8443/login");
  const ingress = find(objects, "Ingress", "userland-auth") as KubeObject & {
    spec: { rules: { host: string }[] };
  };
  assert.deepEqual(
    ingress.spec.rules.map((r) => r.host),
    ["login.uni.example"],
  );
});

test("every rendered object is accepted by the control plane, and the Deployments become available", async (t) => {
  const namespace = await testNamespace(t, "chart");
  // The chart's CRDs (helm installs crds/ first): the same generated files the tests install.
  await installCrds();
  ok(
    await kubectl(["apply", "--server-side", "--dry-run=server", "-f", crdDir]),
    "kubectl apply crds (dry run)",
  );
  const values = isolatedValues(namespace, {
    ...loginValues,
    auth: { ...loginValues.auth, provision: { enabled: true, template: "code-server" } },
  });
  const objects = parseManifests(await renderChart("userland", namespace, values));
  cleanUpClusterScoped(t, objects);
  const report = await applyManifests(namespace, objects);
  for (const o of objects) {
    assert.match(
      report,
      new RegExp(`\\b${o.metadata.name}\\b serverside-applied`),
      `${o.kind} ${o.metadata.name}`,
    );
    const kind = o.apiVersion.includes("/") ? `${o.kind}.${o.apiVersion.split("/")[0]}` : o.kind;
    ok(await kubectl(["get", "--namespace", namespace, kind, o.metadata.name, "-o", "name"]), `get ${kind}`);
  }
  // kwok plays the kubelet: pods are scheduled and become Ready (no real containers run here).
  for (const d of deployments(objects)) {
    await eventually(
      `Deployment ${d.metadata.name} to be available`,
      async () => {
        const out = ok(
          await kubectl(["get", "--namespace", namespace, "deployment", d.metadata.name, "-o", "json"]),
          "get deployment",
        );
        const status = (JSON.parse(out) as { status?: { availableReplicas?: number } }).status;
        return (status?.availableReplicas ?? 0) === d.spec.replicas;
      },
      60_000,
      500,
    );
  }
});

test("the Dockerfile builds one non-root image that holds every component the chart runs", () => {
  const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  const instructions = dockerfile
    .split("\n")
    .filter((line) => !line.startsWith("#") && line.trim() !== "")
    .map((line) => line.trim());
  const froms = instructions.filter((l) => l.startsWith("FROM "));
  assert.equal(froms.length, 2, "multi-stage: dependencies, then runtime");
  for (const from of froms) assert.match(from, /^FROM node:24-bookworm-slim\b/);
  assert.ok(
    instructions.some((l) => /^RUN npm ci --omit=dev\b/.test(l)),
    "production dependencies from the lock file",
  );
  const runtime = instructions.slice(instructions.indexOf(froms[1] ?? ""));
  const users = runtime.filter((l) => l.startsWith("USER "));
  assert.equal(users.length, 1);
  const uid = Number((users[0] ?? "").slice(5).split(":")[0]);
  assert.ok(
    Number.isInteger(uid) && uid > 0,
    `USER is a non-root number (${users[0]}), so runAsNonRoot can verify it`,
  );
  assert.equal(uid, 10001, "the chart's runAsUser");
  assert.ok(runtime.includes('ENTRYPOINT ["node"]'));
  assert.ok(runtime.includes('CMD ["operator/main.ts"]'));
  const copied = runtime
    .filter((l) => l.startsWith("COPY "))
    .map((l) => l.split(/\s+/).at(-1)?.replace(/^\.\//, ""));
  // coursework/: the program the operator's copying pods run (coursework/copy.ts).
  for (const needed of [
    "node_modules",
    "package.json",
    "api",
    "coursework",
    "lib",
    "operator",
    "services",
    "scripts",
  ]) {
    assert.ok(copied.includes(needed), `the runtime image has ${needed}`);
  }
  // Every component's entry point, and every repository file it imports, is copied (and not a
  // test file, which .dockerignore leaves out).
  const imported = new Set<string>();
  const walk = (file: string) => {
    if (imported.has(file)) return;
    imported.add(file);
    const source = readFileSync(file, "utf8");
    for (const m of source.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      walk(resolve(dirname(file), m[1] ?? ""));
    }
  };
  for (const { main } of Object.values(COMPONENTS)) walk(join(repoRoot, main));
  walk(join(repoRoot, "scripts", "sessionKeys.ts"));
  for (const file of imported) {
    const path = relative(repoRoot, file);
    assert.ok(existsSync(file), `${path} exists`);
    assert.ok(copied.includes(path.split("/")[0]), `${path} is in the image`);
    assert.doesNotMatch(path, /(^|\/)test\//, `${path} is not left out as a test file`);
  }
  const ignore = readFileSync(join(repoRoot, ".dockerignore"), "utf8");
  for (const needed of [
    "package.json",
    "package-lock.json",
    "api/",
    "lib/",
    "operator/",
    "services/",
    "scripts/",
  ]) {
    assert.match(
      ignore,
      new RegExp(`^!${needed.replace(".", "\\.")}$`, "m"),
      `.dockerignore lets ${needed} in`,
    );
  }
});

test("optional parts can be switched off", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      ingress: { enabled: false },
      networkPolicy: { enabled: false },
      rbac: { createClusterRoles: false, proxyAdmissionPolicy: false, startStopAdmissionPolicy: false },
    }),
  );
  const kinds = new Set(objects.map((o) => o.kind));
  for (const kind of [
    "Ingress",
    "NetworkPolicy",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
  ]) {
    assert.ok(!kinds.has(kind), `no ${kind}`);
  }
  // The components' own RBAC stays: only the people roles are left to another release.
  const clusterRoles = objects.filter((o) => o.kind === "ClusterRole").map((o) => o.metadata.name);
  assert.deepEqual(clusterRoles, ["ide-userland-user-manager"]);
  assert.equal(deployments(objects).length, 4);
});
