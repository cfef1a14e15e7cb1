/**
 * Which of the autograder check's pods an Assignment's sync keeps (operator/grading/autograderCheck.ts),
 * as a pure function of the spec, the cached status and the cached pods. The check's whole cycle runs
 * against the API server in grading.test.ts; a stale cache there shows only now and then.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS } from "../../api/naming.ts";
import type { Assignment, AssignmentStatus } from "../../api/v1alpha1/index.ts";
import type { OperatorContext } from "../context.ts";
import { checkPodsToKeep, solutionPodName } from "../grading/autograderCheck.ts";
import { GRADE_JOB, gradeKey } from "../grading/gradePods.ts";

const assignment = (release: number): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name: "a1", namespace: "class", uid: "uid-a1" },
  spec: {
    templateName: "lab",
    title: "A1",
    source: { folder: "course", path: "a1" },
    deadline: "2026-12-24T12:00:00Z",
    autograder: { folder: "graders", path: "calc/autograder", solution: "calc/solution", release },
  },
});

const gradingPod = (name: string): V1Pod => ({
  metadata: { name, labels: { [LABELS.copy]: GRADE_JOB }, ownerReferences: [{ uid: "uid-a1" } as never] },
});
const cache = (pods: V1Pod[]) =>
  ({ caches: { copyPods: { byIndex: () => pods } } }) as unknown as Pick<OperatorContext, "caches">;
const inputsFor = (revision: string) => (receiptSha256: string) => ({
  receiptSha256,
  autograderRevision: revision,
  image: "registry.invalid/jupyter:1",
  timeoutSeconds: 300,
});

// Release 1's check is done: both results are in the status.
const release1: AssignmentStatus = {
  publishedRevision: "a".repeat(64),
  autograder: {
    release: 1,
    revision: "c".repeat(64),
    at: "2026-12-07T10:00:00Z",
    solutionRevision: "d".repeat(64),
    checked: false,
  },
};

test("a status of an earlier autograder release keeps the current release's solution pod and every grading pod", () => {
  const old = gradingPod("userland-grade-old");
  const kept = checkPodsToKeep(cache([old]), assignment(2), release1, inputsFor("c".repeat(64)));
  assert.ok(kept.includes(solutionPodName(assignment(2))), `kept: ${kept.join(", ")}`);
  assert.ok(kept.includes("userland-grade-old"));
});

test("a status without the solution's snapshot keeps its pod", () => {
  const status = {
    ...release1,
    autograder: { release: 2, revision: "e".repeat(64), at: "2026-12-07T11:00:00Z" },
  };
  const kept = checkPodsToKeep(cache([]), assignment(2), status, inputsFor("e".repeat(64)));
  assert.deepEqual(kept, [solutionPodName(assignment(2))]);
});

test("a status holding both results of the current release keeps nothing", () => {
  const key = (sha: string) => gradeKey(inputsFor("c".repeat(64))(sha.repeat(64)));
  const status: AssignmentStatus = {
    ...release1,
    autograder: {
      ...release1.autograder!,
      check: {
        solution: { key: key("d"), ok: true, message: "5 of 5 points" },
        starter: { key: key("a"), ok: true, message: "1 of 5 points" },
      },
    },
  };
  const kept = checkPodsToKeep(cache([gradingPod("g")]), assignment(1), status, inputsFor("c".repeat(64)));
  assert.deepEqual(kept, []);
});
