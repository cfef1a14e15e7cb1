/**
 * The last step of a grading pod, from the platform's image once the autograder has run
 * (docs/decisions/0015-grading.md): read /autograder/results/results.json and the captured stdout,
 * never through a link and never more than a cap, keep both in the collection beside the hand-in,
 * and summarize the result for the operator. The autograder's folder was writable by the
 * submission's code, so everything in it is read as untrusted.
 */
import { lstat, mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { READ_FLAGS } from "../files/beneath.ts";
import { formatBytes } from "../files/limits.ts";
import { parseResults, type Results } from "./results.ts";

/** results.json's cap (Gradescope's own limit is of this order). */
export const RESULTS_MAX_BYTES = 1024 * 1024;
/** The captured stdout kept: its first MiB. */
export const STDOUT_MAX_BYTES = 1024 * 1024;

export type Collected =
  | { ok: true; results: Results }
  | {
      ok: false;
      reason: "ResultsMissing" | "ResultsInvalid" | "ResultsTooLarge" | "TimedOut";
      message: string;
    };

/** Up to `max` bytes of a regular file, never through a link; `size` is the file's whole size. */
async function readCapped(path: string, max: number): Promise<{ text: string; size: number } | undefined> {
  let handle;
  try {
    handle = await open(path, READ_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return undefined;
    const buffer = Buffer.alloc(Math.min(max, stats.size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { text: buffer.subarray(0, bytesRead).toString("utf8"), size: stats.size };
  } finally {
    await handle.close();
  }
}

/** The last lines of the autograder's output, for a teacher reading why there is no result. */
function tail(text: string, lines = 5): string {
  const last = text.trimEnd().split("\n").slice(-lines).join("\n");
  return last.length > 600 ? `…${last.slice(-600)}` : last;
}

export async function collect(work: string, out: string): Promise<Collected> {
  const results = join(work, "results");
  const stdout = await readCapped(join(results, "stdout"), STDOUT_MAX_BYTES);
  const exit = (await readCapped(join(work, ".exit_code"), 16))?.text.trim();
  // The watchdog's note (operator/grading/gradePods.ts): the run was stopped at its timeout.
  const timedOut = (await readCapped(join(work, ".timed_out"), 16))?.text.trim();
  const json = await readCapped(join(results, "results.json"), RESULTS_MAX_BYTES + 1);
  // Kept whatever the outcome: a teacher fixing the autograder reads its output.
  const partial = `${out}.partial`;
  // The assignment's and the student's folders are made on their first run.
  await mkdir(dirname(out), { recursive: true, mode: 0o755 });
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { mode: 0o755 });
  if (stdout) await writeFile(join(partial, "stdout"), stdout.text);
  let collected: Collected;
  const ends = stdout?.text.trim() ? `; its output ends:\n${tail(stdout.text)}` : "";
  if (timedOut !== undefined) {
    collected = {
      ok: false,
      reason: "TimedOut",
      message: `timed out after ${/^\d+$/.test(timedOut) ? timedOut : "its"} s: run_autograder was stopped${ends}`,
    };
  } else if (!json) {
    collected = {
      ok: false,
      reason: "ResultsMissing",
      message: `results.json missing: run_autograder${exit ? ` exited with code ${exit}` : " ended"} without writing /autograder/results/results.json${ends}`,
    };
  } else if (json.size > RESULTS_MAX_BYTES) {
    collected = {
      ok: false,
      reason: "ResultsTooLarge",
      message: `results.json too large: ${formatBytes(json.size)} (at most ${formatBytes(RESULTS_MAX_BYTES)})`,
    };
  } else {
    const parsed = parseResults(json.text);
    collected = parsed.ok ? parsed : { ok: false, reason: "ResultsInvalid", message: parsed.message };
  }
  if (json && json.size <= RESULTS_MAX_BYTES) await writeFile(join(partial, "results.json"), json.text);
  if (await lstat(out).catch(() => undefined)) await rm(out, { recursive: true, force: true });
  await rename(partial, out);
  return collected;
}
