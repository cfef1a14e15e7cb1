/**
 * The grade book (gradebook.ts) and its CSV files, read back with a CSV parser and held against the
 * shapes Canvas's and Moodle's importers take (docs/decisions/0015-grading.md).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "csv-parse/sync";
import type { Assignment, Submission } from "../../../api/v1alpha1/index.ts";
import { canvasCsv, gradeBook, moodleCsv } from "../gradebook.ts";

/** A CSV file's rows, as an importer reads them. */
const rowsOf = (text: string): string[][] => parse(text, {});

const now = new Date("2026-12-10T12:00:00Z");
const assignment = (name: string, title: string, spec: Partial<Assignment["spec"]> = {}): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name },
  spec: { templateName: "lab", title, source: { folder: "course", path: name }, ...spec },
});
const handedIn = (
  a: string,
  user: string,
  late: boolean,
  grade?: {
    score: number;
    maxScore: number;
    latePenaltyPercent?: number;
    previous?: { score: number; autograderRevision: string };
  },
): Submission => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name: `${a}-${user}` },
  spec: { assignment: a, user, handInRequestedAt: "2026-12-01T10:00:00Z", handInRequestedBy: "student" },
  status: {
    receipt: {
      version: 1,
      requestedAt: "2026-12-01T10:00:05Z",
      time: "2026-12-01T10:00:05Z",
      files: 1,
      bytes: 3,
      sha256: "a".repeat(64),
      late,
      by: "student",
    },
    ...(grade
      ? {
          grade: {
            ...grade,
            key: "k",
            receiptSha256: "a".repeat(64),
            autograderRevision: "b".repeat(64),
            image: "i",
            time: "2026-12-01T10:01:00Z",
            results: "grades/x",
            testCount: 2,
            tests: [
              { name: "t1", status: "passed" },
              { name: "t2", status: "failed" },
            ],
          },
        }
      : {}),
  },
});

const week1 = assignment("week1", 'Week 1, "lists"', {
  deadline: "2026-12-01T12:00:00Z",
  extensions: [{ user: "cat@uni.example", deadline: "2026-12-20T12:00:00Z" }],
});
const week2 = assignment("week2", "Week 2", { deadline: "2026-12-05T12:00:00Z" });
const book = gradeBook(
  [week1, week2],
  [
    handedIn("week1", "ann@uni.example", false, {
      score: 5,
      maxScore: 5,
      previous: { score: 3, autograderRevision: "c".repeat(64) },
    }),
    handedIn("week1", "ben", true, { score: 4, maxScore: 5, latePenaltyPercent: 10 }),
    handedIn("week2", "ann@uni.example", false),
    // cat has her own deadline for week1 and has not handed in; week2's Submission is still open.
    {
      ...handedIn("week1", "cat@uni.example", false),
      spec: { assignment: "week1", user: "cat@uni.example" },
      status: {},
    },
    {
      ...handedIn("week2", "cat@uni.example", false),
      spec: { assignment: "week2", user: "cat@uni.example" },
      status: {},
    },
  ],
  now,
);

test("the book: every student with a Submission × the assignments; the score after the late penalty; missing, late and extension said; ungraded is null, never 0", () => {
  assert.deepEqual(
    book.assignments.map((a) => [a.name, a.points]),
    [
      ["week1", 5],
      ["week2", null],
    ],
  );
  assert.deepEqual(
    book.students.map((s) => s.user),
    ["ann@uni.example", "ben", "cat@uni.example"],
  );
  const cell = (user: string, a: string) => book.students.find((s) => s.user === user)?.cells[a];
  assert.equal(cell("ann@uni.example", "week1")?.score, 5);
  assert.equal(cell("ann@uni.example", "week1")?.regradedFrom, 3, "before the autograder changed");
  assert.equal(cell("ben", "week1")?.regradedFrom, null);
  assert.deepEqual(
    [cell("ben", "week1")?.score, cell("ben", "week1")?.autograderScore, cell("ben", "week1")?.late],
    [3.6, 4, true],
  );
  assert.match(
    cell("ben", "week1")?.summary ?? "",
    /^4\/5 by the autograder \(1 of 2 tests passed\); less 10% for lateness$/,
  );
  assert.deepEqual(
    [cell("cat@uni.example", "week1")?.state, cell("cat@uni.example", "week1")?.extended],
    ["not-distributed", true],
    "her own deadline has not come: not missing",
  );
  assert.equal(cell("cat@uni.example", "week2")?.missing, true, "week2 closed without her hand-in");
  assert.equal(cell("ann@uni.example", "week2")?.score, null, "handed in, not graded: no score");
  assert.equal(cell("ben", "week2")?.state, "missing", "no Submission, closed: missing");
});

test("Canvas: Student, ID, SIS User ID, SIS Login ID, Section, one `Title (id)` column per assignment, then Points Possible", () => {
  const rows = rowsOf(canvasCsv(book));
  assert.deepEqual(rows[0], [
    "Student",
    "ID",
    "SIS User ID",
    "SIS Login ID",
    "Section",
    'Week 1, "lists" (week1)',
    "Week 2 (week2)",
  ]);
  assert.deepEqual(rows[1], ["Points Possible", "", "", "", "", "5", ""]);
  assert.deepEqual(rows.slice(2), [
    ["ann@uni.example", "", "", "ann@uni.example", "", "5", ""],
    ["ben", "", "", "ben", "", "3.6", ""],
    ["cat@uni.example", "", "", "cat@uni.example", "", "", ""],
  ]);
});

test("Moodle: Email address and ID number to map by, a grade and a feedback column per assignment", () => {
  const rows = rowsOf(moodleCsv(book));
  assert.deepEqual(rows[0], [
    "Email address",
    "ID number",
    'Week 1, "lists"',
    'Week 1, "lists" (feedback)',
    "Week 2",
    "Week 2 (feedback)",
  ]);
  assert.deepEqual(rows[1]?.slice(0, 3), ["ann@uni.example", "ann@uni.example", "5"]);
  assert.deepEqual(
    rows[2]?.slice(0, 3),
    ["", "ben", "3.6"],
    "an identity that is no email fills ID number alone",
  );
  assert.match(rows[2]?.[3] ?? "", /less 10% for lateness/);
});
