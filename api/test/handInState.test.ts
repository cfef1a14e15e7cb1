/** The hand-in states, decided from an Assignment and a Submission alone (handIn.ts), and each student's deadline (api/deadlines.ts). */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Assignment, Submission } from "../v1alpha1/index.ts";
import { deadlineFor, latePenaltyPercent } from "../deadlines.ts";
import { handInState, isClosed } from "../handInState.ts";

const now = new Date("2026-12-01T12:00:00Z");
const assignment = (spec: Partial<Assignment["spec"]> = {}): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name: "week1" },
  spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "w1" }, ...spec },
});
const submission = (spec: Partial<Submission["spec"]> = {}, status?: Submission["status"]): Submission => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name: "week1-alice-x" },
  spec: { assignment: "week1", user: "alice", ...spec },
  ...(status ? { status } : {}),
});
const receipt = (by: "student" | "deadline", late: boolean, files = 2) => ({
  version: 1,
  requestedAt: "2026-12-01T11:00:00Z",
  time: "2026-12-01T11:00:00Z",
  files,
  bytes: 10,
  sha256: "b".repeat(64),
  late,
  by,
});

test("states: receipt first, then the request, then the closing time, then the copy", () => {
  const open = assignment({ deadline: "2026-12-02T00:00:00Z" });
  const closed = assignment({ deadline: "2026-11-30T00:00:00Z", lateUntil: "2026-12-01T11:59:59Z" });
  assert.equal(handInState(open, undefined, now), "not-distributed");
  assert.equal(handInState(open, submission(), now), "not-distributed");
  assert.equal(handInState(open, submission({}, { distributedRelease: 1 }), now), "open");
  assert.equal(
    handInState(
      open,
      submission({ handInRequestedAt: "2026-12-01T11:00:00Z", handInRequestedBy: "student" }),
      now,
    ),
    "handing-in",
  );
  assert.equal(handInState(open, submission({}, { receipt: receipt("student", false) }), now), "on-time");
  assert.equal(handInState(closed, submission({}, { receipt: receipt("student", true) }), now), "late");
  assert.equal(
    handInState(closed, submission({}, { receipt: receipt("deadline", false) }), now),
    "collected",
  );
  assert.equal(
    handInState(closed, submission({}, { receipt: receipt("deadline", false, 0) }), now),
    "missing",
    "collected at the deadline, but nothing was there",
  );
  assert.equal(handInState(closed, submission({}, { distributedRelease: 1 }), now), "missing");
  assert.equal(handInState(closed, undefined, now), "missing");
});

test("the closing time is lateUntil, else the deadline, else never", () => {
  assert.equal(isClosed(assignment(), undefined, now), false);
  assert.equal(
    isClosed(assignment({ deadline: "2026-12-01T12:00:00Z" }), undefined, now),
    true,
    "at the deadline itself",
  );
  assert.equal(
    isClosed(
      assignment({ deadline: "2026-12-01T11:00:00Z", lateUntil: "2026-12-01T13:00:00Z" }),
      undefined,
      now,
    ),
    false,
    "late hand-ins until lateUntil",
  );
});

test("a student's extension is theirs alone: their deadline, their closing time; the others keep the assignment's", () => {
  const a = assignment({
    deadline: "2026-12-01T11:00:00Z",
    extensions: [{ user: "ann", deadline: "2026-12-01T18:00:00Z" }],
  });
  assert.equal(isClosed(a, "ann", now), false, "ann's deadline is later");
  assert.equal(isClosed(a, "ben", now), true);
  assert.equal(isClosed(a, undefined, now), true, "the assignment's own time");
  assert.deepEqual(deadlineFor(a, "ann"), {
    deadline: "2026-12-01T18:00:00Z",
    closesAt: "2026-12-01T18:00:00Z",
    extended: true,
  });
  // An extension replaces lateUntil too: none given, none applies.
  const withLate = assignment({
    deadline: "2026-12-01T11:00:00Z",
    lateUntil: "2026-12-03T11:00:00Z",
    extensions: [{ user: "ann", deadline: "2026-12-02T11:00:00Z" }],
  });
  assert.equal(deadlineFor(withLate, "ann").closesAt, "2026-12-02T11:00:00Z");
  assert.equal(deadlineFor(withLate, "ben").closesAt, "2026-12-03T11:00:00Z");
});

test("a late penalty: per day or part of one after the student's own deadline, capped", () => {
  const a = assignment({
    deadline: "2026-12-01T12:00:00Z",
    lateUntil: "2026-12-10T12:00:00Z",
    latePenalty: { percentPerDay: 10, maxPercent: 25 },
    extensions: [{ user: "ann", deadline: "2026-12-02T12:00:00Z" }],
  });
  assert.equal(latePenaltyPercent(a, "ben", "2026-12-01T12:00:00Z"), 0, "at the deadline: on time");
  assert.equal(latePenaltyPercent(a, "ben", "2026-12-01T12:00:01Z"), 10, "a second late is a day begun");
  assert.equal(latePenaltyPercent(a, "ben", "2026-12-03T11:00:00Z"), 20);
  assert.equal(latePenaltyPercent(a, "ben", "2026-12-09T12:00:00Z"), 25, "at most maxPercent");
  assert.equal(latePenaltyPercent(a, "ann", "2026-12-02T11:00:00Z"), 0, "ann's extension: not late");
  assert.equal(
    latePenaltyPercent(assignment({ deadline: "2026-12-01T12:00:00Z" }), "ben", "2026-12-05T00:00:00Z"),
    0,
    "no rule, no penalty",
  );
});
