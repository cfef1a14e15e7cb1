import assert from "node:assert/strict";
import { test } from "node:test";
import { DURATION_PATTERN, formatDuration, parseDuration } from "../duration.ts";

test("Kubernetes durations parse to milliseconds, compound ones included", () => {
  assert.equal(parseDuration("500ms"), 500);
  assert.equal(parseDuration("90s"), 90_000);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("1.5s"), 1500);
  assert.equal(parseDuration("2m5ms"), 120_005);
  for (const bad of ["", "30", "5d", " 5s", "5s ", "s", "1h 30m", "-5s", "1.s"])
    assert.equal(parseDuration(bad), undefined, JSON.stringify(bad));
});

test("the CRD's pattern accepts exactly what parseDuration accepts", () => {
  const crd = new RegExp(DURATION_PATTERN);
  for (const text of ["500ms", "90s", "1h30m", "1.5s", "", "30", "5d", "1h 30m", "1.s"])
    assert.equal(crd.test(text), parseDuration(text) !== undefined, JSON.stringify(text));
});

test("formatDuration writes the shortest text that reads back the same", () => {
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(500), "500ms");
  assert.equal(formatDuration(60_000), "1m");
  assert.equal(formatDuration(5_400_000), "1h30m");
  assert.equal(formatDuration(12 * 3_600_000), "12h");
  assert.equal(formatDuration(1500), "1s500ms");
  for (const ms of [0, 1, 999, 1000, 61_001, 86_400_000]) assert.equal(parseDuration(formatDuration(ms)), ms);
  assert.throws(() => formatDuration(-1), RangeError);
});
