/**
 * The Gateway API alternative to the Ingresses: the chart's HTTPRoutes and a sample Gateway are
 * accepted by the real API server with the Gateway API CRDs (from the sigs.k8s.io/gateway-api
 * module, copied by cluster/build.sh), and their hostnames and backends are the ones the proxy and
 * the auth service are configured for.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { templateForHost } from "../../services/proxy/route/templateHosts.ts";
import { testNamespace } from "../support/cluster.ts";
import {
  applyManifests,
  installToolCrds,
  kubectl,
  parseManifests,
  renderChart,
  type KubeObject,
} from "./support.ts";

const CRDS = [
  "gateway.networking.k8s.io_gatewayclasses.yaml",
  "gateway.networking.k8s.io_gateways.yaml",
  "gateway.networking.k8s.io_httproutes.yaml",
];

interface HTTPRoute extends KubeObject {
  spec: {
    parentRefs: { name: string; sectionName?: string }[];
    hostnames: string[];
    rules: { backendRefs: { name: string; port: number }[] }[];
  };
}
interface EnvVar {
  name: string;
  value?: string;
}

const gatewayValues = (extra: Record<string, unknown> = {}) => ({
  ingress: { enabled: false },
  gateway: { enabled: true, parentRefs: [{ name: "userland", sectionName: "https" }], ...extra },
  proxy: { defaultTemplate: "code-server", hostTemplates: ["code.uni.example=code-server"] },
});

const routes = (objects: KubeObject[]) => objects.filter((o): o is HTTPRoute => o.kind === "HTTPRoute");
const env = (objects: KubeObject[], deployment: string): Map<string, string> => {
  const d = objects.find((o) => o.kind === "Deployment" && o.metadata.name === deployment);
  const containers = (d?.spec as { template: { spec: { containers: { env: EnvVar[] }[] } } }).template.spec
    .containers;
  return new Map((containers[0]?.env ?? []).map((e) => [e.name, e.value ?? ""]));
};

test("HTTPRoutes instead of Ingresses when chosen in values; neither by default", async () => {
  const byDefault = parseManifests(await renderChart("userland", "ide"));
  assert.equal(routes(byDefault).length, 0);
  assert.equal(byDefault.filter((o) => o.kind === "Ingress").length, 2);
  const chosen = parseManifests(await renderChart("userland", "ide", gatewayValues()));
  assert.deepEqual(
    routes(chosen).map((r) => r.metadata.name),
    ["userland-proxy", "userland-auth", "userland-user-manager"],
  );
  assert.equal(chosen.filter((o) => o.kind === "Ingress").length, 0);
});

test("the routes' hostnames and backends are what the proxy and the auth service expect", async () => {
  for (const wildcard of [true, false]) {
    const objects = parseManifests(
      await renderChart("userland", "ide", gatewayValues({ wildcard, templates: ["jupyter"] })),
    );
    const [proxyRoute, authRoute] = routes(objects);
    assert.ok(proxyRoute && authRoute);
    const proxyEnv = env(objects, "userland-proxy");
    const hostRoutes = {
      baseDomain: proxyEnv.get("PROXY_BASE_DOMAIN"),
      defaultTemplate: proxyEnv.get("PROXY_DEFAULT_TEMPLATE"),
      hostTemplates: new Map(
        (proxyEnv.get("PROXY_HOST_TEMPLATES") ?? "").split(",").map((p) => p.split("=") as [string, string]),
      ),
    };
    // Each hostname (the wildcard stands for any Template) picks the Template the proxy would.
    const expected: Record<string, string> = {
      "ide.example.org": "code-server",
      "code.uni.example": "code-server",
      ...(wildcard ? { "*.ide.example.org": "jupyter" } : { "jupyter.ide.example.org": "jupyter" }),
    };
    assert.deepEqual(
      [...proxyRoute.spec.hostnames].sort(),
      Object.keys(expected).sort(),
      `wildcard ${wildcard}`,
    );
    for (const [hostname, template] of Object.entries(expected))
      assert.equal(templateForHost(hostname.replace("*", "jupyter"), hostRoutes), template, hostname);

    // The auth route's host is where browsers are sent to log in (the auth service's public URL).
    const authPublic = new URL(env(objects, "userland-auth").get("AUTH_PUBLIC_URL") ?? "");
    assert.deepEqual(authRoute.spec.hostnames, [authPublic.hostname]);
    assert.equal(new URL(proxyEnv.get("PROXY_LOGIN_URL") ?? "").hostname, authPublic.hostname);

    // Backends: each route sends to its component's Service, on the port that Service serves.
    for (const [route, service] of [
      [proxyRoute, "userland-proxy"],
      [authRoute, "userland-auth"],
    ] as const) {
      const backend = route.spec.rules[0]?.backendRefs[0];
      const svc = objects.find((o) => o.kind === "Service" && o.metadata.name === service);
      const ports = (svc?.spec as { ports: { port: number; targetPort: string }[] }).ports;
      assert.equal(backend?.name, service);
      assert.deepEqual(
        ports.filter((p) => p.port === backend?.port).map((p) => p.targetPort),
        ["http"],
        `${service} serves port ${backend?.port}`,
      );
      assert.deepEqual(route.spec.parentRefs, [{ name: "userland", sectionName: "https" }]);
    }
  }
});

test("the HTTPRoutes and a sample Gateway are accepted by the API server with the Gateway API CRDs", async (t) => {
  await installToolCrds(CRDS);
  const ns = await testNamespace(t, "gateway");
  const gatewayClass: KubeObject = {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "GatewayClass",
    metadata: { name: `${ns}-example` },
    spec: { controllerName: "example.org/gateway-controller" },
  };
  t.after(async () => {
    await kubectl([
      "delete",
      "gatewayclass",
      gatewayClass.metadata.name,
      "--ignore-not-found",
      "--wait=false",
    ]);
  });
  // The deploy/README.md Gateway: wildcard and apex listeners with TLS.
  const gateway: KubeObject = {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { name: "userland", namespace: ns },
    spec: {
      gatewayClassName: gatewayClass.metadata.name,
      listeners: [
        ["https", "*.ide.example.org"],
        ["https-apex", "ide.example.org"],
      ].map(([name, hostname]) => ({
        name,
        protocol: "HTTPS",
        port: 443,
        hostname,
        tls: { certificateRefs: [{ name: "userland-wildcard-tls" }] },
      })),
    },
  };
  const objects = parseManifests(
    await renderChart("userland", ns, gatewayValues({ parentRefs: [{ name: "userland" }] })),
  );
  const report = await applyManifests(ns, [gatewayClass, gateway, ...routes(objects)]);
  assert.match(report, /httproute\.gateway\.networking\.k8s\.io\/userland-proxy serverside-applied/);
  assert.match(report, /httproute\.gateway\.networking\.k8s\.io\/userland-auth serverside-applied/);

  // The CRD's validation is live (so the apply above was checked): a malformed hostname is refused.
  const [proxyRoute] = routes(objects);
  assert.ok(proxyRoute);
  const broken = {
    ...proxyRoute,
    metadata: { ...proxyRoute.metadata, name: "broken" },
    spec: { ...proxyRoute.spec, hostnames: ["Not A Host"] },
  };
  const refused = await kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], JSON.stringify(broken));
  assert.notEqual(refused.code, 0, "a malformed hostname is refused");
  assert.match(refused.stderr, /hostnames/);
});
