/**
 * How a start is reported: Ready only once the Userland's Service routes to its pod. Real control
 * plane, kwok pods, the real EndpointSlice controller.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1EndpointSlice } from "@kubernetes/client-node";
import { childNames } from "../../api/naming.ts";
import { paths } from "../../lib/kubeRest.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getDeployment,
  getUserland,
  patchTemplate,
  simpleTemplateSpec,
  waitForPhase,
} from "../../test/support/resources.ts";

const slicesOf = async (ns: string, service: string) =>
  (
    await (
      await adminRest()
    ).list<V1EndpointSlice>(paths.namespaced("discovery.k8s.io", "v1", "endpointslices", ns), {
      query: { labelSelector: `kubernetes.io/service-name=${service}` },
    })
  ).items;

const available = (d: V1Deployment | undefined) => (d?.status?.availableReplicas ?? 0) >= 1;

test("Ready means reachable: an available Deployment whose Service routes nowhere is Starting until its slice has a ready endpoint", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  // The Service targets a port name no container declares: the pod becomes ready, but the
  // EndpointSlice controller cannot route the Service's port to it.
  const spec = simpleTemplateSpec();
  spec.service = { ports: [{ name: "http", port: 80, targetPort: "web" }] };
  await createTemplate(ns, "code", spec);
  await createUserland(ns, "ada", "ada", "code");
  const names = childNames("code", "ada");

  await eventually("the Deployment to be available", async () =>
    available(await getDeployment(ns, names.deployment)),
  );
  const waiting = await eventually("the status to say why it is not Ready", async () => {
    const u = await getUserland(ns, "ada");
    const ready = u.status?.conditions?.find((c) => c.type === "Ready");
    return ready?.reason === "ServiceNotRouting" ? u : undefined;
  });
  assert.equal(waiting.status?.phase, "Starting");
  assert.equal(waiting.status?.message, "Starting: waiting for the Service to route to the pod");
  assert.ok(available(await getDeployment(ns, names.deployment)), "the Deployment is still available");
  const [slice] = await slicesOf(ns, names.service);
  assert.equal(
    slice?.metadata?.labels?.["app.kubernetes.io/managed-by"],
    "userland-operator",
    "the EndpointSlice controller copies the Service's labels: the operator's informer selects by them",
  );

  // The container now declares the port: the new pod is routed to, and the Userland turns Ready.
  await patchTemplate(ns, "code", {
    spec: {
      template: {
        spec: {
          containers: [
            { name: "ide", image: "registry.invalid/ide:1", ports: [{ name: "web", containerPort: 8080 }] },
          ],
        },
      },
    },
  });
  const ready = await waitForPhase(ns, "ada", "Ready");
  assert.equal(ready.status?.conditions?.find((c) => c.type === "Ready")?.reason, "Available");
  const routed = await slicesOf(ns, names.service);
  assert.ok(
    routed.some(
      (s) => s.ports?.some((p) => p.name === "http") && s.endpoints?.some((e) => e.conditions?.ready),
    ),
    "Ready only with a ready endpoint for the port",
  );
});
