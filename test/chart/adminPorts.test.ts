/**
 * Nothing the internet reaches serves /metrics (issue 13): every backend of the chart's Ingresses
 * and HTTPRoutes is a Service port that sends to the container port `http`, and each of those
 * containers serves /metrics on a port of its own, `admin` (lib/adminServer.ts; the services'
 * tests show their `http` port answers /metrics with no counters).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { chartDir, helm, parseManifests, renderChart, type KubeObject } from "./support.ts";

interface ServicePort {
  name: string;
  port: number;
  targetPort: string | number;
}
interface Service extends KubeObject {
  spec: { selector: Record<string, string>; ports: ServicePort[] };
}
interface Deployment extends KubeObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: { name: string; ports: { name: string; containerPort: number }[] }[] };
    };
  };
}
interface Backend {
  /** The route, for messages: "Ingress userland-auth". */
  route: string;
  service: string;
  /** A port name (Ingress) or number (Ingress, HTTPRoute). */
  port: string | number;
}
interface IngressBackend {
  service: { name: string; port: { name?: string; number?: number } };
}
interface Ingress extends KubeObject {
  spec: { rules: { http: { paths: { backend: IngressBackend }[] } }[] };
}
interface HTTPRoute extends KubeObject {
  spec: { rules: { backendRefs: { name: string; port: number }[] }[] };
}

/** Every backend of every Ingress and HTTPRoute the chart rendered. */
function backends(objects: KubeObject[]): Backend[] {
  const found: Backend[] = [];
  for (const o of objects) {
    const route = `${o.kind} ${o.metadata.name}`;
    if (o.kind === "Ingress")
      for (const rule of (o as Ingress).spec.rules)
        for (const { backend } of rule.http.paths)
          found.push({
            route,
            service: backend.service.name,
            port: backend.service.port.name ?? backend.service.port.number ?? "",
          });
    if (o.kind === "HTTPRoute")
      for (const rule of (o as HTTPRoute).spec.rules)
        for (const ref of rule.backendRefs) found.push({ route, service: ref.name, port: ref.port });
  }
  return found;
}

/** The problems with one backend: each says which route reaches what. */
function backendProblems(objects: KubeObject[], b: Backend): string[] {
  const where = `${b.route} → Service ${b.service} port ${b.port}`;
  const service = objects.find((o): o is Service => o.kind === "Service" && o.metadata.name === b.service);
  if (!service) return [`${where}: no such Service`];
  const problems: string[] = [];
  // The routed Service has the main port only, so no port of it can be the admin listener.
  for (const p of service.spec.ports)
    if (p.targetPort !== "http")
      problems.push(`${where}: the Service also sends ${p.name} to ${p.targetPort}`);
  const port = service.spec.ports.find((p) => p.name === b.port || p.port === b.port);
  if (!port) return [...problems, `${where}: the Service has no such port`];
  const deployment = objects.find(
    (o): o is Deployment =>
      o.kind === "Deployment" &&
      Object.entries(service.spec.selector).every(
        ([k, v]) => (o as Deployment).spec.template.metadata.labels[k] === v,
      ),
  );
  const container = deployment?.spec.template.spec.containers[0];
  if (!container) return [...problems, `${where}: selects no Deployment`];
  const target = container.ports.find((p) => p.name === port.targetPort);
  const admin = container.ports.find((p) => p.name === "admin");
  if (target?.name !== "http")
    problems.push(`${where}: sends to container port ${port.targetPort}, not http`);
  if (!admin) problems.push(`${where}: ${deployment.metadata.name} has no admin port for /metrics`);
  else if (admin.containerPort === target?.containerPort)
    problems.push(
      `${where}: ${deployment.metadata.name}'s admin port is its routed port ${admin.containerPort}`,
    );
  return problems;
}

const routed = {
  // The defaults: Ingresses, and the console on the base domain.
  Ingress: {},
  HTTPRoute: {
    ingress: { enabled: false },
    gateway: { enabled: true, parentRefs: [{ name: "userland", sectionName: "https" }] },
  },
};

for (const [kind, values] of Object.entries(routed)) {
  test(`no ${kind} backend is a port that serves /metrics`, async () => {
    const objects = parseManifests(await renderChart("userland", "ide", values));
    const all = backends(objects);
    // The proxy (students), the auth service (login) and the user-manager (console, API).
    assert.deepEqual([...new Set(all.map((b) => b.service))].sort(), [
      "userland-auth",
      "userland-proxy",
      "userland-user-manager",
    ]);
    assert.deepEqual(
      all.flatMap((b) => backendProblems(objects, b)),
      [],
    );
  });
}

test("each fastify service's metrics get a Service of their own, which no route names", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", routed.HTTPRoute));
  const named = new Set(backends(objects).map((b) => b.service));
  for (const component of ["auth", "user-manager"]) {
    const admin = objects.find(
      (o): o is Service => o.kind === "Service" && o.metadata.name === `userland-${component}-admin`,
    );
    assert.ok(admin, `Service userland-${component}-admin`);
    assert.deepEqual(
      admin.spec.ports.map((p) => [p.name, p.port, p.targetPort]),
      [["http-metrics", 9090, "admin"]],
    );
    assert.equal(named.has(admin.metadata.name), false);
  }
});

test("an admin port equal to the routed port is refused at render time", async () => {
  const dir = mkdtempSync(join(tmpdir(), "userland-values-"));
  try {
    for (const [key, values] of [
      ["auth", { auth: { port: 8080, adminPort: 8080 } }],
      ["userManager", { userManager: { port: 8080, adminPort: 8080 } }],
    ] as const) {
      const file = join(dir, `${key}.json`);
      writeFileSync(file, JSON.stringify(values));
      const result = await helm(["template", "userland", chartDir, "--namespace", "ide", "--values", file]);
      assert.notEqual(result.code, 0, `${key}.adminPort = ${key}.port renders`);
      assert.match(result.stderr, new RegExp(`${key}\\.adminPort must differ from ${key}\\.port`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
