/**
 * The chart wires the teachers' console: the user-manager gets the auth service's keys, its login
 * URL and the console's public URL (and starts with them), and only /console and /api/v1 on the
 * base domain reach it, through the Ingress or the Gateway API route.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { consoleConfig, loadUserManagerConfig } from "../../services/user-manager/config.ts";
import { parseManifests, renderChart, type KubeObject } from "./support.ts";

interface EnvVar {
  name: string;
  value?: string;
}
interface Path {
  path: string;
  backend: { service: { name: string } };
}
interface Ingress extends KubeObject {
  spec: { rules: { host: string; http: { paths: Path[] } }[] };
}
interface HTTPRoute extends KubeObject {
  spec: {
    hostnames: string[];
    rules: { matches: { path: { value: string } }[]; backendRefs: { name: string }[] }[];
  };
}

const env = (objects: KubeObject[], deployment: string): Record<string, string> => {
  const d = objects.find((o) => o.kind === "Deployment" && o.metadata.name === deployment);
  const containers = (d?.spec as { template: { spec: { containers: { env: EnvVar[] }[] } } }).template.spec
    .containers;
  return Object.fromEntries((containers[0]?.env ?? []).map((e) => [e.name, e.value ?? ""]));
};

test("the user-manager starts with the console the chart configures, and the auth service can send teachers back to it", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", { baseDomain: "ide.example.org" }));
  const um = env(objects, "userland-user-manager");
  const console = consoleConfig(loadUserManagerConfig(um));
  assert.ok(console, "the console is on");
  assert.equal(console.url.href, "https://ide.example.org/console/");
  assert.deepEqual(console.keys, {
    url: new URL("http://userland-auth.ide.svc.cluster.local:80/.well-known/jwks.json"),
  });
  assert.equal(console.loginUrl.href, "https://auth.ide.example.org/login");
  assert.equal(console.userPrefix, "userland:");
  assert.equal(console.groupPrefix, "userland:group:");
  // The proxy verifies sessions with the same keys.
  assert.equal(um.USER_MANAGER_SESSION_JWKS_URL, env(objects, "userland-proxy").PROXY_SESSION_JWKS_URL);

  const auth = env(objects, "userland-auth");
  assert.ok(
    auth.AUTH_ALLOWED_REDIRECT_HOSTS?.split(",").includes("ide.example.org"),
    "rd back to the console",
  );
  assert.ok(console.url.hostname.endsWith(auth.AUTH_COOKIE_DOMAIN ?? "-"), "the session cookie reaches it");

  const off = parseManifests(
    // The auth service's sign-out everywhere needs the console's session keys (chart.test.ts).
    await renderChart("userland", "ide", {
      userManager: { console: { enabled: false } },
      auth: { signOut: { enabled: false } },
    }),
  );
  assert.equal(consoleConfig(loadUserManagerConfig(env(off, "userland-user-manager"))), undefined);
  const offIngress = off.find(
    (o): o is Ingress => o.kind === "Ingress" && o.metadata.name === "userland-proxy",
  );
  assert.ok(offIngress);
  assert.ok(
    offIngress.spec.rules.every((r) =>
      r.http.paths.every((p) => p.backend.service.name === "userland-proxy"),
    ),
    "without the console, everything on the proxy's hosts stays with the proxy",
  );
});

test("the Ingress sends /console and /api/v1 on the base domain, and nothing else, to the user-manager", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", { baseDomain: "ide.example.org" }));
  const ingress = objects.find(
    (o): o is Ingress => o.kind === "Ingress" && o.metadata.name === "userland-proxy",
  );
  assert.ok(ingress);
  const routed = Object.fromEntries(
    ingress.spec.rules.map((r) => [r.host, r.http.paths.map((p) => `${p.path} ${p.backend.service.name}`)]),
  );
  assert.deepEqual(routed, {
    "*.ide.example.org": ["/ userland-proxy"],
    "ide.example.org": [
      "/console userland-user-manager",
      "/api/v1 userland-user-manager",
      "/ userland-proxy",
    ],
  });
});

test("with the Gateway API, a route of its own for the base domain's /console and /api/v1", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      baseDomain: "ide.example.org",
      ingress: { enabled: false },
      gateway: { enabled: true, parentRefs: [{ name: "shared" }] },
    }),
  );
  const route = objects.find(
    (o): o is HTTPRoute => o.kind === "HTTPRoute" && o.metadata.name === "userland-user-manager",
  );
  assert.ok(route);
  assert.deepEqual(route.spec.hostnames, ["ide.example.org"], "never a Template's host");
  assert.deepEqual(
    route.spec.rules.map((r) => [r.matches.map((m) => m.path.value), r.backendRefs.map((b) => b.name)]),
    [[["/console", "/api/v1"], ["userland-user-manager"]]],
  );
});
