/** What a student may see of their grade (studentGrade.ts): Gradescope's visibility, the release as the gate. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Assignment, Submission } from "../v1alpha1/index.ts";
import { studentGrade } from "../studentGrade.ts";
import { assignmentOf } from "./objects.ts";

const assignment = (spec: Partial<Assignment["spec"]>) =>
  assignmentOf({
    deadline: "2026-12-10T12:00:00Z",
    autograder: { folder: "graders", path: "calc" },
    ...spec,
  });

const graded: Submission = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name: "calc-ann" },
  spec: {
    assignment: "calc",
    user: "ann",
    handInRequestedAt: "2026-12-11T10:00:00Z",
    handInRequestedBy: "student",
  },
  status: {
    grade: {
      score: 6,
      maxScore: 8,
      latePenaltyPercent: 25,
      testCount: 4,
      tests: [
        { name: "test_add", score: 2, maxScore: 2, status: "passed", visibility: "visible" },
        { name: "test_secret", score: 0, maxScore: 2, status: "failed", visibility: "hidden" },
        { name: "test_edge", score: 2, maxScore: 2, status: "passed", visibility: "after_due_date" },
        { name: "test_style", score: 2, maxScore: 2, status: "passed", visibility: "after_published" },
      ],
      key: "k",
      receiptSha256: "a".repeat(64),
      autograderRevision: "b".repeat(64),
      image: "i",
      time: "2026-12-11T10:01:00Z",
      results: "grades/calc/ann/k",
    },
  },
};

const before = new Date("2026-12-09T00:00:00Z");
const after = new Date("2026-12-12T00:00:00Z");
const names = (g: ReturnType<typeof studentGrade>) => g?.tests.map((t) => t.name);

test("before the release: nothing, or with visibleTestsAfterHandIn the visible tests alone and no total", () => {
  assert.equal(studentGrade(assignment({}), graded, after), null);
  const early = studentGrade(
    assignment({ autograder: { folder: "graders", path: "calc", visibleTestsAfterHandIn: true } }),
    graded,
    after,
  );
  assert.deepEqual(names(early), ["test_add"]);
  assert.deepEqual([early?.released, early?.score, early?.maxScore], [false, null, null]);
});

test("after the release: the score less the late penalty; after_due_date once the student's own closing time passed; hidden never", () => {
  const released = studentGrade(assignment({ gradesReleased: true }), graded, after);
  assert.deepEqual([released?.score, released?.maxScore, released?.latePenaltyPercent], [4.5, 8, 25]);
  assert.deepEqual(names(released), ["test_add", "test_edge", "test_style"]);
  assert.deepEqual(names(studentGrade(assignment({ gradesReleased: true }), graded, before)), [
    "test_add",
    "test_style",
  ]);
  // ann's extension runs past `after`: her after_due_date tests wait for it.
  const extended = assignment({
    gradesReleased: true,
    extensions: [{ user: "ann", deadline: "2026-12-20T00:00:00Z" }],
  });
  assert.deepEqual(names(studentGrade(extended, graded, after)), ["test_add", "test_style"]);
  assert.ok(
    !JSON.stringify(studentGrade(assignment({ gradesReleased: true }), graded, after)).includes("secret"),
  );
  assert.equal(studentGrade(assignment({ gradesReleased: true }), { ...graded, status: {} }, after), null);
});
