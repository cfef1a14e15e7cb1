/**
 * The grading pod's platform steps (docs/decisions/0015-grading.md), run as the pod runs them:
 * results.json read as real autograders write it, a hand-in checked against its receipt, the
 * /autograder layout, and results read back without trusting what the submission's code wrote.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { access, constants, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { copyTree } from "../files/copy.ts";
import { DEFAULT_LIMITS } from "../../api/copyPrograms.ts";
import { scratch, sha256sumOfFolder } from "../files/test/scratch.ts";
import { collect } from "../grading/collect.ts";
import { HandInChangedError, NoRunAutograderError, prepare } from "../grading/prepare.ts";
import { parseResults } from "../grading/results.ts";

const program = fileURLToPath(new URL("../grade.ts", import.meta.url));

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [program, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** What gradescope-utils' JSONTestRunner writes: execution_time a string, keys of its own. */
const GRADESCOPE_UTILS = {
  tests: [
    { name: "test_add (tests.test_simple.TestSimple)", score: 1.0, max_score: 1.0, visibility: "visible" },
    {
      name: "test_hidden",
      score: 0.0,
      max_score: 2.0,
      output: "AssertionError: 3 != 4",
      visibility: "hidden",
      extra_data: {},
    },
    { name: "test_partial", score: "0.5", max_score: "1", status: "failed", tags: ["x"] },
  ],
  leaderboard: [],
  visibility: "visible",
  execution_time: "0.03",
  stdout_visibility: "visible",
  something_new: true,
};

test("results.json as gradescope-utils writes it: scores summed, string numbers read, unknown keys ignored, status derived or kept", () => {
  const parsed = parseResults(JSON.stringify(GRADESCOPE_UTILS));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  assert.equal(parsed.results.score, 1.5);
  assert.equal(parsed.results.maxScore, 4);
  assert.equal(parsed.results.executionSeconds, 0.03);
  assert.equal(parsed.results.stdoutVisibility, "visible");
  assert.deepEqual(
    parsed.results.tests.map((t) => [t.name, t.score, t.maxScore, t.status, t.visibility]),
    [
      ["test_add (tests.test_simple.TestSimple)", 1, 1, "passed", "visible"],
      ["test_hidden", 0, 2, "failed", "hidden"],
      ["test_partial", 0.5, 1, "failed", "visible"],
    ],
  );
  assert.equal(parsed.results.tests[1]?.output, "AssertionError: 3 != 4");
});

test("a top-level score overrides the tests' sum; an unknown visibility is read as hidden; a nameless test gets its number", () => {
  const parsed = parseResults(
    JSON.stringify({ score: 7, tests: [{ score: 1, max_score: 5, visibility: "sometimes", number: "1.2" }] }),
  );
  assert.ok(parsed.ok);
  assert.equal(parsed.results.score, 7);
  assert.equal(parsed.results.tests[0]?.visibility, "hidden");
  assert.equal(parsed.results.tests[0]?.name, "Test 1.2");
  // Gradescope's default: stdout is for instructors.
  assert.equal(parsed.results.stdoutVisibility, "hidden");
});

test("what cannot be read says why, and never quotes the text it could not read", () => {
  const cases: [string, RegExp][] = [
    ["import secret_tests  # hidden", /not JSON$/],
    ["[1, 2]", /not a JSON object/],
    [JSON.stringify({ tests: { a: 1 } }), /tests is not a list/],
    [JSON.stringify({ tests: [3] }), /tests\[0\] is not an object/],
    [JSON.stringify({ output: "hi" }), /no score/],
    [JSON.stringify({ score: "lots" }), /no score/],
    ['{"score": 1e400}', /no score/],
  ];
  for (const [text, message] of cases) {
    const parsed = parseResults(text);
    assert.ok(!parsed.ok, text);
    assert.match(parsed.message, message);
    assert.ok(!parsed.message.includes("secret"), parsed.message);
  }
});

