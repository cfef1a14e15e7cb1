/** A student's hand-ins as versions (api/handIns.ts): which is pending, which counts, when no more are taken. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { countedReceipt, handInRefusal, pendingHandIn, refusedHandIn } from "../handIns.ts";
import type { Receipt, Submission } from "../v1alpha1/index.ts";
import { assignmentOf, submissionOf } from "./objects.ts";

const assignment = (maxVersions?: number) => assignmentOf(maxVersions !== undefined ? { maxVersions } : {});
const version = (n: number, requestedAt: string): Receipt => ({
  version: n,
  requestedAt,
  time: requestedAt,
  files: 1,
  bytes: 1,
  sha256: String(n).repeat(64),
  late: false,
  by: "student",
});
const submission = (spec: Partial<Submission["spec"]>, versions: Receipt[] = []) =>
  submissionOf(spec, { versions });

test("a request newer than the last version is pending, as the next version; one already collected is not", () => {
  assert.equal(pendingHandIn(submission({})), undefined, "nothing asked");
  assert.deepEqual(pendingHandIn(submission({ handInRequestedAt: "2026-12-07T10:00:00Z" })), {
    version: 1,
    moment: "2026-12-07T10:00:00Z",
  });
  const one = [version(1, "2026-12-07T10:00:00Z")];
  assert.equal(pendingHandIn(submission({ handInRequestedAt: "2026-12-07T10:00:00Z" }, one)), undefined);
  assert.deepEqual(pendingHandIn(submission({ handInRequestedAt: "2026-12-07T11:00:00Z" }, one)), {
    version: 2,
    moment: "2026-12-07T11:00:00Z",
  });
});

test("the last version counts unless a teacher picked another that exists", () => {
  const two = [version(1, "2026-12-07T10:00:00Z"), version(2, "2026-12-07T11:00:00Z")];
  assert.equal(countedReceipt(submission({}, two))?.version, 2);
  assert.equal(countedReceipt(submission({ review: { countedVersion: 1 } }, two))?.version, 1);
  assert.equal(
    countedReceipt(submission({ review: { countedVersion: 7 } }, two))?.version,
    2,
    "no such version",
  );
  assert.equal(countedReceipt(submission({})), undefined);
});

test("no further hand-in: after the collection at closing, while one is collected, when every version is used", () => {
  const at = "2026-12-07T10:00:00Z";
  const one = [version(1, at)];
  assert.equal(handInRefusal(assignment(), submission({})), undefined);
  assert.equal(handInRefusal(assignment(), submission({ handInRequestedAt: at }, one)), undefined, "again");
  assert.match(
    handInRefusal(assignment(), submission({ handInRequestedAt: at, handInRequestedBy: "deadline" }, one)) ??
      "",
    /collected at the closing time/,
  );
  assert.match(
    handInRefusal(assignment(), submission({ handInRequestedAt: at })) ?? "",
    /still being collected/,
  );
  assert.match(handInRefusal(assignment(1), submission({ handInRequestedAt: at }, one)) ?? "", /final/);
  const five = [1, 2, 3, 4, 5].map((n) => version(n, `2026-12-07T1${n}:00:00Z`));
  assert.match(
    handInRefusal(assignment(), submission({ handInRequestedAt: "2026-12-07T15:00:00Z" }, five)) ?? "",
    /all 5 hand-ins are used/,
    "the default allows five",
  );
});

test("a refused hand-in stays refused: not pending again, told until a newer version, and a newer request is pending (issue 41 item 5)", () => {
  const refused = {
    requestedAt: "2026-12-07T10:00:00Z",
    reason: "OverLimit" as const,
    message: "Too much data",
    at: "2026-12-07T10:00:05Z",
  };
  const asked = (at: string, versions: Receipt[] = []) =>
    submissionOf({ handInRequestedAt: at }, { versions, refusedHandIn: refused });
  assert.equal(pendingHandIn(asked("2026-12-07T10:00:00Z")), undefined, "no retry of the refused request");
  assert.equal(refusedHandIn(asked("2026-12-07T10:00:00Z"))?.message, "Too much data");
  assert.equal(handInRefusal(assignment(), asked("2026-12-07T10:00:00Z")), undefined, "may hand in again");
  assert.deepEqual(pendingHandIn(asked("2026-12-07T10:30:00Z")), {
    version: 1,
    moment: "2026-12-07T10:30:00Z",
  });
  const collected = asked("2026-12-07T10:30:00Z", [version(1, "2026-12-07T10:30:00Z")]);
  assert.equal(refusedHandIn(collected), undefined, "answered by a newer version");
  const atClosing = submissionOf(
    { handInRequestedAt: "2026-12-07T10:00:00Z", handInRequestedBy: "deadline" },
    { refusedHandIn: refused },
  );
  assert.match(handInRefusal(assignment(), atClosing) ?? "", /closing time was refused: Too much data/);
});
