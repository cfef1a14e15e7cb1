/** A hand-in's score (scores.ts): the autograder's part or the teacher's, plus the rubric as it is now, less the late penalty. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Assignment, Submission } from "../v1alpha1/index.ts";
import { scoreOf } from "../scores.ts";

const assignment = (rubric: NonNullable<Assignment["spec"]["rubric"]>): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name: "calc" },
  spec: { templateName: "lab", title: "Calculator", source: { folder: "c", path: "p" }, rubric },
});
const rubric = [
  { id: "style", points: 2, description: "Readable" },
  { id: "late-tests", points: -1, description: "Tests added late" },
];
const submission = (
  review?: Submission["spec"]["review"],
  grade?: { score: number; maxScore?: number; latePenaltyPercent?: number },
): Submission => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name: "s" },
  spec: { assignment: "calc", user: "ann", ...(review ? { review } : {}) },
  status: grade
    ? {
        grade: {
          ...grade,
          key: "k",
          receiptSha256: "a".repeat(64),
          autograderRevision: "b".repeat(64),
          image: "i",
          time: "2026-12-07T10:00:00Z",
          results: "r",
        },
      }
    : {},
});

test("autograder plus the applied items as the rubric has them now, less the late penalty", () => {
  const s = submission(
    { items: ["style", "late-tests", "gone"] },
    { score: 7, maxScore: 10, latePenaltyPercent: 10 },
  );
  const score = scoreOf(assignment(rubric), s);
  assert.deepEqual(
    [score?.autograder, score?.rubric, score?.total, score?.final, score?.maxScore],
    [7, 1, 8, 7.2, 12],
  );
  assert.deepEqual(
    score?.items.map((i) => i.id),
    ["style", "late-tests"],
    "an id the rubric no longer has counts nothing",
  );
  const changed = scoreOf(assignment([{ ...rubric[0]!, points: 3 }, rubric[1]!]), s);
  assert.equal(changed?.total, 9, "an item's new points count for every hand-in it was applied to");
});

test("the teacher's autograder part wins over the run's; nothing to score is undefined, never 0", () => {
  assert.equal(scoreOf(assignment(rubric), submission({ autograderScore: 9.5 }, { score: 3 }))?.total, 9.5);
  assert.equal(scoreOf(assignment(rubric), submission(undefined, undefined)), undefined);
  const reviewedOnly = scoreOf(assignment(rubric), submission({ items: ["style"] }));
  assert.deepEqual([reviewedOnly?.autograder, reviewedOnly?.total, reviewedOnly?.maxScore], [null, 2, 2]);
  assert.equal(scoreOf(assignment(rubric), submission(undefined, { score: 0.1 + 0.2 }))?.total, 0.3);
});
