/**
 * How a start is reported: Ready only once the Userland's Service routes to its pod, and why it
 * stalls. Real control plane, kwok pods, the real scheduler, EndpointSlice and PV controllers; a
 * pod on a node nobody runs gets its status written here, as its kubelet would.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import { childNames } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { listEvents } from "../../test/support/events.ts";
import { paths } from "../../api/kubePaths.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import { POD_OUTSIDE_RANGES } from "../policyRanges.ts";
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

/** The Userland's Ready reason once it is `reason`. */
const waitForReason = (ns: string, name: string, reason: string, timeoutMs = 30_000) =>
  eventually(
    `Userland ${name}'s Ready reason to be ${reason}`,
    async () => {
      const u = await getUserland(ns, name);
      return u.status?.conditions?.find((c) => c.type === "Ready")?.reason === reason ? u : undefined;
    },
    timeoutMs,
  );
const stalledOf = (u: Userland) => u.status?.conditions?.find((c) => c.type === "Stalled");
const warnings = async (ns: string, name: string) =>
  (await listEvents(ns, name)).filter((e) => e.type === "Warning").map((e) => e.reason);

test("no node can take the pod: the scheduler's reason in status and a Warning, cleared when it fits", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  const spec = simpleTemplateSpec();
  spec.template.spec = { ...spec.template.spec, nodeSelector: { "userland.dev/test-pool": "none" } };
  await createTemplate(ns, "code", spec);
  await createUserland(ns, "ada", "ada", "code");

  const stuck = await waitForReason(ns, "ada", "Unschedulable");
  assert.equal(stuck.status?.phase, "Starting");
  assert.match(
    stuck.status?.message ?? "",
    /^No node can take the environment: .*node\(s\) didn't match Pod's node affinity\/selector/,
  );
  assert.doesNotMatch(
    stuck.status?.message ?? "",
    /\d+\/\d+ nodes/,
    "no node counts, which change with the cluster",
  );
  assert.equal(stalledOf(stuck)?.status, "True");
  await eventually("one Warning Event", async () => (await warnings(ns, "ada")).includes("Unschedulable"));

  await patchTemplate(ns, "code", { spec: { template: { spec: { nodeSelector: null } } } });
  const ready = await waitForPhase(ns, "ada", "Ready");
  assert.equal(stalledOf(ready)?.status, "False");
  assert.deepEqual(
    ready.status?.progress?.steps.map((s) => s.step),
    ["Scheduled", "ContainerStarted", "AppReady", "Reachable"],
  );
  await eventually("a Recovered Event", async () =>
    (await listEvents(ns, "ada")).some((e) => e.reason === "Recovered"),
  );
  assert.deepEqual(await warnings(ns, "ada"), ["Unschedulable"], "one Warning for the one cause");
});

