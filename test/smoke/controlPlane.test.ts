/** The test control plane is real: kwok runs pods, the garbage collector collects, RBAC refuses. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { k8s } from "../../lib/kube.ts";
import { eventually, serviceAccountToken, testCluster, testNamespace } from "../support/cluster.ts";
import { connect } from "../../cluster/harness/connect.ts";

test("a Deployment's pod is scheduled onto a kwok node and becomes Ready", async (t) => {
  const { kc } = await testCluster();
  const namespace = await testNamespace(t);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "smoke" },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "smoke" } },
        template: {
          metadata: { labels: { app: "smoke" } },
          spec: { containers: [{ name: "main", image: "registry.invalid/smoke:1" }] },
        },
      },
    },
  });
  const pod = await eventually("a Ready pod", async () => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: "app=smoke" });
    return pods.items.find((p) =>
      p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
  });
  assert.match(pod.spec?.nodeName ?? "", /^kwok-node-/);
  const deployment = await eventually("the Deployment to report 1 available replica", async () => {
    const d = await apps.readNamespacedDeployment({ name: "smoke", namespace });
    return d.status?.availableReplicas === 1 ? d : undefined;
  });
  assert.equal(deployment.status?.readyReplicas, 1);
});

test("the garbage collector deletes an owned object after its owner", async (t) => {
  const { kc } = await testCluster();
  const namespace = await testNamespace(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "owner" } } });
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: {
        name: "owned",
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata?.uid ?? "" },
        ],
      },
    },
  });
  await core.deleteNamespacedConfigMap({ name: "owner", namespace });
  await eventually("the owned ConfigMap to be collected", async () => {
    try {
      await core.readNamespacedConfigMap({ name: "owned", namespace });
      return false;
    } catch (error) {
      return (error as { code?: number }).code === 404;
    }
  });
});

test("RBAC is enforced for real ServiceAccount tokens", async (t) => {
  const { kubeConfigForToken } = await testCluster();
  const namespace = await testNamespace(t);
  const token = await serviceAccountToken(namespace, "nobody");
  const core = kubeConfigForToken(token, namespace).makeApiClient(k8s.CoreV1Api);
  await assert.rejects(
    core.listNamespacedSecret({ namespace }),
    (error: { code?: number }) => error.code === 403,
  );
  // The token is real: the API server knows who it belongs to.
  const auth = kubeConfigForToken(token).makeApiClient(k8s.AuthenticationV1Api);
  const review = await auth.createSelfSubjectReview({ body: {} });
  assert.equal(review.status?.userInfo?.username, `system:serviceaccount:${namespace}:nobody`);
});

test("an unreachable control plane is an error, never a silent skip", async () => {
  await assert.rejects(connect(undefined), /not set: run the tests with `npm test`/);
  const { info } = await testCluster();
  const dir = mkdtempSync(join(tmpdir(), "userland-"));
  const bogus = join(dir, "cluster.json");
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  writeFileSync(bogus, JSON.stringify({ ...info, server: "https://127.0.0.1:1" }));
  await assert.rejects(connect(bogus), /unreachable/);
});