/** A hand-in made as the hand-in copy pod makes it, with its receipt. */
async function handIn(dir: string) {
  const student = join(dir, "student");
  await mkdir(student);
  await writeFile(join(student, "calculator.py"), "def add(a, b):\n    return a + b\n");
  const submission = join(dir, "handin");
  const receipt = await copyTree(student, submission, DEFAULT_LIMITS);
  const autograder = join(dir, "autograder-src");
  await mkdir(join(autograder, "tests"), { recursive: true });
  await writeFile(join(autograder, "run_autograder"), "#!/bin/sh\necho hi\n");
  await writeFile(join(autograder, "tests", "test_add.py"), "assert True\n");
  const snapshot = join(dir, "autograder");
  await copyTree(autograder, snapshot, DEFAULT_LIMITS);
  const work = join(dir, "work");
  await mkdir(work);
  return { submission, receipt, snapshot, work };
}

test("prepare: the hand-in matches its receipt, and /autograder is laid out as Gradescope's harness lays it out", async (t) => {
  const dir = await scratch(t);
  const { submission, receipt, snapshot, work } = await handIn(dir);
  assert.equal(receipt.sha256, sha256sumOfFolder(submission));
  const metadata = { created_at: "2026-12-07T10:00:00Z", assignment: { due_date: "2026-12-08T10:00:00Z" } };
  const done = await prepare({
    submission,
    receiptSha256: receipt.sha256,
    autograder: snapshot,
    work,
    metadata,
    limits: DEFAULT_LIMITS,
  });
  assert.deepEqual(done, { files: 1, sourceFiles: 2 });
  assert.equal((await stat(join(work, "run_autograder"))).mode & 0o777, 0o755);
  // Autograders copy the submission into source/ and run their own scripts there.
  await access(join(work, "source", "tests"), constants.W_OK);
  await access(join(work, "source", "run_autograder"), constants.X_OK);
  assert.deepEqual(JSON.parse(await readFile(join(work, "submission_metadata.json"), "utf8")), metadata);
  assert.ok((await stat(join(work, "results"))).isDirectory());
});

test("prepare refuses a hand-in that is not its receipt's (changed, added to) and an autograder without run_autograder", async (t) => {
  const dir = await scratch(t);
  const { submission, receipt, snapshot, work } = await handIn(dir);
  const wrong = "0".repeat(64);
  await assert.rejects(
    prepare({
      submission,
      receiptSha256: wrong,
      autograder: snapshot,
      work,
      metadata: {},
      limits: DEFAULT_LIMITS,
    }),
    (e: Error) => e instanceof HandInChangedError && e.message.includes(receipt.sha256),
  );
  const empty = join(dir, "empty");
  await mkdir(empty);
  await assert.rejects(
    prepare({
      submission,
      receiptSha256: receipt.sha256,
      autograder: empty,
      work,
      metadata: {},
      limits: DEFAULT_LIMITS,
    }),
    NoRunAutograderError,
  );
});

test("collect keeps results.json and stdout beside the hand-in and returns the score", async (t) => {
  const dir = await scratch(t);
  const work = join(dir, "work");
  await mkdir(join(work, "results"), { recursive: true });
  await writeFile(join(work, "results", "results.json"), JSON.stringify(GRADESCOPE_UTILS));
  await writeFile(join(work, "results", "stdout"), "ran 3 tests\n");
  const out = join(dir, "grades", "a1", "ann", "key1");
  const collected = await collect(work, out);
  assert.ok(collected.ok);
  assert.equal(collected.results.score, 1.5);
  assert.equal(await readFile(join(out, "stdout"), "utf8"), "ran 3 tests\n");
  assert.deepEqual(JSON.parse(await readFile(join(out, "results.json"), "utf8")), GRADESCOPE_UTILS);
  // A run again (the same key) replaces what it kept.
  await writeFile(join(work, "results", "stdout"), "again\n");
  assert.ok((await collect(work, out)).ok);
  assert.equal(await readFile(join(out, "stdout"), "utf8"), "again\n");
});