test("a start's problems from the pod's and the claim's status, one after the other, each cleared by the next step", async (t) => {
  const ns = await testNamespace(t);
  const rest = await adminRest();
  // A node no kubelet or kwok runs: its pod's status is written here, as a kubelet would.
  const node = `ghost-${ns}`;
  await rest.create("/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: node } });
  t.after(() => rest.delete(`/api/v1/nodes/${node}`));
  const storageClass = `missing-${ns}`;
  // The chart's default pod range, which is not this cluster's (issue 41 item 3).
  await startOperator(t, ns, { env: { OPERATOR_POLICY_POD_CIDRS: "10.244.0.0/16" } });
  const spec = simpleTemplateSpec("registry.example/ide:7", {
    volumes: [
      {
        name: "home",
        pvcSpec: {
          storageClassName: storageClass,
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "1Gi" } },
        },
      },
    ],
  });
  spec.template.spec = { ...spec.template.spec, nodeName: node };
  await createTemplate(ns, "code", spec);
  await createUserland(ns, "ada", "ada", "code");
  const names = childNames("code", "ada");

  // The volume: the PV controller's Warning names the missing class.
  const volume = await waitForReason(ns, "ada", "VolumeProvisioningFailed");
  assert.equal(
    volume.status?.message,
    `The volume "home" (storage class "${storageClass}") cannot be provisioned: storageclass.storage.k8s.io "${storageClass}" not found`,
  );
  // An admin provides the volume: bound, and the start goes on.
  const pv = `pv-${ns}`;
  await rest.create("/api/v1/persistentvolumes", {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: pv },
    spec: {
      storageClassName: storageClass,
      capacity: { storage: "1Gi" },
      accessModes: ["ReadWriteOnce"],
      hostPath: { path: "/nowhere" },
      claimRef: { namespace: ns, name: names.pvc("home") },
    },
  });
  t.after(() => rest.delete(`/api/v1/persistentvolumes/${pv}`));
  await waitForReason(ns, "ada", "PodNotReady");

  const [pod] = (
    await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns), {
      query: { labelSelector: `userland.dev/instance=${names.deployment}` },
    })
  ).items;
  const podStatus = (status: V1Pod["status"]) =>
    rest.patch(paths.namespaced("", "v1", "pods", ns, pod?.metadata?.name, "status"), { status });
  const base = { name: "ide", image: "registry.example/ide:7", imageID: "", restartCount: 0, ready: false };
  const scheduled = { type: "PodScheduled", status: "True" };

  await podStatus({
    conditions: [scheduled],
    containerStatuses: [
      { ...base, state: { waiting: { reason: "ErrImagePull", message: "manifest unknown" } } },
    ],
  });
  const image = await waitForReason(ns, "ada", "ImagePullFailed");
  assert.equal(
    image.status?.message,
    'The image "registry.example/ide:7" of container "ide" cannot be pulled: manifest unknown',
  );

  await podStatus({
    conditions: [scheduled],
    containerStatuses: [
      {
        ...base,
        restartCount: 1,
        state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 10s" } },
        lastState: {
          terminated: { exitCode: 1, reason: "Error", message: "starting\nconfig.yaml: no such file\n" },
        },
      },
    ],
  });
  const crash = await waitForReason(ns, "ada", "ContainerCrashing");
  assert.equal(
    crash.status?.message,
    'The container "ide" stopped with exit code 1; restarted 1 time. Its last output:\nstarting\nconfig.yaml: no such file',
  );

  // As the API sends it (client-node types say Date).
  const started = new Date(Date.now() - 60_000).toISOString() as unknown as Date;
  const running = { ...base, restartCount: 1, state: { running: { startedAt: started } } };
  await podStatus({
    phase: "Running",
    podIP: "198.18.200.7",
    podIPs: [{ ip: "198.18.200.7" }],
    conditions: [scheduled, { type: "Ready", status: "False" }],
    containerStatuses: [running],
  });
  const probe = await waitForReason(ns, "ada", "ReadinessProbeFailing");
  // Its address is outside the pod range the NetworkPolicies were rendered with: the admin is told.
  const outside = await eventually("the Warning about the pod ranges", async () =>
    (await listEvents(ns, "ada")).find((e) => e.reason === POD_OUTSIDE_RANGES),
  );
  assert.equal(outside.type, "Warning");
  assert.match(outside.message ?? "", /198\.18\.200\.7, outside the pod ranges .*10\.244\.0\.0\/16/);
  assert.match(probe.status?.message ?? "", /does not pass its readiness check \(container "ide"\)/);

  await podStatus({
    phase: "Running",
    podIP: "198.18.200.7",
    podIPs: [{ ip: "198.18.200.7" }],
    conditions: [scheduled, { type: "Ready", status: "True" }],
    containerStatuses: [{ ...running, ready: true }],
  });
  const ready = await waitForPhase(ns, "ada", "Ready");
  assert.equal(stalledOf(ready)?.status, "False");
  assert.deepEqual(
    ready.status?.progress?.steps.map((s) => s.step),
    ["Scheduled", "VolumeBound", "ContainerStarted", "AppReady", "Reachable"],
  );
  await eventually("a Warning Event for each cause", async () => {
    const seen = await warnings(ns, "ada");
    return [
      "VolumeProvisioningFailed",
      "ImagePullFailed",
      "ContainerCrashing",
      "ReadinessProbeFailing",
    ].every((r) => seen.filter((s) => s === r).length === 1);
  });
});
