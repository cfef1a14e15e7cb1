/**
 * The platform's steps of a grading pod (`node coursework/grade.ts …`, docs/decisions/0015-
 * grading.md), on either side of the autograder's own container: `prepare` checks the hand-in
 * against its receipt and lays out Gradescope's /autograder; `collect` reads the results back and
 * keeps them in the collection. Each reports JSON on stdout and, shortened, in the termination
 * message the operator reads.
 */
import { parseArgs } from "node:util";
import { LimitError } from "./files/limits.ts";
import { DEFAULT_LIMITS } from "../api/copyPrograms.ts";
import { writeTerminationLog } from "./files/report.ts";
import { collect } from "./grading/collect.ts";
import { HandInChangedError, NoRunAutograderError, prepare } from "./grading/prepare.ts";

const HELP = `Usage: node coursework/grade.ts <command> [options]

The platform's steps of a grading pod, before and after the autograder runs (Gradescope's layout).

Commands:
  prepare   Check that --submission's files hash to --receipt-sha256 (the receipt's manifest
            hash), then lay out --work as Gradescope's /autograder: source/ (a writable copy of
            --autograder), run_autograder, submission_metadata.json (the JSON object in the
            environment variable GRADING_METADATA) and an empty results/.
  collect   Read --work's results/results.json (at most 1 MiB, never through a link) and
            results/stdout (its first MiB), write both into the new folder --out and print the
            score and the tests (or why there is none).

Options:
  --submission PATH        prepare: the hand-in, as the autograder will see it
  --receipt-sha256 HEX     prepare: its receipt's SHA-256
  --autograder PATH        prepare: the autograder's snapshot
  --work PATH              Gradescope's /autograder
  --out PATH               collect: where its results are kept
  --termination-log PATH   Where the shortened result goes, when the file exists
                           (default /dev/termination-log)
  -h, --help               This text

Exit codes: 0 done; 1 failed; 2 invalid arguments; 3 no result (collect: results.json missing,
too large or invalid; prepare: the hand-in does not match its receipt, or no run_autograder).
`;

const EXIT = { failed: 1, usage: 2, noResult: 3 } as const;

class UsageError extends Error {}

function parse(argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        submission: { type: "string" },
        "receipt-sha256": { type: "string" },
        autograder: { type: "string" },
        work: { type: "string" },
        out: { type: "string" },
        "termination-log": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true as const };
  const [command, ...rest] = positionals;
  if (command !== "prepare" && command !== "collect")
    throw new UsageError(
      command === undefined
        ? "name a command: prepare or collect"
        : `unknown command ${JSON.stringify(command)}`,
    );
  if (rest.length > 0) throw new UsageError(`${command} takes options only, got ${JSON.stringify(rest[0])}`);
  const need = (flag: keyof typeof values): string => {
    const value = values[flag];
    if (typeof value !== "string" || value === "") throw new UsageError(`${command} needs --${flag}`);
    return value;
  };
  const terminationLog = values["termination-log"] ?? "/dev/termination-log";
  if (command === "collect")
    return {
      help: false as const,
      command: "collect" as const,
      work: need("work"),
      out: need("out"),
      terminationLog,
    };
  const receiptSha256 = need("receipt-sha256");
  if (!/^[0-9a-f]{64}$/.test(receiptSha256))
    throw new UsageError("--receipt-sha256 must be 64 lowercase hex digits");
  let metadata: unknown;
  try {
    metadata = JSON.parse(process.env.GRADING_METADATA ?? "{}");
  } catch {
    throw new UsageError("GRADING_METADATA must be a JSON object");
  }
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
    throw new UsageError("GRADING_METADATA must be a JSON object");
  return {
    help: false as const,
    command: "prepare" as const,
    submission: need("submission"),
    receiptSha256,
    autograder: need("autograder"),
    work: need("work"),
    metadata: metadata as Record<string, unknown>,
    terminationLog,
  };
}

async function main(): Promise<number> {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`grade: ${(error as Error).message}\nRun with --help for the usage.\n`);
    return EXIT.usage;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const report = (result: object, code: number) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    writeTerminationLog(args.terminationLog, result);
    return code;
  };
  try {
    if (args.command === "collect") {
      const collected = await collect(args.work, args.out);
      if (!collected.ok)
        return report({ error: { kind: collected.reason, message: collected.message } }, EXIT.noResult);
      const { tests, ...totals } = collected.results;
      // Outputs stay in the collection; the operator gets the numbers.
      return report(
        {
          ...totals,
          output: undefined,
          testCount: tests.length,
          tests: tests.map(({ output: _output, ...test }) => test),
        },
        0,
      );
    }
    const prepared = await prepare({ ...args, limits: DEFAULT_LIMITS });
    return report(prepared, 0);
  } catch (error) {
    const kind =
      error instanceof HandInChangedError
        ? "HandInChanged"
        : error instanceof NoRunAutograderError
          ? "NoRunAutograder"
          : error instanceof LimitError
            ? "OverLimit"
            : "failed";
    return report(
      { error: { kind, message: (error as Error).message } },
      kind === "failed" ? EXIT.failed : EXIT.noResult,
    );
  }
}

process.exitCode = await main();
