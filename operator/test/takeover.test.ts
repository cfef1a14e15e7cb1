/**
 * Taking over existing objects (issue 12, item 4), against the real control plane: a claim with a
 * child's name is given to a Userland only when it is provably that Userland's (operator/ownership.ts),
 * and a Userland blocked by an object in the way recovers within seconds once it is gone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, LABELS } from "../../api/naming.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  deploymentsPath,
  getDeployment,
  getPvc,
  pvcsPath,
  simpleTemplateSpec,
  waitForPhase,
} from "../../test/support/resources.ts";

const HOME = {
  name: "home",
  pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
};

test("an unlabelled claim with a child's name is not someone else's to take: Blocked, then recovers within seconds once it is removed", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1", { volumes: [HOME] }));
  const rest = await adminRest();
  const names = childNames("code", "eve");
  // Someone's claim, made by hand with no labels and no owner.
  const foreign = await rest.create<{ metadata: { uid: string } }>(pvcsPath(ns), {
    metadata: { name: names.pvc("home") },
    spec: HOME.pvcSpec,
  });

  await createUserland(ns, "eve", "eve", "code");
  const blocked = await waitForPhase(ns, "eve", "Failed");
  assert.equal(blocked.status?.conditions?.find((c) => c.type === "Ready")?.reason, "VolumeNameConflict");
  assert.match(blocked.status?.message ?? "", /not provably this Userland's/);
  assert.match(blocked.status?.message ?? "", /kubectl label pvc code-eve-pvc-home userland.dev\/user-hash=/);
  assert.equal(await getDeployment(ns, names.deployment), undefined, "no environment mounts it");
  const untouched = await getPvc(ns, names.pvc("home"));
  assert.equal(untouched?.metadata?.uid, foreign.metadata.uid);
  assert.equal(untouched?.metadata?.labels?.[LABELS.userHash], undefined, "not relabelled");

  // Stay blocked long enough for the back-off to grow, then remove the claim: no event reaches the
  // operator (the claim was never in its label-selected cache), yet it recovers within seconds.
  await new Promise((r) => setTimeout(r, 4000));
  await rest.delete(pvcsPath(ns, names.pvc("home")));
  const removedAt = Date.now();
  await eventually(
    "eve's own claim and Deployment",
    async () => {
      const pvc = await getPvc(ns, names.pvc("home"));
      return pvc && pvc.metadata?.uid !== foreign.metadata.uid && (await getDeployment(ns, names.deployment));
    },
    15_000,
  );
  const recovered = await waitForPhase(ns, "eve", "Starting");
  assert.ok(Date.now() - removedAt < 15_000, "recovered within seconds");
  // Starting, not Ready: claims never bind on this control plane (no provisioner), so the pod waits.
  assert.equal(recovered.status?.phase, "Starting");
});

test("a Userland blocked by a foreign Deployment recovers within seconds after it is removed", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec());
  const rest = await adminRest();
  const names = childNames("code", "carol");
  const labels = { app: "not-userland" };
  await rest.create(deploymentsPath(ns), {
    metadata: { name: names.deployment },
    spec: {
      replicas: 0,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "x", image: "registry.invalid/x:1" }] },
      },
    },
  });
  await createUserland(ns, "carol", "carol", "code");
  const blocked = await waitForPhase(ns, "carol", "Failed");
  assert.equal(blocked.status?.conditions?.find((c) => c.type === "Ready")?.reason, "NameConflict");

  await new Promise((r) => setTimeout(r, 4000));
  await rest.delete(deploymentsPath(ns, names.deployment));
  const removedAt = Date.now();
  await waitForPhase(ns, "carol", "Ready");
  assert.ok(Date.now() - removedAt < 15_000, `recovered in ${Date.now() - removedAt} ms, within seconds`);
});
