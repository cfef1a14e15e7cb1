/**
 * The idle compaction (lib/idleHeap.ts), in a child process of its own so the heap it grows and
 * shrinks is not the test runner's: after a burst of garbage the heap (and the young generation)
 * V8 kept is given back once the loop is idle, and not while it is busy.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";

const module = join(import.meta.dirname, "..", "idleHeap.ts");

/** Runs `body` in a child with the young generation V8 gives a 4 GiB heap; returns what it printed. */
function child(body: string): Record<string, number> {
  const script = `
    import v8 from "node:v8";
    import { compactHeapWhenIdle } from ${JSON.stringify(module)};
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const heap = () => v8.getHeapStatistics().total_heap_size;
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
    /** Garbage for ms: survives a scavenge or two, so V8 grows its young generation. */
    function burst(ms) {
      let keep = [];
      const until = Date.now() + ms;
      while (Date.now() < until) {
        for (let i = 0; i < 1e4; i++) keep.push({ i, s: "x" + i });
        if (keep.length > 2e5) keep = [];
      }
    }
    ${body}
  `;
  const r = spawnSync(
    process.execPath,
    ["--max-semi-space-size=16", "--input-type=module", "--eval", script],
    { encoding: "utf8", timeout: 30_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, number>;
}

test("after a burst, an idle process gives its heap back (young generation included)", () => {
  const r = child(`
    let compactions = 0;
    const watch = compactHeapWhenIdle({ checkMs: 100, quietChecks: 3, onCompact: () => compactions++ });
    burst(1500);
    const grown = { heap: heap(), young: young() };
    // Until the compaction (at most 10 s on a loaded machine), then a few more checks: still one.
    for (let i = 0; i < 100 && compactions === 0; i++) await sleep(100);
    await sleep(500);
    watch.stop();
    console.log(JSON.stringify({ compactions, grownHeap: grown.heap, grownYoung: grown.young, heap: heap(), young: young() }));
  `);
  assert.ok(r.grownYoung! >= 16 * 2 ** 20, `the burst grew the young generation (${r.grownYoung} bytes)`);
  assert.equal(r.compactions, 1, "one compaction for one burst");
  assert.ok(r.heap! < r.grownHeap! / 2, `the heap shrank: ${r.grownHeap} → ${r.heap} bytes`);
  assert.ok(r.young! <= 2 * 2 ** 20, `the young generation shrank: ${r.grownYoung} → ${r.young} bytes`);
});

test("a busy process is not compacted", () => {
  const r = child(`
    let compactions = 0;
    const watch = compactHeapWhenIdle({ checkMs: 100, quietChecks: 3, onCompact: () => compactions++ });
    // Busy in slices, so the interval runs between them and sees the loop busy every time.
    for (let i = 0; i < 15; i++) {
      burst(90);
      await sleep(5);
    }
    watch.stop();
    console.log(JSON.stringify({ compactions }));
  `);
  assert.equal(r.compactions, 0);
});
