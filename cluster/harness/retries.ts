/**
 * A retry in the test support is said, never silent: one line with a fixed prefix in the output,
 * and the same line appended to the run's retry log, which test/run.ts counts at the end. A flaky
 * path then shows in every log, with where and why, instead of passing unnoticed.
 */
import { appendFileSync } from "node:fs";

/** The line's prefix, the same in the output and the retry log. */
export const RETRY_PREFIX = "# RETRY ";
/** The file test/run.ts gives every test process for its retry lines. */
export const RETRY_LOG_ENV = "USERLAND_RETRY_LOG";

/** Says that `where` (a file and what it does) tries again, and `why` (the first line). */
export function noteRetry(where: string, why: string): void {
  const line = `${RETRY_PREFIX}${where}: ${why.split("\n")[0]}`;
  process.stdout.write(`${line}\n`);
  const log = process.env[RETRY_LOG_ENV];
  if (log) appendFileSync(log, `${line}\n`);
}
