import assert from "node:assert/strict";
import test from "node:test";
import { activityStamp } from "../v1alpha1/index.ts";

test("the last-activity stamp is RFC 3339 in whole seconds, from a Date or milliseconds", () => {
  const at = Date.parse("2026-11-24T03:04:05.678Z");
  assert.equal(activityStamp(at), "2026-11-24T03:04:05Z");
  assert.equal(activityStamp(new Date(at)), "2026-11-24T03:04:05Z");
  assert.equal(activityStamp(Date.parse("2026-11-24T03:04:05Z")), "2026-11-24T03:04:05Z");
  assert.ok(Date.parse(activityStamp(at)) <= at, "never later than the activity");
});
