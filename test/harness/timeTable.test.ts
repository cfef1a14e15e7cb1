/** The table npm test ends with (test/support/timeTable.ts): set-up rows, the kind of run, the guard. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  formatTable,
  growthWarning,
  parseSetupTimes,
  recordOf,
  runKind,
  type RunTimes,
} from "../support/timeTable.ts";

const bootstrapFile = [
  "# bootstrap started\t1000",
  "npm packages\t21000\tbuilt\t1000",
  "Debian packages\t40\tcached\t22000",
  "Go: kubernetes\t0\tcached\t22100",
  "image: code-server\t300000\tbuilt\t22050",
  // Asked for again by two test files once built: the built row stays.
  "Go: traefik\t400000\tbuilt\t30000",
  "Go: traefik\t0\tcached\t500000",
  "Go: traefik\t0\tcached\t600000",
  "not a row",
].join("\n");

test("set-up rows: bootstrap's start, one row per phase (a built one wins over later cached ones)", () => {
  const setup = parseSetupTimes(bootstrapFile);
  assert.equal(setup.startedAt, 1000);
  assert.deepEqual(
    setup.rows.map((r) => [r.phase, r.ms, r.cached]),
    [
      ["npm packages", 21000, false],
      ["Debian packages", 40, true],
      ["Go: kubernetes", 0, true],
      ["image: code-server", 300000, false],
      ["Go: traefik", 400000, false],
    ],
  );
});

test("a run is cold when it built a Go tool or an image, warm when npm alone installed", () => {
  assert.equal(runKind(parseSetupTimes(bootstrapFile).rows), "cold");
  const warm = [
    { phase: "npm packages", ms: 20000, cached: false },
    { phase: "Go: kubernetes", ms: 0, cached: true },
    { phase: "image: code-server", ms: 0, cached: true },
  ];
  assert.equal(runKind(warm), "warm");
  assert.equal(runKind([]), "warm");
});

const run = (totalMs: number, platformMs: number, kubeMs = 0): RunTimes => ({
  kind: "warm",
  totalMs,
  setup: [{ phase: "Go: kubernetes", ms: kubeMs, cached: true }],
  run: [{ phase: "test files", ms: totalMs - 60_000 }],
  files: [
    { phase: "test/a.test.ts", ms: 10_000 },
    { phase: "test/node/platform.test.ts", ms: platformMs },
  ],
});

test("the table names every phase with its time and cache, and every file longest first", () => {
  const lines = formatTable(run(600_000, 300_000));
  const text = lines.join("\n");
  assert.match(lines[0] ?? "", /a warm run, 10 min 0 s in all/);
  assert.match(text, /Go: kubernetes\s+0\.0 s {2}yes/);
  assert.match(text, /test files\s+540\.0 s/);
  assert.ok(text.indexOf("platform.test.ts") < text.indexOf("test/a.test.ts"), "longest first");
  assert.ok(lines.every((l) => l.startsWith("#")));
});

test("the guard: quiet up to 20% longer than the last run of its kind, then names what grew", () => {
  const last = recordOf(run(600_000, 300_000), new Date("2026-12-01T00:00:00Z"));
  assert.equal(growthWarning(run(700_000, 300_000), undefined), undefined, "nothing to compare with");
  assert.equal(growthWarning(run(720_000, 400_000), last), undefined, "20% is allowed");
  const warning = growthWarning(run(800_000, 450_000), last);
  assert.ok(warning);
  assert.match(warning[0] ?? "", /warm run took 13 min 20 s, 33% longer than the last warm run \(10 min 0 s/);
  const text = warning.join("\n");
  assert.match(text, /test\/node\/platform\.test\.ts: 300\.0 s → 450\.0 s/);
  assert.match(text, /test files: 540\.0 s → 740\.0 s/);
  assert.doesNotMatch(text, /a\.test\.ts/, "unchanged files are not named");
});
