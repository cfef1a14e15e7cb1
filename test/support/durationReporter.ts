/**
 * A reporter for node's test runner (`--test-reporter=./test/support/durationReporter.ts`) that
 * writes one line per test file: its duration in milliseconds (its process's whole life, hooks
 * included), pass or fail, and its path, so test/run.ts can print the slowest files at the end.
 */
import { resolve } from "node:path";
import type { TestEvent } from "node:test/reporters";

export default async function* durationReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    // A file's own entry: the runner names it by its path as given (relative to the working directory).
    if (event.type !== "test:complete") continue;
    const { file, name } = event.data;
    if (!file || resolve(name) !== file) continue;
    const { details } = event.data;
    yield `${Math.round(details.duration_ms)}\t${details.passed ? "pass" : "fail"}\t${file}\n`;
  }
}
