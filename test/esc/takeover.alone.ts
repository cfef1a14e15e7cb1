/**
 * Taking over an ESC Userland's children (issue 12, item 4): a claim is adopted only when it is
 * provably the same user's (operator/ownership.ts); ESC's Deployment and Service are replaced.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, LABELS } from "../../api/naming.ts";
import { testNamespace } from "../support/cluster.ts";
import { listEvents } from "../support/events.ts";
import { startOperator } from "../support/operator.ts";
import {
  createTemplate,
  createUserland,
  getDeployment,
  getPvc,
  getService,
  simpleTemplateSpec,
  waitForPhase,
} from "../support/resources.ts";
import { createEsc, escChildren, escUserland, installEscCrds } from "./support.ts";

const HOME = {
  name: "home",
  pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
};

test("an ESC Userland's children are taken over by the same user's Userland: claim adopted and kept, Deployment and Service replaced", async (t) => {
  const ns = await testNamespace(t);
  await installEscCrds(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1", { volumes: [HOME] }));
  const names = childNames("code", "ada");

  const esc = await createEsc<{ metadata: { name: string; uid: string } }>(ns, escUserland("ada", "code"));
  await escChildren(ns, esc, "code", ["home"]);
  // Bob's ESC claim, and a Userland "bob" for another identity ("Bob"): not provably his.
  const escBob = await createEsc<{ metadata: { name: string; uid: string } }>(ns, escUserland("bob", "code"));
  await escChildren(ns, escBob, "code", ["home"]);
  const before = {
    pvc: await getPvc(ns, names.pvc("home")),
    deployment: await getDeployment(ns, names.deployment),
    service: await getService(ns, names.service),
  };

  await createUserland(ns, "ada", "ada", "code");
  const ada = await waitForPhase(ns, "ada", "Starting");
  const pvc = await getPvc(ns, names.pvc("home"));
  assert.equal(pvc?.metadata?.uid, before.pvc?.metadata?.uid, "the same claim: the data is kept");
  assert.ok(pvc?.metadata?.labels?.[LABELS.userHash], "labelled as this user's");
  assert.deepEqual(pvc?.metadata?.ownerReferences ?? [], [], "Retain: ESC's owner reference is gone");
  const deployment = await getDeployment(ns, names.deployment);
  assert.notEqual(deployment?.metadata?.uid, before.deployment?.metadata?.uid, "ESC's Deployment replaced");
  assert.equal(deployment?.metadata?.ownerReferences?.[0]?.uid, ada.metadata.uid);
  assert.deepEqual(deployment?.spec?.template.spec?.volumes, [
    { name: "home", persistentVolumeClaim: { claimName: names.pvc("home") } },
  ]);
  const service = await getService(ns, names.service);
  assert.notEqual(service?.metadata?.uid, before.service?.metadata?.uid, "ESC's Service replaced");
  const reasons = (await listEvents(ns, "ada")).map((e) => `${e.reason}: ${e.message}`);
  assert.ok(
    reasons.some((r) =>
      /^Adopted: Adopted PersistentVolumeClaim code-ada-pvc-home from ESC Userland ada/.test(r),
    ),
    reasons.join("\n"),
  );
  assert.ok(reasons.some((r) => /^Replaced: Replaced Deployment code-ada of ESC Userland ada/.test(r)));

  await createUserland(ns, "bob", "Bob", "code");
  const bob = await waitForPhase(ns, "bob", "Failed");
  assert.match(bob.status?.message ?? "", /PersistentVolumeClaim code-bob-pvc-home .*not provably/);
  const bobPvc = await getPvc(ns, childNames("code", "bob").pvc("home"));
  assert.equal(bobPvc?.metadata?.labels?.[LABELS.userHash], undefined);
  assert.equal(bobPvc?.metadata?.ownerReferences?.[0]?.uid, escBob.metadata.uid, "left as ESC made it");
});
