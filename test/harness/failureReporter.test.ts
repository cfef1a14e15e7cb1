/** The failed tests npm test repeats at its end (test/support/failureReporter.ts), from a real run of node's test runner. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { failureLines } from "../support/failureReporter.ts";

const reporter = join(repoRoot, "test", "support", "failureReporter.ts");
/** This file runs under node's test runner, which refuses a run of its own inside it: the sample runs in a runner of its own. */
const withoutTestContext = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name !== "NODE_TEST_CONTEXT"),
);

test("a failed assertion in a subtest is reported once, by its own name, with its message and where it was thrown", () => {
  const dir = mkdtempSync(join(tmpdir(), "failure-reporter-"));
  try {
    const file = join(dir, "sample.test.ts");
    writeFileSync(
      file,
      [
        `import assert from "node:assert/strict";`,
        `import { test } from "node:test";`,
        `test("outer", async (t) => {`,
        `  await t.test("passes", () => assert.equal(1, 1));`,
        `  await t.test("counts hand-ins", () => assert.equal(2 + 2, 5, "four hand-ins graded"));`,
        `});`,
        `test("also passes", () => {});`,
      ].join("\n"),
    );
    const report = join(dir, "failures.jsonl");
    const runner = spawnSync(
      process.execPath,
      ["--test", `--test-reporter=${reporter}`, `--test-reporter-destination=${report}`, file],
      { cwd: dir, env: withoutTestContext, encoding: "utf8" },
    );
    assert.equal(runner.status, 1, "the sample run fails");
    const jsonl = readFileSync(report, "utf8");
    const failures = jsonl
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { file: string; test: string; why: string });
    // The outer test and the file fail too, because of the subtest: only the subtest is named.
    assert.deepEqual(
      failures.map((f) => f.test),
      ["counts hand-ins"],
    );
    assert.match(failures[0]!.why, /four hand-ins graded/);
    assert.match(failures[0]!.why, /sample\.test\.ts:5/);

    const lines = failureLines(jsonl);
    assert.equal(lines[0], "# failed tests: 1");
    assert.ok(
      lines.every((line) => line.startsWith("#")),
      "every line is a comment of the run's summary",
    );
    assert.ok(lines.some((line) => line.includes("› counts hand-ins")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a run without failures adds no lines", () => {
  assert.deepEqual(failureLines(""), []);
});
