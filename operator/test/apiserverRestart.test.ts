/**
 * Watches survive an API server restart: this test owns a private control plane, because stopping
 * the shared one would break every other test running beside it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import { API_VERSION, type Userland } from "../../api/v1alpha1/index.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import { eventually, privateControlPlane, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import { simpleTemplateSpec } from "../../test/support/resources.ts";
import { resources } from "../resources.ts";

test("the operator keeps reconciling after kube-apiserver restarts mid-run", async (t) => {
  const { controlPlane, cluster } = await privateControlPlane(t, "restart");
  const ns = await testNamespace(t, "restart", cluster);
  // A Lease that outlasts the outage: the informers, not a new leadership term, must recover.
  const operator = await startOperator(t, ns, {
    cluster,
    env: { OPERATOR_LEASE_DURATION: "90s", OPERATOR_RENEW_DEADLINE: "60s" },
  });
  const rest = new KubeRest(cluster.kc, "userland-tests");
  t.after(() => rest.close());
  const ul = (name: string) => resources.Userland.path(ns, name);
  const create = (name: string) =>
    rest.create(resources.Userland.path(ns), {
      apiVersion: API_VERSION,
      kind: "Userland",
      metadata: { name },
      spec: { user: name, templateName: "code" },
    });
  const phase = (name: string) => async () =>
    (await rest.get<Userland>(ul(name))).status?.phase === "Ready" ? true : undefined;

  await rest.create(resources.Template.path(ns), {
    apiVersion: API_VERSION,
    kind: "Template",
    metadata: { name: "code" },
    spec: simpleTemplateSpec(),
  });
  await create("before");
  await eventually("before to be Ready", phase("before"));

  await controlPlane.stopApiServer();
  await new Promise((r) => setTimeout(r, 3000));
  await controlPlane.startApiServer();
  assert.equal(operator.child.exitCode, null, "the operator survived the outage");

  await create("after");
  await eventually("after to be Ready", phase("after"), 60_000);
  // The watches on owned objects work again too: a deleted Deployment comes back.
  const deployment = resources.Deployment.path(ns, childNames("code", "before").deployment);
  const old = await rest.get<{ metadata: { uid: string } }>(deployment);
  await rest.delete(deployment);
  await eventually(
    "the Deployment to be restored",
    async () => {
      const d = await rest.get<{ metadata: { uid: string } }>(deployment).catch(() => undefined);
      return d && d.metadata.uid !== old.metadata.uid;
    },
    60_000,
  );
  assert.match(operator.logs(), /watch failed; re-listing/, "the outage was noticed and recovered from");
});
