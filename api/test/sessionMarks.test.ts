/** Session marks on Userlands (api/sessions.ts): what ends a session, and what a mark cannot do. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_MARK_SKEW_MS, sessionEnded } from "../sessions.ts";
import { UserlandAnnotations, type Userland } from "../v1alpha1/index.ts";

const now = Date.parse("2026-12-07T12:00:00Z");
const carrying = (validAfter: string): Userland => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name: "alice-code", annotations: { [UserlandAnnotations.sessionsValidAfter]: validAfter } },
  spec: { user: "alice", templateName: "code" },
});
const session = (issuedMs: number) => ({ sid: "s1", iat: issuedMs / 1000, exp: issuedMs / 1000 + 3600 });

test("a mark ends the sessions issued before it and not those after", () => {
  const mark = carrying("2026-12-07T11:00:00Z");
  assert.equal(sessionEnded(session(now - 2 * 3600_000), [mark], now), true);
  assert.equal(sessionEnded(session(now - 1800_000), [mark], now), false);
});

test("a mark far in the future (2099) is no mark: it cannot lock a student out, fresh sign-ins included", () => {
  const mark = carrying("2099-01-01T00:00:00Z");
  assert.equal(sessionEnded(session(now - 3600_000), [mark], now), false);
  assert.equal(sessionEnded(session(now), [mark], now), false);
  // Within the clocks' skew it counts.
  const soon = carrying(new Date(now + MAX_MARK_SKEW_MS - 1000).toISOString());
  assert.equal(sessionEnded(session(now), [soon], now), true);
});
