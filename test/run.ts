/**
 * The one test command (`npm test`): starts a real control plane and a real node once for the whole
 * run, runs every test file with node's test runner against them (then the *.alone.ts files, one at a
 * time but for ownClusterFiles), and tears both down at the end,
 * also when the run is interrupted. Arguments are files or globs to run instead (e.g. one file), and
 * --test-name-pattern=… or --test-only as `node --test` takes them.
 *
 * Files start longest first, by the last run's times (test-durations.tsv in the build cache,
 * cluster/buildCache.ts, so a fresh clone has them too; updated at the end of every run; files
 * without a time start first), so that no long file starts last and runs
 * on by itself while the other slot idles. `node --test` would sort them by name; test/support/
 * runFiles.ts runs them in the order given.
 *
 * USERLAND_REAL_NODE=off leaves the real node out (its tests then fail, saying so); any other value
 * or none starts it, and a machine that cannot run it fails the run with the reason.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  existsSync,
  globSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative, resolve } from "node:path";
import { ControlPlane, diesWithParent } from "../cluster/controlPlane.ts";
import { RealNode } from "../cluster/node/realNode.ts";
import { CLUSTER_INFO_ENV } from "../cluster/harness/connect.ts";
import { RETRY_LOG_ENV } from "../cluster/harness/retries.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { buildCache } from "../cluster/buildCache.ts";
import { startOnDemandBuild } from "../cluster/onDemandTools.ts";
import {
  formatTable,
  growthWarning,
  parseSetupTimes,
  recordOf,
  runKind,
  type RunRecord,
  type RunTimes,
  type SetupTimes,
} from "./support/timeTable.ts";
import { failureLines } from "./support/failureReporter.ts";

const defaultPatterns = [
  "test/**/*.test.ts",
  "operator/**/*.test.ts",
  "services/**/*.test.ts",
  "lib/**/*.test.ts",
  "api/**/*.test.ts",
  "coursework/**/*.test.ts",
];
/**
 * Run after every other file, one at a time, named *.alone.ts so that the patterns above leave them
 * out: tests that start a second real node of their own (while another real node starts beside the
 * shared one, the shared node's relayed traffic was seen failing), tests that install ESC's CRDs
 * (while they exist, kubectl's "userland" and "template" name two kinds each), the Jupyter test
 * (its relayed request was twice left unanswered beside other files), and an operator serving
 * every namespace (it would reconcile other files' Userlands beside their own operators).
 */
const alonePatterns = ["test/**/*.alone.ts"];
/**
 * Alone files with a control plane and a real node of their own, which touch neither of the shared
 * ones: each runs beside the alone files that use the shared control plane but no real node (ESC's
 * CRDs, the operator serving every namespace; one at a time), before the alone files on the
 * shared real node (test/node/, one at a time).
 */
const ownClusterFiles = ["test/node/start.alone.ts"];

const args = process.argv.slice(2);
const patterns = args.filter((a) => !a.startsWith("-"));
const flags = args.filter((a) => a.startsWith("-"));

/** Each file's milliseconds in the runs before (relative path → ms), kept across runs. */
const historyFile = join(buildCache, "test-durations.tsv");
/**
 * A machine's first run (an empty build cache) orders by the times of a recorded whole run instead,
 * checked in (a copy of a machine's `test-durations.tsv`, refreshed now and then): without any, the
 * files went by kind and name, and a fresh machine's run ended with one long file running alone.
 */
const baselineFile = join(repoRoot, "test", "durations.tsv");
const readDurations = (file: string): [string, number][] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("\t"))
    .map(([ms, path]): [string, number] => [path ?? "", Number(ms)]);
const history = new Map<string, number>(
  existsSync(historyFile)
    ? readDurations(historyFile)
    : existsSync(baselineFile)
      ? readDurations(baselineFile)
      : [],
);

/** The files `patterns` name, longest first by `history` (files it has no time for first of all). */
function ordered(patterns: string[]): string[] {
  const files = new Set<string>();
  for (const pattern of patterns) {
    const matches = globSync(pattern, { cwd: repoRoot, exclude: (name) => name === "node_modules" });
    if (matches.length === 0) {
      console.error(`no test file matches ${pattern}`);
      process.exit(1);
    }
    for (const match of matches) files.add(relative(repoRoot, resolve(repoRoot, match)));
  }
  const time = (file: string) => history.get(file) ?? Infinity;
  // Without times (a new machine), the real-node and browser files, the longest kinds, go first.
  const kind = (file: string) => (file.startsWith("test/node/") ? 0 : file.startsWith("test/e2e/") ? 1 : 2);
  return [...files].sort((a, b) => time(b) - time(a) || kind(a) - kind(b) || a.localeCompare(b));
}