test("collect: results.json missing (with the exit code and the output's end), a link to a hidden file (not followed), a timeout, too large", async (t) => {
  const dir = await scratch(t);
  const work = join(dir, "work");
  await mkdir(join(work, "results"), { recursive: true });
  await writeFile(join(work, "results", "stdout"), "line 1\nTraceback: boom\n");
  await writeFile(join(work, ".exit_code"), "1\n");
  const missing = await collect(work, join(dir, "a"));
  assert.ok(!missing.ok);
  assert.equal(missing.reason, "ResultsMissing");
  assert.match(missing.message, /exited with code 1 .*Traceback: boom/s);

  await mkdir(join(work, "source"));
  await writeFile(join(work, "source", "hidden_tests.py"), JSON.stringify({ score: 99 }));
  await symlink(join(work, "source", "hidden_tests.py"), join(work, "results", "results.json"));
  const linked = await collect(work, join(dir, "b"));
  assert.ok(!linked.ok);
  assert.equal(linked.reason, "ResultsMissing");

  // The watchdog stopped it: a timeout, with the output so far, whatever results.json says.
  await writeFile(join(work, ".timed_out"), "300\n");
  const timedOut = await collect(work, join(dir, "t"));
  assert.ok(!timedOut.ok);
  assert.equal(timedOut.reason, "TimedOut");
  assert.match(
    timedOut.message,
    /^timed out after 300 s: run_autograder was stopped; its output ends:\n.*boom/s,
  );

  const big = join(dir, "big");
  await mkdir(join(big, "results"), { recursive: true });
  await writeFile(
    join(big, "results", "results.json"),
    `{"score": 1, "output": "${"x".repeat(1024 * 1024)}"}`,
  );
  const large = await collect(big, join(dir, "c"));
  assert.ok(!large.ok);
  assert.equal(large.reason, "ResultsTooLarge");
});

test("the program: prepare and collect as the pod runs them, with exit codes and the termination message", async (t) => {
  const dir = await scratch(t);
  const { submission, receipt, snapshot, work } = await handIn(dir);
  const log = join(dir, "termination-log");
  await writeFile(log, "");
  const prepared = run(
    [
      "prepare",
      "--submission",
      submission,
      "--receipt-sha256",
      receipt.sha256,
      "--autograder",
      snapshot,
      "--work",
      work,
      "--termination-log",
      log,
    ],
    { GRADING_METADATA: JSON.stringify({ id: "s-1" }) },
  );
  assert.equal(prepared.code, 0, prepared.stderr);
  assert.deepEqual(JSON.parse(await readFile(log, "utf8")), { files: 1, sourceFiles: 2 });

  await writeFile(join(work, "results", "results.json"), JSON.stringify(GRADESCOPE_UTILS));
  const collected = run(["collect", "--work", work, "--out", join(dir, "out"), "--termination-log", log]);
  assert.equal(collected.code, 0, collected.stderr);
  const summary = JSON.parse(await readFile(log, "utf8")) as Record<string, unknown>;
  assert.equal(summary.score, 1.5);
  assert.equal(summary.testCount, 3);
  // Outputs stay in the collection: the operator's status gets the numbers.
  assert.ok(!JSON.stringify(summary).includes("AssertionError"));

  await writeFile(join(work, "results", "results.json"), "not json");
  const invalid = run(["collect", "--work", work, "--out", join(dir, "out"), "--termination-log", log]);
  assert.equal(invalid.code, 3);
  assert.deepEqual(JSON.parse(await readFile(log, "utf8")), {
    error: { kind: "ResultsInvalid", message: "results.json invalid: it is not JSON" },
  });

  assert.equal(run(["prepare", "--work", work]).code, 2);
  assert.equal(run(["grade"]).code, 2);
  assert.match(run(["--help"]).stdout, /Gradescope/);
});
