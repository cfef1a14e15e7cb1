/**
 * Runs test files with node's test runner in the order given (test/run.ts puts the longest first),
 * each in a process of its own as `node --test` does: `node --test` itself sorts its files by name,
 * which can leave a long file to start last and run alone at the end. Reports with the spec
 * reporter to stdout, test/support/durationReporter.ts and test/support/failureReporter.ts to a
 * file each; exits 1 when a test failed.
 *
 * Usage (test/run.ts): node test/support/runFiles.ts <durations file> <failures file> <concurrency>
 * [--test-name-pattern=P] [--test-only] -- <file>...
 */
import { createWriteStream } from "node:fs";
import { Duplex } from "node:stream";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import durationReporter from "./durationReporter.ts";
import failureReporter from "./failureReporter.ts";

const args = process.argv.slice(2);
const [durationsFile, failuresFile, concurrencyText] = args;
const split = args.indexOf("--");
const options = args.slice(3, split < 0 ? args.length : split);
const files = split < 0 ? [] : args.slice(split + 1);
const concurrency = Number(concurrencyText);
if (
  !durationsFile ||
  !failuresFile ||
  !Number.isInteger(concurrency) ||
  concurrency < 1 ||
  files.length === 0
) {
  console.error(
    "usage: runFiles.ts <durations file> <failures file> <concurrency ≥ 1> [options] -- <file>...",
  );
  process.exit(2);
}
const testNamePatterns: string[] = [];
let only = false;
for (const option of options) {
  if (option.startsWith("--test-name-pattern=")) testNamePatterns.push(option.slice(20));
  else if (option === "--test-only") only = true;
  else {
    console.error(`runFiles.ts: ${option} is not supported (only --test-name-pattern=… and --test-only)`);
    process.exit(2);
  }
}

// Stopped (test/run.ts passes on its signals): abort, which ends every test file's process too.
const stop = new AbortController();
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(signal, () => {
    process.exitCode = 1;
    stop.abort();
  });

const stream = run({
  files,
  signal: stop.signal,
  concurrency,
  timeout: 600_000,
  only,
  ...(testNamePatterns.length > 0 ? { testNamePatterns } : {}),
});
stream.on("test:fail", (data) => {
  // As `node --test`: a failing test marked todo does not fail the run.
  if (!data.todo) process.exitCode = 1;
});
stream.pipe(new spec()).pipe(process.stdout);
stream.pipe(Duplex.from(durationReporter)).pipe(createWriteStream(durationsFile));
stream.pipe(Duplex.from(failureReporter)).pipe(createWriteStream(failuresFile));