const runStarted = Date.now();
/**
 * scripts/bootstrap.sh's rows (the set-up phases); the on-demand tools' build and the test files
 * add theirs. Taken only when bootstrap ran just before this run (npm test), not a stale file.
 */
const setupTimesFile = process.env.USERLAND_SETUP_TIMES ?? join(repoRoot, ".userland", "setup-times.tsv");
const setupTimesFresh = existsSync(setupTimesFile) && runStarted - statSync(setupTimesFile).mtimeMs < 120_000;
if (!setupTimesFresh) {
  mkdirSync(join(repoRoot, ".userland"), { recursive: true });
  writeFileSync(setupTimesFile, "");
}

/**
 * The files that use an on-demand tool (cluster/onDemandTools.ts: Prometheus, Traefik). When the
 * tools were not built yet (a run without npm test's set-up), they run after the other files, once
 * the build started below has ended, so that none of them holds a slot or a hook waiting for it.
 */
const onDemandFiles = [
  "test/node/platform.test.ts",
  "test/chart/alerts.test.ts",
  "test/chart/metrics.test.ts",
  "test/security/forwardAuth.test.ts",
];

// Worked out before anything starts: a pattern that matches nothing ends the run at once.
let mainFiles = ordered(patterns.length > 0 ? patterns : defaultPatterns);
const aloneFiles = patterns.length > 0 ? [] : ordered(alonePatterns);

/** Started beside the control plane and the first test files when a file needs the tools. */
let onDemandBuild: ChildProcess | undefined;
/**
 * The files that wait for the on-demand build, when it was not cached: they run after the other
 * files, once it has ended (a test hook's timeout is no limit for a half-hour build).
 */
let afterOnDemandBuild: { files: string[]; built: Promise<unknown> } | undefined;
if (mainFiles.some((f) => onDemandFiles.includes(f))) {
  mkdirSync(join(repoRoot, ".userland"), { recursive: true });
  const log = openSync(join(repoRoot, ".userland", "on-demand-tools.log"), "w");
  const build = startOnDemandBuild(log, { ...process.env, USERLAND_SETUP_TIMES: setupTimesFile });
  onDemandBuild = build;
  const built = new Promise((resolve) => build.once("exit", resolve));
  // Cached, the build script answers within a second or two; otherwise it is building now.
  const cached = await Promise.race([
    built.then(() => build.exitCode === 0),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000).unref()),
  ]);
  if (!cached) {
    console.log(
      "# building Prometheus and Traefik beside the first test files (.userland/on-demand-tools.log)",
    );
    afterOnDemandBuild = { files: mainFiles.filter((f) => onDemandFiles.includes(f)), built };
    mainFiles = mainFiles.filter((f) => !onDemandFiles.includes(f));
  }
}

// USERLAND_TEST_CLUSTER_DIR lets two test runs in one checkout keep their control planes apart.
const controlPlane = new ControlPlane({
  dir: process.env.USERLAND_TEST_CLUSTER_DIR ?? join(repoRoot, ".userland", "test-cluster"),
});
const realNode =
  process.env.USERLAND_REAL_NODE === "off"
    ? undefined
    : new RealNode({ controlPlane, dir: join(controlPlane.dir, "node") });
// Every exit path (a signal, the test runner ending, a failed start) waits for the same teardown.
let stopped: Promise<void> | undefined;
async function shutdown(code: number, signal?: NodeJS.Signals): Promise<never> {
  stopped ??= (async () => {
    await stopTestProcesses(signal);
    if (onDemandBuild?.pid && onDemandBuild.exitCode === null && onDemandBuild.signalCode === null)
      signalGroup(onDemandBuild.pid, "SIGTERM");
    await realNode
      ?.stop({ keepFiles: code !== 0 })
      .catch((e: unknown) => console.error("stopping the real node:", e));
    await controlPlane
      .stop({ keepFiles: code !== 0 })
      .catch((e: unknown) => console.error("stopping control plane:", e));
  })();
  await stopped;
  process.exit(code);
}

/**
 * The test runner runs in a process group of its own with every test file and whatever they start
 * (operators, components, browsers), so that the whole group can be stopped at once: interrupted,
 * the runner had let its test files run on (their parent gone) for minutes after this process
 * ended.
 */
const runners = new Set<ChildProcess>();
/** Sends `signal` to the process group `group`; false when it has no process left. */
function signalGroup(group: number | undefined, signal: NodeJS.Signals | 0): boolean {
  if (!group) return false;
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false;
  }
}
/**
 * After its runner ended, the group should empty within seconds (processes that die with their
 * test file get its signal as it exits): what is still there after 5 s (a test file killed at its
 * timeout leaves its children) is named and killed, so a leak shows in the log instead of running on.
 */
