/**
 * deploy/: every example Template and Userland is accepted by the real control plane (CRDs
 * installed), every Template's pod is valid by the API server's own validation (the server-side
 * dry run the operator makes), and the example rosters are what the user-manager imports.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { userlandNameFor } from "../../api/naming.ts";
import type { Template, Userland } from "../../api/v1alpha1/index.ts";
import { desiredChildren } from "../../operator/desired.ts";
import {
  csvRoster,
  jsonRoster,
  validateRoster,
  type JsonRosterItem,
} from "../../services/user-manager/roster.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import {
  adminRest,
  deploymentsPath,
  pvcsPath,
  servicesPath,
  templatesPath,
  userlandsPath,
} from "../support/resources.ts";
import { applyManifests, parseManifests, type KubeObject } from "./support.ts";

const deployDir = join(repoRoot, "deploy");
const files = readdirSync(deployDir).filter((f) => f.endsWith(".yaml"));
const objects = files.flatMap((f) =>
  parseManifests(readFileSync(join(deployDir, f), "utf8")).map((o) => ({ file: f, object: o })),
);
const templates = objects
  .filter((o) => o.object.kind === "Template")
  .map((o) => o.object as unknown as Template);
const userlands = objects
  .filter((o) => o.object.kind === "Userland")
  .map((o) => o.object as unknown as Userland);
const templateNames = new Set(templates.map((t) => t.metadata.name ?? ""));

test("deploy/ has the example Templates, each complete", () => {
  assert.deepEqual(
    [...templateNames].sort(),
    ["cloud9", "code-server", "jupyter", "phpmyadmin"],
    "code-server, Cloud9, MariaDB + phpMyAdmin and Jupyter",
  );
  for (const t of templates) {
    const name = t.metadata.name;
    assert.ok(t.spec.displayName && t.spec.description, `${name}: displayName and description`);
    assert.ok(t.spec.idleTimeout, `${name}: idleTimeout`);
    assert.ok(
      t.spec.defaultResources?.requests && t.spec.defaultResources.limits,
      `${name}: defaultResources`,
    );
    assert.ok((t.spec.volumes ?? []).length > 0, `${name}: a per-user volume`);
    for (const v of t.spec.volumes ?? [])
      assert.ok(v.reclaimPolicy, `${name}: volume ${v.name} says what happens to data`);
  }
  for (const { file, object } of objects) {
    assert.ok(["Template", "Userland"].includes(object.kind), `${file}: only Templates and Userlands`);
    assert.equal(
      object.metadata.namespace,
      undefined,
      `${file}: ${object.metadata.name} goes into the install namespace`,
    );
  }
});

test("MariaDB + phpMyAdmin is one environment: two containers, data on the student's volume, phpMyAdmin proxied", () => {
  const template = templates.find((t) => t.metadata.name === "phpmyadmin");
  assert.ok(template);
  const containers = template.spec.template.spec.containers;
  assert.deepEqual(
    containers.map((c) => c.name),
    ["mariadb", "phpmyadmin"],
  );
  const volume = template.spec.volumes?.[0]?.name;
  assert.ok(
    containers[0]?.volumeMounts?.some((m) => m.name === volume && m.mountPath === "/var/lib/mysql"),
    "MariaDB's data directory is the per-user volume",
  );
  const children = desiredChildren(probe(template), template);
  assert.equal(children.proxyPort, 80, "the proxy targets phpMyAdmin on port 80");
  const phpMyAdmin = containers[1]?.ports?.find((p) => p.containerPort === 80);
  assert.ok(phpMyAdmin, "phpMyAdmin listens on 80");
  assert.ok(
    containers[0]?.args?.includes("--bind-address=127.0.0.1"),
    "MariaDB is reachable only inside the pod",
  );
});

test("example Userlands use example Templates and the names the user-manager would choose", () => {
  assert.ok(userlands.length >= 3);
  for (const u of userlands) {
    assert.ok(
      templateNames.has(u.spec.templateName),
      `${u.metadata.name}: Template ${u.spec.templateName} exists`,
    );
    assert.equal(
      u.metadata.name,
      userlandNameFor(u.spec.user, u.spec.templateName),
      `the name for ${JSON.stringify(u.spec.user)}`,
    );
  }
});

test("the example rosters import without an invalid line", () => {
  const csv = validateRoster(csvRoster(readFileSync(join(deployDir, "roster.csv"), "utf8")), undefined);
  assert.deepEqual(csv.invalid, []);
  assert.deepEqual(csv.duplicates, []);
  assert.equal(csv.entries.length, 5);
  const json = JSON.parse(readFileSync(join(deployDir, "roster.json"), "utf8")) as {
    templateName: string;
    users: JsonRosterItem[];
  };
  const fromJson = validateRoster(jsonRoster(json.users), json.templateName);
  assert.deepEqual(fromJson.invalid, []);
  assert.ok(fromJson.entries.length >= 3);
  for (const e of [...csv.entries, ...fromJson.entries])
    assert.ok(templateNames.has(e.templateName), `${e.user}: Template ${e.templateName} is an example`);
});

/** The operator validates a Template with a probe Userland's children (operator/syncTemplate.ts). */
function probe(template: Template): Userland {
  return {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name: "example-probe", namespace: "x", uid: "00000000-0000-0000-0000-000000000000" },
    spec: { user: "example-probe", templateName: template.metadata.name ?? "", enabled: true },
  };
}

test("every example Template and Userland is accepted by the control plane", async (t) => {
  const ns = await testNamespace(t, "examples");
  await installCrds();
  const report = await applyManifests(
    ns,
    objects.map((o) => o.object),
  );
  const rest = await adminRest();
  for (const { file, object } of objects) {
    assert.match(
      report,
      new RegExp(`${object.metadata.name} serverside-applied`),
      `${file}: ${object.metadata.name}`,
    );
    const path =
      object.kind === "Template"
        ? templatesPath(ns, object.metadata.name)
        : userlandsPath(ns, object.metadata.name);
    const stored = await rest.get<KubeObject & { spec: unknown }>(path);
    // Nothing the admin wrote was pruned by the schema (unknown fields would be, silently).
    assertContains(stored.spec, object.spec, `${file}: ${object.metadata.name}.spec`);
  }
  await t.test(
    "each Template's pod, Service and volumes pass the API server's validation (dry run)",
    async () => {
      for (const template of templates) {
        const children = desiredChildren(
          { ...probe(template), metadata: { ...probe(template).metadata, namespace: ns } },
          template,
        );
        const strip = <T extends { metadata?: { ownerReferences?: unknown } }>(o: T): T => {
          const copy = structuredClone(o);
          delete copy.metadata?.ownerReferences;
          return copy;
        };
        await rest.create(deploymentsPath(ns), strip(children.deployment), { dryRun: "All" });
        await rest.create(servicesPath(ns), strip(children.service), { dryRun: "All" });
        for (const pvc of children.pvcs) await rest.create(pvcsPath(ns), strip(pvc), { dryRun: "All" });
      }
    },
  );
});

/** Every value in `written` is in `stored` (which may have more: defaults the API server fills in). */
function assertContains(stored: unknown, written: unknown, where: string): void {
  if (written !== null && typeof written === "object") {
    assert.ok(stored !== null && typeof stored === "object", `${where} is kept`);
    for (const [key, value] of Object.entries(written)) {
      assertContains((stored as Record<string, unknown>)[key], value, `${where}.${key}`);
    }
    return;
  }
  assert.equal(stored, written, `${where} is kept as written`);
}
