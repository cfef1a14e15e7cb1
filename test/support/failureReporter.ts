/**
 * A reporter for node's test runner that writes, for each failing test, its file, its name and the
 * first lines of why it failed, so test/run.ts can repeat them after the time table: a long run's
 * log is often seen only by its tail (CI keeps the last lines), and the spec reporter's account of
 * a failure may be thousands of lines further up.
 */
import { relative } from "node:path";
import type { TestEvent } from "node:test/reporters";

/** How many lines of one failure's message are kept: enough for an assertion's diff, not a log. */
const MESSAGE_LINES = 12;

/** The error the test itself threw: the runner wraps it in an error of its own with it as the cause. */
function causeOf(error: unknown): unknown {
  const wrapped = error as { code?: string; cause?: unknown };
  return wrapped?.code === "ERR_TEST_FAILURE" && wrapped.cause !== undefined ? wrapped.cause : error;
}

/** The message and the first frame in our own code (neither node's internals nor node_modules). */
function describe(error: unknown): string {
  const cause = causeOf(error);
  if (!(cause instanceof Error)) return String(cause);
  const lines = cause.message.split("\n").slice(0, MESSAGE_LINES);
  const frame = (cause.stack ?? "")
    .split("\n")
    .map((line) => line.trim())
    .find((line) => line.startsWith("at ") && line.includes("file://") && !line.includes("/node_modules/"));
  if (frame) lines.push(frame.replace(`file://${process.cwd()}/`, ""));
  return lines.join("\n");
}

export default async function* failureReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== "test:fail" || event.data.todo) continue;
    const { file, name, details } = event.data;
    // A parent that failed because a subtest did says nothing the subtest's own line does not.
    if ((details.error as { failureType?: string }).failureType === "subtestsFailed") continue;
    const where = file ? relative(process.cwd(), file) : "(no file)";
    yield `${JSON.stringify({ file: where, test: name, why: describe(details.error) })}\n`;
  }
}

/** The failures the reporter wrote, as comment lines for the end of a run; none when none failed. */
export function failureLines(jsonl: string): string[] {
  const failures = jsonl
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { file: string; test: string; why: string });
  if (failures.length === 0) return [];
  return [
    `# failed tests: ${failures.length}`,
    ...failures.flatMap(({ file, test, why }) => [
      `#   ${file} › ${test}`,
      ...why.split("\n").map((line) => `#       ${line}`),
    ]),
  ];
}
