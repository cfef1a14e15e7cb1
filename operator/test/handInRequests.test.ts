/**
 * The closing time's hand-in requests (syncAssignment.ts): every outstanding Submission is asked,
 * several at once, so a class of 300 does not wait for 300 round trips one after another.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Submission } from "../../api/v1alpha1/index.ts";
import { KubeError, type KubeRest } from "../../lib/kubeRest.ts";
import { requestOutstandingHandIns } from "../coursework/syncAssignment.ts";

const submission = (name: string, requested?: string): Submission => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name, namespace: "ns" },
  spec: { assignment: "a1", user: name, ...(requested ? { handInRequestedAt: requested } : {}) },
});

test("at the closing time every outstanding Submission is asked for its hand-in, 16 at once; a student's own request stands", async () => {
  let inFlight = 0;
  let most = 0;
  const patched = new Map<string, unknown>();
  const rest = {
    async patch(path: string, body: unknown) {
      inFlight++;
      most = Math.max(most, inFlight);
      // Answered on a later turn of the event loop, as the API server's answer would be: the calls
      // started meanwhile are the ones in flight together.
      await new Promise<void>((r) => setImmediate(r));
      inFlight--;
      if (path.endsWith("/s-3")) throw new KubeError(422, "Invalid", "hand-in is final", {});
      patched.set(path.split("/").at(-1) ?? "", body);
      return {};
    },
  } as unknown as KubeRest;
  const all = [...Array(40).keys()].map((i) =>
    submission(`s-${i}`, i === 7 ? "2026-01-01T00:00:00Z" : undefined),
  );
  await requestOutstandingHandIns({ rest }, all, "2026-02-01T00:00:00.000Z");
  assert.equal(most, 16, "16 requests in flight at once, not one after another");
  assert.equal(patched.size, 38, "all but s-7 (already requested) and s-3 (refused: its own request won)");
  assert.deepEqual(patched.get("s-0"), {
    spec: { handInRequestedAt: "2026-02-01T00:00:00Z", handInRequestedBy: "deadline" },
  });
  assert.equal(patched.has("s-7"), false);
});
