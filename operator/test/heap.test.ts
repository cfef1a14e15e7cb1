/**
 * The operator's heap mode (operator/heap.ts): V8's optimize-for-size slows the caches' first fill
 * several times over, so it is turned on once the caches are synced, not at start-up.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";

const SYNCED = "caches synced; starting workers";
const FOR_SIZE = "caches synced; heap optimized for size from now on";

/** The messages of the operator's log lines, in order. */
function messages(log: string): string[] {
  return log.split("\n").flatMap((line) => {
    try {
      const msg = (JSON.parse(line) as { msg?: unknown }).msg;
      return typeof msg === "string" ? [msg] : [];
    } catch {
      return [];
    }
  });
}

test("the operator optimizes its heap for size once, after its caches are synced, not at start-up", async (t) => {
  const ns = await testNamespace(t);
  const operator = await startOperator(t, ns);
  const lines = await eventually("the operator to log its heap mode", () => {
    const all = messages(operator.logs());
    return all.includes(FOR_SIZE) ? all : undefined;
  });
  const synced = lines.indexOf(SYNCED);
  assert.ok(synced >= 0, "the caches synced");
  assert.ok(synced < lines.indexOf(FOR_SIZE), "the mode comes after the caches' first fill");
  assert.equal(lines.filter((m) => m === FOR_SIZE).length, 1);
});