async function killLeftovers(group: number | undefined): Promise<void> {
  for (const deadline = Date.now() + 5000; signalGroup(group, 0) && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 100));
  if (!signalGroup(group, 0)) return;
  const left = (spawnSync("ps", ["-eo", "pgid=,pid=,args="], { encoding: "utf8" }).stdout ?? "")
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([pgid]) => Number(pgid) === group)
    .map(([, pid, ...args]) => `#   ${pid} ${args.join(" ").slice(0, 200)}`);
  console.log(["# processes the test files left running, killed now:", ...left].join("\n"));
  signalGroup(group, "SIGKILL");
}
/** Passes `signal` on to the running test processes, waits up to 15 s for the runners, then kills the rest. */
async function stopTestProcesses(signal: NodeJS.Signals | undefined): Promise<void> {
  const running = [...runners].filter((r) => r.exitCode === null && r.signalCode === null);
  if (!signal || running.length === 0) return;
  for (const runner of running) signalGroup(runner.pid, signal);
  await Promise.all(
    running.map(
      (runner) =>
        new Promise((resolve) => {
          const timer = setTimeout(resolve, 15_000);
          runner.once("exit", () => resolve(clearTimeout(timer)));
        }),
    ),
  );
  for (const runner of running) signalGroup(runner.pid, "SIGKILL");
}

// Registered before anything starts: an interrupted start-up cleans up as well.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(signal, () => void shutdown(130, signal));

/** What the run spent its time on, in order: the phases this file controls. */
const phases: [string, number][] = [];
async function phase<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    phases.push([name, Date.now() - started]);
  }
}
const gitStatus = () =>
  spawnSync("git", ["status", "--porcelain"], { cwd: repoRoot, encoding: "utf8" }).stdout ?? "";
const treeBefore = gitStatus();

const info = await phase("control plane start", () => controlPlane.start()).catch(async (error: unknown) => {
  console.error(`could not start the test control plane: ${(error as Error).message}`);
  return shutdown(1);
});
const nodeInfo = await (realNode ? phase("real node start", () => realNode.start()) : undefined)?.catch(
  async (error: unknown) => {
    console.error(`could not start the real node: ${(error as Error).message}`);
    return shutdown(1);
  },
);
const infoFile = join(controlPlane.dir, "cluster.json");
writeFileSync(infoFile, JSON.stringify({ ...info, realNode: nodeInfo }, null, 2));
/** Every retry in the test support appends its line here (cluster/harness/retries.ts). */
const retryLog = join(controlPlane.dir, "retries.log");
writeFileSync(retryLog, "");
/** One line per test file: duration, result, path (test/support/durationReporter.ts). */
const durationsFile = join(controlPlane.dir, "durations.tsv");
writeFileSync(durationsFile, "");
/** One JSON line per failed test: file, name, why (test/support/failureReporter.ts). */
const failuresFile = join(controlPlane.dir, "failures.jsonl");
writeFileSync(failuresFile, "");

let batches = 0;
/** Runs `files` with node's test runner in the order given; resolves with its exit code. */
function runTests(files: string[], concurrency: string): Promise<number> {
  // Interrupted while the batch before ran: the alone files must not start against a stopping cluster.
  if (stopped) return Promise.resolve(130);
  if (files.length === 0) return Promise.resolve(0);
  // Each batch's reporter writes a file of its own (batches may run side by side), added up at its end.
  const part = `${durationsFile}.${++batches}`;
  const failuresPart = `${failuresFile}.${batches}`;
  // The test runner, too, ends with this process, even when it is killed outright.
  const runner = spawn(
    ...diesWithParent(
      process.execPath,
      ["test/support/runFiles.ts", part, failuresPart, concurrency, ...flags, "--", ...files],
      "SIGTERM",
    ),
    {
      stdio: "inherit",
      detached: true, // its own process group (above); also out of the terminal's, so Ctrl-C comes from here
      cwd: repoRoot,
      env: {
        ...process.env,
        [CLUSTER_INFO_ENV]: infoFile,
        [RETRY_LOG_ENV]: retryLog,
        USERLAND_SETUP_TIMES: setupTimesFile,
      },
    },
  );
  runners.add(runner);
  return new Promise<number>((resolve) =>
    runner.on("exit", (code, signal) => {
      if (existsSync(part)) writeFileSync(durationsFile, readFileSync(part), { flag: "a" });
      if (existsSync(failuresPart)) writeFileSync(failuresFile, readFileSync(failuresPart), { flag: "a" });
      resolve(code ?? (signal ? 1 : 0));
    }),
  ).then(async (code) => {
    await killLeftovers(runner.pid);
    return code;
  });
}

