/**
 * The operator converges under faults (CI size of `npm run chaos`): 30 Userlands over three
 * Templates, 30 s of random deletions and hand edits of their children, enabled flips, template
 * switches, plus one operator restart, one leader kill and one kube-apiserver restart. A private
 * control plane, because restarting the shared API server would break the tests running beside it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { privateControlPlane, testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { Chaos, formatReport, PROCESS_FAULTS } from "../../reliability/chaos.ts";

/** Convergence bound after the faults end (typically well under 30 s on two loaded cores). */
const CONVERGE_SECONDS = 90;

test("after 30 s of faults every Userland converges to exactly its children; no claim is lost", async (t) => {
  const { controlPlane, cluster } = await privateControlPlane(t, "chaos");
  await installCrds(cluster);
  const namespace = await testNamespace(t, "chaos", cluster);

  const chaos = new Chaos({
    controlPlane,
    cluster,
    namespace,
    userlands: 30,
    faultSeconds: 30,
    convergeSeconds: CONVERGE_SECONDS,
    faultsPerSecond: 3,
    // At 4.5, 13.5 and 22.5 s: each of the three process faults once, in random order.
    processFaultEvery: 9,
    seed: process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : undefined,
    operatorEnv: { OPERATOR_FREEZE_CACHE: "true" },
    log: (line) => t.diagnostic(line),
  });
  t.after(() => chaos.stopOperators());
  const report = await chaos.run();
  for (const line of formatReport(report).split("\n")) t.diagnostic(line);

  for (const kind of PROCESS_FAULTS)
    assert.equal(report.faults[kind].injected, 1, `one ${kind} (seed ${report.seed})`);
  const objectFaults = Object.values(report.faults).reduce((n, c) => n + c.injected, 0) - 3;
  assert.ok(objectFaults >= 20, `at least 20 object faults were injected (${objectFaults})`);
  for (const kind of ["deleteDeployment", "deleteService", "editDeployment", "editService"] as const)
    assert.ok(report.faults[kind].injected > 0, `some ${kind} faults (seed ${report.seed})`);

  assert.ok(
    report.convergeSeconds !== undefined && report.convergeSeconds <= CONVERGE_SECONDS,
    `converged within ${CONVERGE_SECONDS} s (seed ${report.seed})`,
  );
  assert.equal(report.final.userlands, 30, "every Userland was checked");
  assert.deepEqual(report.final.mismatches, [], "every Userland has exactly its desired children and status");
  assert.deepEqual(report.final.orphans, [], "no orphaned Deployments or Services");
  assert.ok(report.stable, "the converged state held");
  assert.deepEqual(report.audit.pvcDeletesByOperator, [], "the operator deleted no claim");
  assert.deepEqual(report.audit.pvcDeletesByOthers, [], "nobody but the chaos deleted a claim");
  assert.deepEqual(report.quietWrites, [], "no writes once converged");
  assert.deepEqual(report.unexpectedExits, [], "no operator crashed");
  assert.deepEqual(report.failures, []);
});
