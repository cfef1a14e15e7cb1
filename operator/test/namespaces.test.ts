/**
 * USERLAND_WATCH_NAMESPACES: one operator reconciles Userlands in several namespaces (children in
 * the Userland's own, its Template from its own); its Lease stays in its own namespace. Every
 * namespace ("*"): test/namespaces/everyNamespace.alone.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperatorServing } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getDeployment,
  getService,
  getUserland,
  simpleTemplateSpec,
  templatesPath,
  tryGet,
  waitForPhase,
} from "../../test/support/resources.ts";
import { resources } from "../resources.ts";
import type { Template } from "../../api/v1alpha1/index.ts";
import { listEvents } from "../../test/support/events.ts";

test("a list: each Userland's children land in its namespace, with its own namespace's Template", async (t) => {
  const own = await testNamespace(t, "own");
  const a = await testNamespace(t, "course");
  const b = await testNamespace(t, "course");
  const unserved = await testNamespace(t, "other");
  await startOperatorServing(t, own, [a, b]);

  // The same Template name in both namespaces, with different images: each Userland gets its own's.
  await createTemplate(a, "code", simpleTemplateSpec("registry.example/a:1"));
  await new Promise((r) => setTimeout(r, 1100)); // creationTimestamp has whole seconds: b's is younger
  await createTemplate(b, "code", simpleTemplateSpec("registry.example/b:1"));
  await createUserland(a, "ada", "ada", "code");
  await createUserland(b, "ada", "ada", "code");
  // Only in the unserved namespace, and a Userland whose Template exists only in another namespace.
  await createTemplate(unserved, "code", simpleTemplateSpec());
  await createUserland(unserved, "ada", "ada", "code");
  await createTemplate(a, "jupyter", simpleTemplateSpec());
  await createUserland(b, "grace", "grace", "jupyter");

  const names = childNames("code", "ada");
  for (const [ns, image] of [
    [a, "registry.example/a:1"],
    [b, "registry.example/b:1"],
  ] as const) {
    await waitForPhase(ns, "ada", "Ready");
    const deployment = await getDeployment(ns, names.deployment);
    assert.equal(deployment?.spec?.template.spec?.containers[0]?.image, image);
    assert.ok(await getService(ns, names.service));
  }
  const grace = await eventually("grace's Userland to report its missing Template", async () => {
    const u = await getUserland(b, "grace");
    return u.status?.phase ? u : undefined;
  });
  assert.notEqual(grace.status?.phase, "Ready");
  assert.equal(await getDeployment(b, childNames("jupyter", "grace").deployment), undefined);
  assert.equal(await getDeployment(a, childNames("jupyter", "grace").deployment), undefined);

  // Nothing happens in a namespace not served.
  assert.equal((await getUserland(unserved, "ada")).status, undefined);
  assert.equal(await getDeployment(unserved, names.deployment), undefined);

  // The younger "code" says that the older one serves its name, and an Event says so; the older
  // one carries no such condition. Once the older is gone, the younger is served.
  const nameServed = async (ns: string) =>
    (await tryGet<Template>(templatesPath(ns, "code")))?.status?.conditions?.find(
      (c) => c.type === "NameServed",
    );
  const shadowed = await eventually("b's code to report the older Template", () => nameServed(b));
  assert.equal(shadowed.status, "False");
  assert.match(shadowed.message, new RegExp(`namespace "${a}" is older`));
  assert.ok((await listEvents(b, "code")).some((e) => e.reason === "DuplicateName"));
  assert.equal(await nameServed(a), undefined);
  await (await adminRest()).delete(templatesPath(a, "code"));
  await eventually("b's code to be served", async () => (await nameServed(b))?.status === "True");

  // The Lease is in the operator's own namespace, not in the served ones.
  assert.ok(await tryGet(resources.Lease.path(own, "userland-operator")));
  assert.equal(await tryGet(resources.Lease.path(a, "userland-operator")), undefined);
});
