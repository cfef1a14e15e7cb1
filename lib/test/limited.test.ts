import assert from "node:assert/strict";
import { test } from "node:test";
import { forEachLimited } from "../limited.ts";

test("forEachLimited runs at most `limit` at once, every item once; after a failure it starts no more and throws the first", async () => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  await forEachLimited([...Array(20).keys()], 4, async (i) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise<void>((r) => setImmediate(r));
    inFlight--;
    done.push(i);
  });
  assert.equal(most, 4);
  assert.deepEqual(
    done.sort((a, b) => a - b),
    [...Array(20).keys()],
  );

  const started: number[] = [];
  await assert.rejects(
    forEachLimited([...Array(20).keys()], 2, async (i) => {
      started.push(i);
      await new Promise<void>((r) => setImmediate(r));
      if (i === 1) throw new Error("first");
      if (i === 2) throw new Error("second");
    }),
    /first/,
  );
  assert.ok(started.length < 20, `stopped starting items after the failure (started ${started.length})`);
});
