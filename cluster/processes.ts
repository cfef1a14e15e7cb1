/**
 * Long-running child processes of the harness (control-plane components, the real node's daemons):
 * each logs to its own file, dies with the harness even when the harness is killed outright, and
 * stops with SIGTERM, then SIGKILL after a grace period.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";

/**
 * `command args`, wrapped in `setpriv --pdeathsig` where available: the kernel sends `signal` to the
 * child when this process dies, even by SIGKILL, so no process outlives the run that started it.
 */
export function diesWithParent(
  command: string,
  args: string[],
  signal: "SIGKILL" | "SIGTERM",
): [string, string[]] {
  return existsSync("/usr/bin/setpriv")
    ? ["/usr/bin/setpriv", ["--pdeathsig", signal, "--", command, ...args]]
    : [command, args];
}

interface Managed {
  child: ChildProcess;
  exited: Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** Signal to send on stop (default SIGTERM). */
  stopSignal?: NodeJS.Signals;
}

export class ProcessGroup {
  private readonly processes = new Map<string, Managed>();
  private readonly logDir: string;
  private readonly log: (line: string) => void;

  constructor(logDir: string, log: (line: string) => void) {
    this.logDir = logDir;
    this.log = log;
  }

  logFile(name: string): string {
    return join(this.logDir, `${name}.log`);
  }

  has(name: string): boolean {
    return this.processes.has(name);
  }

  pids(): number[] {
    return [...this.processes.values()].map((p) => p.child.pid ?? 0).filter((pid) => pid > 0);
  }

  /** Starts `command` under `name`; its output is appended to logs/<name>.log. */
  start(name: string, command: string, args: string[], opts: StartOptions = {}): ChildProcess {
    mkdirSync(this.logDir, { recursive: true });
    const logFile = openSync(this.logFile(name), "a");
    // If the harness is killed outright, the kernel kills its daemons too.
    const [wrapped, wrappedArgs] = diesWithParent(command, args, "SIGKILL");
    const child = spawn(wrapped, wrappedArgs, { stdio: ["ignore", logFile, logFile], env: opts.env });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.once("exit", (code, signal) => {
      if (this.processes.get(name)?.child === child) {
        this.processes.delete(name);
        this.log(`${name} exited (${signal ?? code}); see ${this.logFile(name)}`);
      }
    });
    this.processes.set(name, { child, exited });
    return child;
  }

  async stop(name: string, graceMs = 10_000): Promise<void> {
    const managed = this.processes.get(name);
    if (!managed) return;
    this.processes.delete(name);
    managed.child.kill("SIGTERM");
    const timer = setTimeout(() => managed.child.kill("SIGKILL"), graceMs);
    await managed.exited;
    clearTimeout(timer);
  }

  /** Stops the named processes one after another, in the order given. */
  async stopAll(names: string[], graceMs?: number): Promise<void> {
    for (const name of names) await this.stop(name, graceMs);
  }
}

/** Polls `check` until it is true; fails with `what` and where to look after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  opts: { alive?: () => boolean; logs?: string; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    if (opts.alive && !opts.alive()) {
      throw new Error(`${what}: exited during start-up${opts.logs ? `; see ${opts.logs}` : ""}`);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${what} not ready after ${timeoutMs / 1000}s${opts.logs ? ` (logs: ${opts.logs})` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 200));
  }
}
