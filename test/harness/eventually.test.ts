// eventually(): what a condition that never holds fails with.
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually } from "../support/cluster.ts";

test("a condition that holds returns its value at the try it holds", async () => {
  let tries = 0;
  const value = await eventually("the third try", () => (++tries === 3 ? "ready" : false), 5_000, 1);
  assert.equal(value, "ready");
  assert.equal(tries, 3);
});

test("an assertion that never passes fails with that assertion, its diff kept, and the number of tries", async () => {
  let tries = 0;
  const failure = await eventually(
    "the phase to be Ready",
    () => {
      tries++;
      assert.equal("Starting", "Ready");
      return true;
    },
    50,
    5,
  ).catch((error: unknown) => error);
  assert.ok(failure instanceof assert.AssertionError, `got ${String(failure)}`);
  assert.equal(failure.actual, "Starting");
  assert.equal(failure.expected, "Ready");
  assert.match(
    failure.message,
    new RegExp(`^the phase to be Ready: not so after ${tries} tries in \\d+ ms; the last try threw: `),
  );
  assert.ok(tries > 1, `tried ${tries} times`);
  assert.match(failure.stack ?? "", /^AssertionError.*the phase to be Ready: not so after/);
});

test("a condition that returns false at the end says so, and names the error an earlier try threw", async () => {
  let tries = 0;
  const failure = await eventually(
    "the Service",
    () => {
      if (++tries === 1) throw new Error("connection refused");
      return false;
    },
    30,
    5,
  ).catch((error: unknown) => error);
  assert.ok(failure instanceof Error);
  assert.match(
    failure.message,
    /^the Service: not so after \d+ tries in \d+ ms; the last try returned false; an earlier try threw: connection refused$/,
  );
});

test("a condition that never threw fails as a timeout with what the last try returned", async () => {
  const failure = await eventually("nothing", () => undefined, 20, 5).catch((error: unknown) => error);
  assert.ok(failure instanceof Error);
  assert.match(
    failure.message,
    /^timed out: nothing: not so after \d+ tries in \d+ ms; the last try returned undefined$/,
  );
});
