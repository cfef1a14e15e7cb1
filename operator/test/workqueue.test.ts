import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BucketRateLimiter,
  ExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  WorkQueue,
} from "../workqueue.ts";

test("a key waits in the queue once however often it is added", async () => {
  const q = new WorkQueue();
  q.add("a");
  q.add("b");
  q.add("a");
  assert.equal(q.length, 2);
  assert.equal(await q.get(), "a");
  assert.equal(await q.get(), "b");
  assert.equal(q.length, 0);
});

test("a key being processed is not handed out again until done, then comes back once", async () => {
  const q = new WorkQueue();
  q.add("a");
  const key = await q.get();
  assert.equal(key, "a");
  q.add("a");
  q.add("a");
  assert.equal(q.length, 0, "not queued while a worker holds it");
  q.done("a");
  assert.equal(q.length, 1);
  assert.equal(await q.get(), "a");
});

test("a waiting worker gets the next key as soon as it is added", async () => {
  const q = new WorkQueue();
  const pending = q.get();
  q.add("x");
  assert.equal(await pending, "x");
});

test("addAfter delays a key; the earlier of two delays wins", async () => {
  const q = new WorkQueue();
  q.addAfter("k", 1000);
  q.addAfter("k", 20);
  assert.equal(q.length, 0);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(q.length, 1);
  await q.shutDownWithDrain();
});

test("addAfter with a delay beyond a timer's range (a closing time months away) waits, not 1 ms", async (t) => {
  // Node sets a timer longer than 2^31-1 ms (24.8 days) to 1 ms: an Assignment whose closing time
  // was further away than that was synced again every millisecond, for as long as it was open.
  const delays: number[] = [];
  const real = globalThis.setTimeout;
  t.mock.method(globalThis, "setTimeout", ((fn: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return real(fn, ms);
  }) as typeof setTimeout);
  const q = new WorkQueue();
  q.addAfter("k", 73 * 365 * 24 * 3_600_000);
  t.mock.restoreAll();
  assert.equal(delays.length, 1);
  assert.ok((delays[0] ?? 0) <= 2 ** 31 - 1, `timer set for ${delays[0]} ms`);
  assert.ok((delays[0] ?? 0) > 24 * 24 * 3_600_000, "still waits weeks, not a moment");
  assert.equal(q.length, 0);
  await q.shutDownWithDrain();
});

test("per-key exponential back-off doubles from 5 ms up to 1000 s and resets on forget", () => {
  const limiter = new ExponentialFailureRateLimiter(5, 1_000_000);
  const delays = Array.from({ length: 5 }, () => limiter.when("k"));
  assert.deepEqual(delays, [5, 10, 20, 40, 80]);
  for (let i = 0; i < 40; i++) limiter.when("k");
  assert.equal(limiter.when("k"), 1_000_000);
  assert.equal(limiter.when("other"), 5, "keys back off independently");
  limiter.forget("k");
  assert.equal(limiter.when("k"), 5);
});

test("the token bucket allows a burst, then spaces retries at the overall rate", () => {
  let now = 0;
  const bucket = new BucketRateLimiter(50, 300, () => now);
  for (let i = 0; i < 300; i++) assert.equal(bucket.when(`k${i}`), 0);
  assert.ok(Math.abs(bucket.when("x") - 20) < 1e-9, "the 301st waits one token (20 ms at 50/s)");
  now += 1000;
  assert.equal(bucket.when("y"), 0, "a second later 50 tokens are back");
  const max = new MaxOfRateLimiter(new ExponentialFailureRateLimiter(5, 1000), bucket);
  assert.equal(max.when("z"), 5);
});

test("shutdown drains work in progress and releases waiting workers", async () => {
  const q = new WorkQueue();
  q.add("a");
  const key = await q.get();
  const idle = q.get();
  let drained = false;
  const drain = q.shutDownWithDrain().then(() => (drained = true));
  assert.equal(await idle, undefined);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(drained, false, "waits for the key in progress");
  q.done(key ?? "");
  await drain;
  assert.equal(drained, true);
  q.add("late");
  assert.equal(q.length, 0, "no keys accepted after shutdown");
});

test("shutdown does not hand out queued keys that were not started", async () => {
  const q = new WorkQueue();
  q.add("a");
  q.add("b");
  const key = await q.get();
  const drain = q.shutDownWithDrain();
  assert.equal(await q.get(), undefined, "b waits for the next leader");
  q.done(key ?? "");
  await drain;
});