/** Where every run's table is kept: the build cache outlives CI's fresh clones. */
const timesDir = join(buildCache, "test-times");

/** The run's last lines: where the time went, a warning if it grew, every retry, each failed test, a changed tree. */
function summary(code: number): void {
  const files = readFileSync(durationsFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("\t"))
    .map(([ms, result, file]) => ({
      ms: Number(ms),
      phase: `${relative(repoRoot, file ?? "")}${result === "fail" ? "  (failed)" : ""}`,
      file: relative(repoRoot, file ?? ""),
    }));
  for (const f of files) history.set(f.file, f.ms);
  mkdirSync(buildCache, { recursive: true });
  writeFileSync(historyFile, [...history].map(([file, ms]) => `${ms}\t${file}\n`).join(""));

  const setup: SetupTimes = parseSetupTimes(
    existsSync(setupTimesFile) ? readFileSync(setupTimesFile, "utf8") : "",
  );
  const times: RunTimes = {
    kind: runKind(setup.rows),
    totalMs: Date.now() - (setup.startedAt ?? runStarted),
    setup: setup.rows,
    run: phases.map(([phase, ms]) => ({ phase, ms })),
    files: files.map(({ phase, ms }) => ({ phase, ms })),
  };
  const lines = ["", ...formatTable(times)];
  // Only whole runs are compared and kept: a few files say nothing about the next whole run.
  if (patterns.length === 0) {
    mkdirSync(timesDir, { recursive: true });
    const lastFile = join(timesDir, `last-${times.kind}.json`);
    const last = existsSync(lastFile) ? (JSON.parse(readFileSync(lastFile, "utf8")) as RunRecord) : undefined;
    lines.push(...(growthWarning(times, last) ?? []));
    const at = new Date();
    if (code === 0) writeFileSync(lastFile, JSON.stringify(recordOf(times, at), null, 2));
    const table = `${lines.join("\n").trim()}\n`;
    writeFileSync(join(timesDir, `${at.toISOString().replace(/[:.]/g, "-")}-${times.kind}.txt`), table);
    // The newest 50 tables are kept.
    const kept = readdirSync(timesDir)
      .filter((f) => f.endsWith(".txt"))
      .sort();
    for (const old of kept.slice(0, -50)) rmSync(join(timesDir, old));
    mkdirSync(join(repoRoot, "artifacts"), { recursive: true });
    writeFileSync(join(repoRoot, "artifacts", "test-times.txt"), table);
    lines.push(`# this table: artifacts/test-times.txt and ${timesDir}`);
  }
  const retries = readFileSync(retryLog, "utf8").split("\n").filter(Boolean);
  lines.push(...retries, `# retries: ${retries.length}`);
  lines.push(...failureLines(readFileSync(failuresFile, "utf8")));
  const treeAfter = gitStatus();
  if (treeAfter !== treeBefore)
    lines.push(
      `# the run changed the working tree (git status before and after differ):`,
      ...treeAfter
        .split("\n")
        .filter(Boolean)
        .map((l) => `#   ${l}`),
    );
  console.log(lines.join("\n"));
}

const concurrency = process.env.TEST_CONCURRENCY ?? "2";
/** The main phase: every file but the alone ones, those that wait for the on-demand tools last. */
async function mainPhase(): Promise<number> {
  const first = await phase("test files", () => runTests(mainFiles, concurrency));
  if (!afterOnDemandBuild) return first;
  const { files, built } = afterOnDemandBuild;
  await phase("waiting for the on-demand build (Prometheus, Traefik)", () => built);
  const after = await phase("test files that use Prometheus or Traefik", () => runTests(files, concurrency));
  return first !== 0 ? first : after;
}
let code: number;
if (patterns.length > 0) {
  code = await mainPhase();
} else {
  const first = await mainPhase();
  const [ownCluster, controlPlaneOnly] = await phase(
    `${ownClusterFiles.join(", ")} beside the *.alone.ts files without the real node`,
    () =>
      Promise.all([
        runTests(
          aloneFiles.filter((f) => ownClusterFiles.includes(f)),
          "1",
        ),
        runTests(
          aloneFiles.filter((f) => !ownClusterFiles.includes(f) && !f.startsWith("test/node/")),
          "1",
        ),
      ]),
  );
  const onNode = await phase("*.alone.ts files on the real node, one at a time", () =>
    runTests(
      aloneFiles.filter((f) => !ownClusterFiles.includes(f) && f.startsWith("test/node/")),
      "1",
    ),
  );
  code = [first, ownCluster, controlPlaneOnly, onNode].find((c) => c !== 0) ?? 0;
}
summary(code);
await shutdown(code);
