/**
 * The table `npm test` ends with: where a run's time went, set-up (npm and Debian packages, each Go
 * tool, each image: built or from cache) and run (control plane, node, each test file), and the
 * guard that warns when a run took much longer than the last one of its kind. Pure functions over
 * rows; test/run.ts reads and writes the files.
 */

export interface TimeRow {
  phase: string;
  ms: number;
  /** Set-up only: taken from a cache instead of built or installed. */
  cached?: boolean;
}

/** A cold run built something (a Go tool, an image); a warm one took everything from caches. */
export type RunKind = "cold" | "warm";

export interface SetupTimes {
  /** When scripts/bootstrap.sh started (ms since the epoch), if it ran. */
  startedAt: number | undefined;
  rows: TimeRow[];
}

/**
 * Reads scripts/bootstrap.sh's file: "# bootstrap started	<ms>", then "<phase>	<ms>	built|cached[	<start>]"
 * rows. A phase named twice (a tool asked for by several test files) keeps its built row, or its
 * longest.
 */
export function parseSetupTimes(text: string): SetupTimes {
  let startedAt: number | undefined;
  const byPhase = new Map<string, TimeRow>();
  for (const line of text.split("\n")) {
    const [first, second, third] = line.split("\t");
    if (!first || second === undefined) continue;
    if (first === "# bootstrap started") {
      startedAt = Number(second);
      continue;
    }
    const row: TimeRow = { phase: first, ms: Number(second), cached: third !== "built" };
    if (!Number.isFinite(row.ms)) continue;
    const before = byPhase.get(first);
    if (!before || (before.cached && !row.cached) || (before.cached === row.cached && row.ms > before.ms))
      byPhase.set(first, row);
  }
  return { startedAt, rows: [...byPhase.values()] };
}

export function runKind(setup: TimeRow[]): RunKind {
  return setup.some((r) => !r.cached && (r.phase.startsWith("Go: ") || r.phase.startsWith("image: ")))
    ? "cold"
    : "warm";
}

export interface RunTimes {
  kind: RunKind;
  /** From bootstrap's start (or the runner's, without one) to the end. */
  totalMs: number;
  setup: TimeRow[];
  /** The runner's own phases: control plane and node start, each batch of test files. */
  run: TimeRow[];
  /** Each test file's own time, its process's whole life. */
  files: TimeRow[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`.padStart(9);
const minutes = (ms: number) => `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

/** The table, every line starting with "#" as the runner's other closing lines do. */
export function formatTable(times: RunTimes): string[] {
  const width = Math.max(40, ...[...times.setup, ...times.run].map((r) => r.phase.length));
  const lines = [`# where the time went (a ${times.kind} run, ${minutes(times.totalMs)} in all):`];
  if (times.setup.length > 0) {
    lines.push(`#   set-up (scripts/bootstrap.sh; images in the background while Go compiles)`);
    lines.push(`#     ${"phase".padEnd(width)} ${"time".padStart(9)}  from cache`);
    for (const r of times.setup)
      lines.push(`#     ${r.phase.padEnd(width)} ${seconds(r.ms)}  ${r.cached ? "yes" : "no"}`);
  }
  lines.push(`#   run (test/run.ts)`);
  for (const r of times.run) lines.push(`#     ${r.phase.padEnd(width)} ${seconds(r.ms)}`);
  lines.push(`#   test files, longest first (each its own time; the main phase runs several at once)`);
  for (const r of [...times.files].sort((a, b) => b.ms - a.ms))
    lines.push(`#     ${seconds(r.ms)}  ${r.phase}`);
  lines.push(`#   in all: ${seconds(times.totalMs).trim()} (${minutes(times.totalMs)}), a ${times.kind} run`);
  return lines;
}

/** What a run is compared with next time: its total and each phase's and file's time. */
export interface RunRecord {
  at: string;
  totalMs: number;
  ms: Record<string, number>;
}

export function recordOf(times: RunTimes, at: Date): RunRecord {
  const ms: Record<string, number> = {};
  for (const r of [...times.setup, ...times.run, ...times.files]) ms[r.phase] = r.ms;
  return { at: at.toISOString(), totalMs: times.totalMs, ms };
}

/** A run this much longer than the last of its kind is warned about. */
export const GROWTH_WARNING = 1.2;

/**
 * The warning for a run that took more than GROWTH_WARNING times the last run of its kind, naming
 * the phases and files that grew most (by 20% and 5 s at least); undefined when it did not.
 */
export function growthWarning(times: RunTimes, last: RunRecord | undefined): string[] | undefined {
  if (!last || times.totalMs <= last.totalMs * GROWTH_WARNING) return undefined;
  const now = recordOf(times, new Date()).ms;
  const grew = Object.entries(now)
    .map(([phase, ms]) => ({ phase, ms, before: last.ms[phase] }))
    .filter(
      (g): g is { phase: string; ms: number; before: number } =>
        g.before !== undefined && g.ms > g.before * GROWTH_WARNING && g.ms - g.before >= 5000,
    )
    .sort((a, b) => b.ms - b.before - (a.ms - a.before))
    .slice(0, 8);
  const percent = Math.round((times.totalMs / last.totalMs - 1) * 100);
  return [
    `# warning: this ${times.kind} run took ${minutes(times.totalMs)}, ${percent}% longer than the last ${times.kind} run (${minutes(last.totalMs)}, ${last.at})`,
    grew.length > 0 ? "# grew most:" : "# no single phase or file grew by 20% and 5 s: everything a little",
    ...grew.map((g) => `#   ${g.phase}: ${seconds(g.before).trim()} → ${seconds(g.ms).trim()}`),
  ];
}
