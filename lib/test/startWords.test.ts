/** A stalled start in words for the student, the operator's own words kept for the admin (issue 44 item 6). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { StartProblems, type UserlandStatus } from "../../api/v1alpha1/index.ts";
import { startWords, studentWords } from "../startProgress.ts";

const stalled = (reason: string, message: string): UserlandStatus => ({
  phase: "Starting",
  message,
  conditions: [
    { type: "Stalled", status: "True", reason, message, lastTransitionTime: "2026-01-02T03:04:00Z" },
  ],
});

test("a stalled start's cause is said in plain words, the scheduler's or the runtime's text kept as the detail", () => {
  const raw = "No node can take the environment: 0/2 nodes are available: 1 Insufficient cpu, preemption: …";
  assert.deepEqual(startWords(stalled("Unschedulable", raw)), {
    message: studentWords(StartProblems.Unschedulable),
    detail: raw,
    stalled: true,
  });
  for (const reason of Object.values(StartProblems)) {
    const words = studentWords(reason);
    assert.doesNotMatch(words, /node|image|container|pod|storage class|\d\/\d/i, reason);
    assert.match(words, /course administrator/, `${reason} says whom to tell`);
  }
});

test("a start that is not stalled, or stalled for a cause with no words, keeps the operator's message", () => {
  assert.deepEqual(startWords({ phase: "Starting", message: "Waiting for the pod" }), {
    message: "Waiting for the pod",
    detail: "",
    stalled: false,
  });
  assert.deepEqual(startWords(stalled("SomethingNew", "a new cause")), {
    message: "a new cause",
    detail: "",
    stalled: true,
  });
  assert.deepEqual(startWords(undefined), { message: "", detail: "", stalled: false });
});
