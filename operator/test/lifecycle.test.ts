/** The operator as a process: steady state, leader election, shutdown and idle culling. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1Pod } from "@kubernetes/client-node";
import { childNames, LABELS } from "../../api/naming.ts";
import { UserlandAnnotations } from "../../api/v1alpha1/index.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { listEvents } from "../../test/support/events.ts";
import { startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  auditEvents,
  auditLogCaughtUp,
  createTemplate,
  createUserland,
  deploymentsPath,
  getUserland,
  patchUserland,
  simpleTemplateSpec,
  waitForPhase,
} from "../../test/support/resources.ts";
import { WRITE_VERBS } from "../../cluster/harness/auditLog.ts";

const reconcileCount = async (metrics: () => Promise<string>) =>
  [
    ...(await metrics()).matchAll(/userland_operator_reconcile_total\{kind="\w+",result="success"\} (\d+)/g),
  ].reduce((n, m) => n + Number(m[1]), 0);

test("a resync over unchanged objects sends zero write requests to the API server", async (t) => {
  const ns = await testNamespace(t);
  const operator = await startOperator(t, ns, { env: { OPERATOR_RESYNC_PERIOD: "500ms" } });
  await createTemplate(
    ns,
    "code",
    simpleTemplateSpec("registry.invalid/ide:1", {
      volumes: [
        {
          name: "home",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        },
      ],
      defaultResources: { requests: { cpu: "0.5", memory: "1024Mi" } },
    }),
  );
  for (const u of ["a", "b", "c"]) await createUserland(ns, u, u, "code");
  await createUserland(ns, "off", "off", "code", false);
  await createUserland(ns, "lost", "lost", "missing-template");
  // Stopped after it had started: its status then has no start progress any more, and the write
  // that says so must remove it (a merge patch kept it, and every resync wrote again).
  await createUserland(ns, "was-on", "was-on", "code");
  await eventually(
    "was-on reports its start's progress",
    async () => (await getUserland(ns, "was-on")).status?.progress,
  );
  await patchUserland(ns, "was-on", { spec: { enabled: false } });
  for (const u of ["a", "b", "c"])
    await waitForPhase(ns, u, "Starting").catch(() => waitForPhase(ns, u, "Ready"));
  await waitForPhase(ns, "off", "Stopped");
  await waitForPhase(ns, "was-on", "Stopped");
  assert.equal(
    (await getUserland(ns, "was-on")).status?.progress,
    undefined,
    "a stopped Userland has no start progress",
  );
  await waitForPhase(ns, "lost", "Failed");
  // Pods cannot start (their claims never bind without a storage provisioner): the Userlands stay
  // Starting, stalled with the scheduler's reason, a state the operator must also leave alone.
  const rest = await adminRest();
  const schedulerMessages = async () => {
    const pods = await rest.list<V1Pod>(`/api/v1/namespaces/${ns}/pods`);
    return pods.items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.status?.conditions?.find((c) => c.type === "PodScheduled")?.message ?? "")
      .sort();
  };
  // was-on's stop is over only once its Deployment has seen it and its pod is gone: until then its
  // status, its Events and the Template's count still follow it (CI saw them written inside the
  // window below on a loaded machine).
  const wasOn = childNames("code", "was-on").deployment;
  await eventually("was-on's Deployment scaled down and its pod gone", async () => {
    const d = await rest.get<V1Deployment>(deploymentsPath(ns, wasOn));
    const pods = await rest.list<V1Pod>(`/api/v1/namespaces/${ns}/pods`, {
      query: { labelSelector: `${LABELS.instance}=${wasOn}` },
    });
    return (
      d.status?.observedGeneration === d.metadata?.generation &&
      !d.status?.replicas &&
      pods.items.length === 0
    );
  });
  for (const u of ["a", "b", "c"])
    await eventually(`${u} stalled: no node can take its pod`, async () => {
      const stalled = (await getUserland(ns, u)).status?.conditions?.find((c) => c.type === "Stalled");
      return stalled?.status === "True" && stalled.reason === "Unschedulable";
    });

  const since = new Date();
  const before = await reconcileCount(operator.metrics);
  // A node comes (as other test files and a class's cluster add them): the scheduler tries the stuck
  // pods again and rewrites its message with the new node count. Their Userlands' status must not
  // follow it (it did, and every stuck Userland was written once per node that came or went).
  const beforeNode = await schedulerMessages();
  assert.equal(beforeNode.length, 3, "the three stuck pods");
  const node = `passing-${ns}`;
  await rest.create("/api/v1/nodes", {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: node },
    // No other file's pod may land on it: it has no kubelet.
    spec: { taints: [{ key: "userland.dev/no-kubelet", effect: "NoSchedule" }] },
  });
  t.after(() => rest.delete(`/api/v1/nodes/${node}`).catch(() => undefined));
  await eventually("the scheduler to rewrite every stuck pod's message", async () =>
    (await schedulerMessages()).every((m, i) => m !== "" && m !== beforeNode[i]),
  );
  await rest.delete(`/api/v1/nodes/${node}`);
  // Then at least 5 resyncs of every object (every 500 ms), counted rather than slept for.
  const resyncs = before + 5 * 8;
  await eventually(
    "resyncs to pass over every object",
    async () => (await reconcileCount(operator.metrics)) >= resyncs,
  );
  const after = await reconcileCount(operator.metrics);
  await auditLogCaughtUp();
  const writes = (await auditEvents(operator.username, since)).filter(
    (e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== "leases",
  );
  assert.deepEqual(
    writes.map((e) => `${e.verb} ${e.requestURI}`),
    [],
    "no writes in steady state",
  );
  const leaseWrites = (await auditEvents(operator.username, since)).filter(
    (e) => e.objectRef?.resource === "leases" && WRITE_VERBS.has(e.verb),
  );
  t.diagnostic(
    `${after - before} reconciles in ${Date.now() - since.getTime()} ms; writes: 0 (plus ${leaseWrites.length} Lease renewals)`,
  );
});

test("two replicas: one leads, the other takes over when the leader dies or shuts down", async (t) => {
  const ns = await testNamespace(t);
  const env = {
    OPERATOR_LEASE_DURATION: "4s",
    OPERATOR_RENEW_DEADLINE: "3s",
    OPERATOR_RETRY_PERIOD: "500ms",
  };
  const first = await startOperator(t, ns, { env, identity: "replica-1" });
  const second = await startOperator(t, ns, { env, identity: "replica-2", waitForLeader: false });
  await eventually(
    "the second replica to run as a standby",
    async () => (await second.readyz())?.leader === false,
  );
  // The standby keeps asking for the Lease (a GET every retry period, where the leader's GET is
  // followed by its renewal): once it has asked three times more, it has been refused three times.
  const standbySince = new Date();
  await eventually(
    "three more Lease requests from the standby",
    async () => {
      await auditLogCaughtUp();
      const lease = (await auditEvents(first.username, standbySince)).filter(
        (e) => e.objectRef?.resource === "leases",
      );
      const gets = lease.filter((e) => e.verb === "get").length;
      const renewals = lease.filter((e) => e.verb === "update").length;
      return gets - renewals >= 3;
    },
    15_000,
  );
  assert.equal((await first.readyz())?.leader, true);
  assert.equal((await second.readyz())?.leader, false, "only one leader");
  const lease = await (
    await adminRest()
  ).get<{ spec: { holderIdentity: string } }>(
    `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/userland-operator`,
  );
  assert.equal(lease.spec.holderIdentity, "replica-1");

  // Graceful shutdown releases the Lease: the standby takes over well before the Lease would expire.
  await createTemplate(ns, "code", simpleTemplateSpec());
  const stoppedAt = Date.now();
  assert.equal(await first.stop("SIGTERM"), 0, "clean exit on SIGTERM");
  await eventually(
    "replica-2 to lead",
    async () => (await second.readyz())?.leader && (await second.readyz())?.synced,
    10_000,
  );
  const takeover = Date.now() - stoppedAt;
  assert.ok(takeover < 4000, `takeover after release took ${takeover} ms`);
  await createUserland(ns, "after-release", "after-release", "code");
  await waitForPhase(ns, "after-release", "Ready");

  // A killed leader cannot release: the third replica waits for the Lease to expire, then leads.
  const third = await startOperator(t, ns, { env, identity: "replica-3", waitForLeader: false });
  await eventually("replica-3 to be a standby", async () => (await third.readyz())?.leader === false);
  // A renewal of the leader's before it dies: nobody may take the Lease until its last renewal (this
  // one or a later one) has lasted the Lease's duration. Measured on the Lease's own times, not by
  // when the test saw replica-3 lead: on a loaded machine that is late anyway, and a replica that
  // ignored the Lease would pass such a check.
  type LeaseTimes = { spec: { holderIdentity?: string; renewTime?: string; acquireTime?: string } };
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/userland-operator`;
  const renewed = await (await adminRest()).get<LeaseTimes>(leasePath);
  assert.equal(renewed.spec.holderIdentity, "replica-2");
  const killedAt = Date.now();
  await second.stop("SIGKILL");
  await eventually(
    "replica-3 to lead",
    async () => (await third.readyz())?.leader && (await third.readyz())?.synced,
    20_000,
  );
  const failover = Date.now() - killedAt;
  const taken = await (await adminRest()).get<LeaseTimes>(leasePath);
  assert.equal(taken.spec.holderIdentity, "replica-3");
  const waited = Date.parse(taken.spec.acquireTime ?? "") - Date.parse(renewed.spec.renewTime ?? "");
  assert.ok(
    waited >= 4000,
    `the Lease was respected: taken ${waited} ms after a renewal of the dead leader's`,
  );
  await createUserland(ns, "after-kill", "after-kill", "code");
  await waitForPhase(ns, "after-kill", "Ready");
  t.diagnostic(`release takeover ${takeover} ms, failover after kill ${failover} ms`);
});

test("a second signal exits at once", async (t) => {
  const ns = await testNamespace(t);
  const operator = await startOperator(t, ns);
  operator.child.kill("SIGTERM");
  operator.child.kill("SIGTERM");
  const code = await operator.stop("SIGTERM");
  assert.ok(code === 0 || code === 1, `exited (${code})`);
});

test("an idle Userland is stopped with an Event and a status reason; an active one is not", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns, { env: { OPERATOR_CULL_INTERVAL: "300ms" } });
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1", { idleTimeout: "3s" }));
  await createTemplate(ns, "forever", simpleTemplateSpec("registry.invalid/ide:1"));
  await createUserland(ns, "idle", "idle", "code");
  await createUserland(ns, "busy", "busy", "code");
  await createUserland(ns, "nolimit", "nolimit", "forever");
  await waitForPhase(ns, "idle", "Ready");
  const busyReady = await waitForPhase(ns, "busy", "Ready");

  // The proxy reports activity for "busy" every 500 ms.
  const keepBusy = setInterval(() => {
    void patchUserland(ns, "busy", {
      metadata: { annotations: { [UserlandAnnotations.lastActivity]: new Date().toISOString() } },
    }).catch(() => undefined);
  }, 500);
  t.after(() => clearInterval(keepBusy));

  const stopped = await waitForPhase(ns, "idle", "Stopped", 15_000);
  assert.equal(stopped.spec.enabled, false);
  assert.equal(stopped.metadata.annotations?.[UserlandAnnotations.stoppedReason], "IdleTimeout");
  assert.equal(stopped.status?.conditions?.find((c) => c.type === "Ready")?.reason, "IdleTimeout");
  assert.match(stopped.status?.message ?? "", /without activity/);
  await eventually("an IdleTimeout Event", async () =>
    (await listEvents(ns, "idle")).some((e) => e.reason === "IdleTimeout"),
  );

  // The marker: an environment that became Ready a whole second (the timestamps' resolution) after
  // "busy" did. Once the culler stops it, "busy" would have been stopped in an earlier pass if its
  // activity had not counted.
  const busyReadyAt = Date.parse(
    busyReady.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "",
  );
  assert.ok(busyReadyAt > 0, "busy's Ready condition has a transition time");
  await eventually("a second past busy's Ready time", () => Date.now() >= busyReadyAt + 1000);
  await createUserland(ns, "marker", "marker", "code");
  const marker = await waitForPhase(ns, "marker", "Ready");
  const markerReadyAt = Date.parse(
    marker.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "",
  );
  assert.ok(markerReadyAt >= busyReadyAt + 1000, "the marker became Ready a second after busy at least");
  await waitForPhase(ns, "marker", "Stopped", 15_000);
  assert.equal((await getUserland(ns, "busy")).spec.enabled, true, "active environments keep running");
  assert.equal((await getUserland(ns, "nolimit")).spec.enabled, true, "no idle timeout, no culling");
});
