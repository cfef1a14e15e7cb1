/**
 * The real kubectl against the real API server with the generated CRDs: the kinds' names and the
 * category they share each name exactly what they should. A category named like a kind ("userland")
 * made `kubectl get userland NAME` fail and `kubectl delete userland --all` delete Templates too.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CATEGORY, customResourceDefinitions } from "../../api/crds.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { createTemplate, createUserland, simpleTemplateSpec } from "../support/resources.ts";
import { kubectl, ok } from "./support.ts";

test("the CRDs' category is no kind's name, plural, singular or short name", () => {
  for (const crd of customResourceDefinitions) {
    const names = crd.spec.names;
    assert.deepEqual(names.categories, [CATEGORY]);
    const taken = [names.kind, names.plural, names.singular, ...(names.shortNames ?? [])].map((n) =>
      (n ?? "").toLowerCase(),
    );
    assert.ok(!taken.includes(CATEGORY), `${CATEGORY} is also a name of ${names.kind}`);
  }
});

test("kubectl get/delete name one kind; the category lists both", async (t) => {
  await installCrds();
  const ns = await testNamespace(t, "kubectl");
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "alice", "alice", "code");
  // A fresh discovery cache: one left by an older run could still hold the old category.
  const cacheDir = mkdtempSync(join(tmpdir(), "userland-kubectl-cache-"));
  t.after(() => rmSync(cacheDir, { recursive: true, force: true }));
  const run = async (...args: string[]) =>
    ok(await kubectl([`--cache-dir=${cacheDir}`, "-n", ns, ...args]), `kubectl ${args.join(" ")}`)
      .trim()
      .split("\n")
      .filter(Boolean)
      .sort();

  await t.test("kubectl get userland NAME returns the Userland", async () => {
    assert.deepEqual(await run("get", "userland", "alice", "-o", "name"), ["userland.userland.dev/alice"]);
    assert.deepEqual(await run("get", "ul", "alice", "-o", "name"), ["userland.userland.dev/alice"]);
    assert.deepEqual(await run("get", "template", "code", "-o", "name"), ["template.userland.dev/code"]);
  });

  await t.test("kubectl delete userland --all --dry-run=server names only Userlands", async () => {
    const deleted = await run("delete", "userland", "--all", "--dry-run=server", "-o", "name");
    assert.deepEqual(deleted, ["userland.userland.dev/alice"]);
    // A dry run: both objects are still there.
    assert.deepEqual(await run("get", "templates,userlands", "-o", "name"), [
      "template.userland.dev/code",
      "userland.userland.dev/alice",
    ]);
  });

  await t.test(`kubectl get ${CATEGORY} lists Templates and Userlands`, async () => {
    assert.deepEqual(await run("get", CATEGORY, "-o", "name"), [
      "template.userland.dev/code",
      "userland.userland.dev/alice",
    ]);
  });
});
