/** The start's progress and problems from pod and claim status: pure, the clock passed in. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1ContainerStatus, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import { UserlandConditions, type Userland } from "../../api/v1alpha1/index.ts";
import { diagnoseStart, READINESS_GRACE_MS, type ClaimState } from "../startDiagnosis.ts";
import { computeStatus, firstStatusDelayMs, statusEvents } from "../userlandStatus.ts";

const now = new Date("2026-01-02T03:04:05Z");
const ago = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
const pod = (status: V1Pod["status"], created = ago(60)): V1Pod => ({
  metadata: { name: "p", namespace: "ns", creationTimestamp: created as unknown as Date },
  status,
});
const container = (state: Partial<V1ContainerStatus>): V1ContainerStatus => ({
  name: "ide",
  image: "registry.example/ide:1",
  imageID: "",
  ready: false,
  restartCount: 0,
  ...state,
});
const scheduled = { type: "PodScheduled", status: "True", lastTransitionTime: ago(58) as unknown as Date };
const observe = (pods: V1Pod[], claims: ClaimState[] = [], routable = false) =>
  diagnoseStart({ pods, claims, routable, previous: undefined, now });

test("an image that cannot be pulled is named", () => {
  const d = observe([
    pod({
      conditions: [scheduled],
      containerStatuses: [
        container({
          state: {
            waiting: {
              reason: "ImagePullBackOff",
              message: 'Back-off pulling image "registry.example/ide:1"',
            },
          },
        }),
      ],
    }),
  ]);
  assert.equal(d.problem?.reason, "ImagePullFailed");
  assert.match(
    d.problem?.message ?? "",
    /The image "registry\.example\/ide:1" of container "ide" cannot be pulled/,
  );
});

test("a crashing container: its exit code and the end of its output", () => {
  const output = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n");
  const d = observe([
    pod({
      conditions: [scheduled],
      containerStatuses: [
        container({
          restartCount: 2,
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: { terminated: { exitCode: 1, reason: "Error", message: output } },
        }),
      ],
    }),
  ]);
  assert.equal(d.problem?.reason, "ContainerCrashing");
  assert.match(
    d.problem?.message ?? "",
    /stopped with exit code 1; restarted 2 times\. Its last output:\nline 12\n/,
  );
  assert.match(d.problem?.message ?? "", /line 19$/);
  assert.doesNotMatch(d.problem?.message ?? "", /line 11\n/, "only the tail");
  const first = observe([
    pod({ containerStatuses: [container({ state: { terminated: { exitCode: 3 } } })] }),
  ]);
  assert.equal(first.problem?.reason, "ContainerCrashing", "the first exit already says it");
});

test("no node can take the pod: the scheduler's reasons, without node counts that change with the cluster", () => {
  const unschedulable = (message: string) =>
    observe([
      pod({ conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message }] }),
    ]).problem;
  const d = unschedulable("0/2 nodes are available: 2 Insufficient cpu.");
  assert.equal(d?.reason, "Unschedulable");
  assert.equal(d?.message, "No node can take the environment: Insufficient cpu");
  // A node added or removed changes the scheduler's counts, not the status the operator writes.
  const before = unschedulable(
    "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
  );
  const after = unschedulable(
    "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
  );
  assert.equal(
    before?.message,
    "No node can take the environment: pod has unbound immediate PersistentVolumeClaims",
  );
  assert.equal(after?.message, before?.message);
  assert.equal(
    unschedulable(
      "0/5 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 4 Insufficient memory. preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod.",
    )?.message,
    "No node can take the environment: node(s) had untolerated taint {node.kubernetes.io/unreachable: }, Insufficient memory",
  );
  assert.equal(unschedulable("")?.message, "No node can take the environment: the scheduler found none");
});

test("a claim that cannot be provisioned comes first, with its storage class", () => {
  const claim: V1PersistentVolumeClaim = {
    metadata: { name: "c" },
    spec: { storageClassName: "longhorn" },
    status: { phase: "Pending" },
  };
  const unschedulable = pod({
    conditions: [
      { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "unbound claims" },
    ],
  });
  const d = observe(
    [unschedulable],
    [{ volume: "home", claim, provisioningMessage: 'storageclass.storage.k8s.io "longhorn" not found' }],
  );
  assert.equal(d.problem?.reason, "VolumeProvisioningFailed");
  assert.equal(
    d.problem?.message,
    'The volume "home" (storage class "longhorn") cannot be provisioned: storageclass.storage.k8s.io "longhorn" not found',
  );
  assert.equal(observe([unschedulable], [{ volume: "home", claim }]).problem?.reason, "Unschedulable");
});

test("running but not ready: a readiness problem only after the grace, and a recheck when it ends", () => {
  const running = (startedSecondsAgo: number) =>
    pod({
      conditions: [scheduled, { type: "Ready", status: "False" }],
      containerStatuses: [
        container({ state: { running: { startedAt: ago(startedSecondsAgo) as unknown as Date } } }),
      ],
    });
  const young = observe([running(5)]);
  assert.equal(young.problem, undefined);
  assert.equal(young.recheckAfterMs, READINESS_GRACE_MS - 5000 + 100);
  const old = observe([running(25)]);
  assert.equal(old.problem?.reason, "ReadinessProbeFailing");
  assert.match(old.problem?.message ?? "", /does not pass its readiness check \(container "ide"\)/);
});

test("progress: each step with the time it was reached; the operator's own sightings are kept", () => {
  const ready = pod({
    conditions: [
      scheduled,
      { type: "Ready", status: "True", lastTransitionTime: ago(40) as unknown as Date },
    ],
    containerStatuses: [
      container({ ready: true, state: { running: { startedAt: ago(50) as unknown as Date } } }),
    ],
  });
  const bound: ClaimState = { volume: "home", claim: { status: { phase: "Bound" } } };
  const d = observe([ready], [bound], true);
  assert.equal(d.problem, undefined);
  assert.deepEqual(d.progress, {
    since: "2026-01-02T03:03:05Z",
    steps: [
      { step: "Scheduled", at: "2026-01-02T03:03:07Z" },
      { step: "VolumeBound", at: "2026-01-02T03:04:05Z" },
      { step: "ContainerStarted", at: "2026-01-02T03:03:15Z" },
      { step: "AppReady", at: "2026-01-02T03:03:25Z" },
      { step: "Reachable", at: "2026-01-02T03:04:05Z" },
    ],
  });
  const later = diagnoseStart({
    pods: [ready],
    claims: [bound],
    routable: true,
    previous: d.progress,
    now: new Date(now.getTime() + 60_000),
  });
  assert.deepEqual(later.progress, d.progress, "nothing changes while nothing happens: no status write");

  // The cache has not caught up with the write of d yet (no progress there): the remembered
  // progress keeps Reachable's time, so the next sync writes nothing new after convergence.
  const staleCache = diagnoseStart({
    pods: [ready],
    claims: [bound],
    routable: true,
    previous: undefined,
    remembered: d.progress,
    now: new Date(now.getTime() + 2_000),
  });
  assert.deepEqual(
    staleCache.progress,
    d.progress,
    "a stale cache takes no new time for a step seen already",
  );
});

test("Stalled: set with the cause, a Warning once per cause, cleared by a later success with a recovery", () => {
  const userland = (status?: Userland["status"]): Userland => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name: "ada", namespace: "ns", generation: 1 },
    spec: { user: "ada", templateName: "code", enabled: true },
    status,
  });
  const starting = { metadata: { generation: 1 }, status: { observedGeneration: 1, replicas: 1 } };
  const problem = { reason: "ImagePullFailed" as const, message: 'The image "x" cannot be pulled' };
  const stalled = computeStatus(userland(), { deployment: starting, diagnosis: { problem } }, now);
  assert.equal(stalled.phase, "Starting");
  assert.equal(stalled.message, problem.message);
  const condition = stalled.conditions?.find((c) => c.type === UserlandConditions.Stalled);
  assert.equal(condition?.status, "True");
  assert.equal(condition?.reason, "ImagePullFailed");
  const young = { metadata: { generation: 1, creationTimestamp: now }, status: {} };
  assert.equal(firstStatusDelayMs(userland(), stalled, young, now), 0, "a stalled start is said at once");
  assert.deepEqual(statusEvents(undefined, stalled), [
    { type: "warning", reason: "ImagePullFailed", message: problem.message },
  ]);
  const again = computeStatus(userland(stalled), { deployment: starting, diagnosis: { problem } }, now);
  assert.deepEqual(statusEvents(stalled, again), [], "once per cause");
  assert.deepEqual(
    statusEvents(undefined, again, "ImagePullFailed"),
    [],
    "once per cause even when the cache does not hold the last write yet",
  );
  const available = {
    metadata: { generation: 1 },
    status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
  };
  const ready = computeStatus(userland(again), { deployment: available, routable: true, diagnosis: {} }, now);
  assert.equal(ready.phase, "Ready");
  assert.equal(ready.conditions?.find((c) => c.type === UserlandConditions.Stalled)?.status, "False");
  assert.deepEqual(statusEvents(again, ready), [
    { type: "normal", reason: "Recovered", message: "The environment is ready" },
  ]);
  const quiet = computeStatus(userland(), { deployment: available, routable: true, diagnosis: {} }, now);
  assert.equal(
    quiet.conditions?.find((c) => c.type === UserlandConditions.Stalled),
    undefined,
    "never stalled: no condition",
  );
});
