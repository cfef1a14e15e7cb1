/**
 * Leader election against the real API server's Leases: a candidate acquires a free Lease and
 * renews it, a second one waits, a leader that cannot renew gives up, and a leader that stops
 * hands over at once.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { KubeRest } from "../../lib/kubeRest.ts";
import { createLogger } from "../../lib/logger.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { LeaderElector } from "../leaderElection.ts";
import { resources } from "../resources.ts";

const LEASE = "test-lease";
const timing = { leaseDurationMs: 2000, renewDeadlineMs: 1000, retryPeriodMs: 200 };
const log = createLogger("leader-election-test", process.env.LEADER_TEST_LOG ?? "silent");

interface Lease {
  metadata: { resourceVersion?: string };
  spec: { holderIdentity?: string | null; leaseTransitions?: number; renewTime?: string };
}

/** A KubeRest whose requests fail while `broken` is set, as during an API server outage. */
class BreakableRest extends KubeRest {
  broken = false;
  /** When each GET (a candidate's look at the Lease) was answered. */
  readonly answered: number[] = [];
  override get<T>(...args: Parameters<KubeRest["get"]>): Promise<T> {
    if (this.broken) return Promise.reject(new Error("connection refused (test)"));
    return super.get<T>(...args).finally(() => this.answered.push(Date.now()));
  }
  override replace<T>(...args: Parameters<KubeRest["replace"]>): Promise<T> {
    if (this.broken) return Promise.reject(new Error("connection refused (test)"));
    return super.replace<T>(...args);
  }
}

async function candidate(t: TestContext, namespace: string, identity: string) {
  const rest = new BreakableRest((await testCluster()).kc, "userland-tests");
  const changes: string[] = [];
  const elector = new LeaderElector({
    rest,
    namespace,
    name: LEASE,
    identity,
    ...timing,
    log,
    onStartedLeading: () => changes.push("started"),
    onStoppedLeading: () => changes.push("stopped"),
  });
  t.after(async () => {
    await elector.stop();
    await rest.close();
  });
  return { elector, rest, changes };
}

async function readLease(namespace: string): Promise<Lease> {
  const rest = new KubeRest((await testCluster()).kc, "userland-tests");
  try {
    return await rest.get<Lease>(resources.Lease.path(namespace, LEASE));
  } finally {
    await rest.close();
  }
}

test("one candidate acquires and renews the Lease; the other waits; stop() hands over at once", async (t) => {
  const ns = await testNamespace(t, "lease");
  const a = await candidate(t, ns, "a");
  a.elector.start();
  await eventually("a to lead", () => a.elector.isLeader);
  assert.deepEqual(a.changes, ["started"]);
  const acquired = await readLease(ns);
  assert.equal(acquired.spec.holderIdentity, "a");

  const b = await candidate(t, ns, "b");
  const bStarted = Date.now();
  b.elector.start();
  // Longer than the Lease lasts: a's renewals keep it. The marker: b has looked at the Lease twice
  // from a lease duration and a half on (the second look starts once the first one's turn is over),
  // so it has decided at least once when the Lease would have expired without a's renewals.
  await eventually(
    "b to look at the Lease twice from a lease duration and a half on",
    () => b.rest.answered.filter((at) => at - bStarted >= timing.leaseDurationMs * 1.5).length >= 2,
    timing.leaseDurationMs * 5,
    20,
  );
  assert.equal(b.elector.isLeader, false);
  assert.equal(a.elector.isLeader, true);
  const renewed = await readLease(ns);
  assert.equal(renewed.spec.holderIdentity, "a");
  assert.notEqual(renewed.spec.renewTime, acquired.spec.renewTime);

  const stoppedAt = Date.now();
  await a.elector.stop();
  assert.equal(a.elector.isLeader, false);
  await eventually("b to take over", () => b.elector.isLeader);
  assert.ok(
    Date.now() - stoppedAt < timing.leaseDurationMs,
    "a released Lease is taken without waiting for it to expire",
  );
  assert.deepEqual(b.changes, ["started"]);
  const handedOver = await readLease(ns);
  assert.equal(handedOver.spec.holderIdentity, "b");
  assert.equal(handedOver.spec.leaseTransitions, (acquired.spec.leaseTransitions ?? 0) + 1);
});

test("a leader that cannot renew within the renew deadline stops leading, and leads again when it can", async (t) => {
  const ns = await testNamespace(t, "lease");
  const a = await candidate(t, ns, "a");
  a.elector.start();
  await eventually("a to lead", () => a.elector.isLeader);

  a.rest.broken = true;
  await eventually("a to give up", () => !a.elector.isLeader, timing.renewDeadlineMs * 5);
  assert.deepEqual(a.changes, ["started", "stopped"]);

  // Still the holder of record: it renews and leads again once the API server answers.
  a.rest.broken = false;
  await eventually("a to lead again", () => a.elector.isLeader);
  assert.deepEqual(a.changes, ["started", "stopped", "started"]);
});

test("a leader whose Lease another holder took stops leading", async (t) => {
  const ns = await testNamespace(t, "lease");
  const a = await candidate(t, ns, "a");
  a.elector.start();
  await eventually("a to lead", () => a.elector.isLeader);

  const rest = new KubeRest((await testCluster()).kc, "userland-tests");
  t.after(() => rest.close());
  const path = resources.Lease.path(ns, LEASE);
  // Keep the intruder's record fresh, as a live leader would, so a never sees it expire.
  const intrude = async () => {
    const lease = await rest.get<Lease>(path);
    await rest.replace(path, {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: "intruder",
        renewTime: new Date().toISOString().replace("Z", "000Z"),
      },
    });
  };
  await eventually("the intruder to write the Lease", () => intrude().then(() => true));
  const keepFresh = setInterval(() => void intrude().catch(() => undefined), timing.retryPeriodMs);
  t.after(() => clearInterval(keepFresh));
  await eventually("a to stop leading", () => !a.elector.isLeader, timing.renewDeadlineMs * 5);
  assert.deepEqual(a.changes, ["started", "stopped"]);
  assert.equal((await readLease(ns)).spec.holderIdentity, "intruder");
});
