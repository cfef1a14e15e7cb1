/**
 * CPU time and peak memory of this process's children (the local platform's components and the
 * control plane), read from /proc: which processes there are, and a sampler that turns one
 * measured interval into CPU seconds and peak RSS per process.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";

export interface Proc {
  name: string;
  pid: number;
}

export interface Usage {
  name: string;
  cpuSeconds: number;
  peakRssBytes: number;
}

/** Clock ticks per second, the unit of /proc/<pid>/stat's CPU times. */
const ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** The fields of /proc/<pid>/stat after the command name (which may contain spaces and parens). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * A readable name from a command line: a Node entry point's folder (`services/auth/main.ts` →
 * `auth`, `operator/main.ts` → `operator`), else the executable's name.
 */
function nameOf(argv: string[]): string {
  const script = argv.find((a) => a.endsWith(".ts"));
  if (script) {
    const parts = script.split("/");
    return parts.at(-1) === "main.ts" ? (parts.at(-2) ?? script) : basename(script);
  }
  return basename(argv[0] ?? "?");
}

/** The direct children of `parent` (default: this process), named by their command lines. */
export function childProcesses(parent = process.pid): Proc[] {
  const children: Proc[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      // Field 4 of stat is the parent's pid (index 1 after the name).
      if (Number(statFields(pid)[1]) !== parent) continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      children.push({ name: nameOf(argv), pid });
    } catch {
      // Exited while we looked.
    }
  }
  return children.sort((a, b) => a.name.localeCompare(b.name));
}

function cpuSeconds(pid: number): number {
  const fields = statFields(pid);
  // utime and stime: fields 14 and 15 (indexes 11 and 12 after the name).
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

/** A process's resident memory now. */
export function rssBytes(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kib ?? 0) * 1024;
}

/** Each process's RSS now (0 for one that has exited). */
export function rssNow(procs: readonly Proc[]): number[] {
  return procs.map((p) => {
    try {
      return rssBytes(p.pid);
    } catch {
      return 0;
    }
  });
}

/** Starts measuring `procs`: RSS sampled every `everyMs`; stop() gives CPU used and peak RSS since. */
export function sampleUsage(procs: readonly Proc[], everyMs = 250): { stop(): Usage[] } {
  const read = <T>(f: () => T, fallback: T): T => {
    try {
      return f();
    } catch {
      return fallback;
    }
  };
  const cpuAtStart = procs.map((p) => read(() => cpuSeconds(p.pid), 0));
  const peaks = procs.map((p) => read(() => rssBytes(p.pid), 0));
  const sample = () =>
    procs.forEach(
      (p, i) =>
        (peaks[i] = Math.max(
          peaks[i] ?? 0,
          read(() => rssBytes(p.pid), 0),
        )),
    );
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return procs.map((p, i) => ({
        name: p.name,
        cpuSeconds: read(() => cpuSeconds(p.pid), 0) - (cpuAtStart[i] ?? 0),
        peakRssBytes: peaks[i] ?? 0,
      }));
    },
  };
}
