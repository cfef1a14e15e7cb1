/**
 * The real node's sandbox on this machine: a new network, PID and mount namespace held open by one
 * process (tini as PID 1). Everything of the node (containerd, its shims and containers, kubelet,
 * kube-proxy, the pod bridge) runs inside it, so:
 *   - the network has no route out: only loopback, the node's own address and the pod bridge;
 *   - when the holder dies (the harness stops it, or the harness is killed and the kernel kills the
 *     holder through its parent-death signal) the kernel kills every process in the PID namespace,
 *     containers included, and the mount namespace with all its mounts goes with them.
 * The one way in from the host is a relay (relay.ts) over Unix sockets, which do not care about
 * network namespaces.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { type ProcessGroup, waitFor } from "../processes.ts";

const execFileAsync = promisify(execFile);

export class NodeNamespace {
  private readonly processes: ProcessGroup;
  private holderPid = 0;
  /** Host PIDs of the daemons inside, by name (nsenter forks them; see startDaemon). */
  private readonly inner = new Map<string, number>();

  constructor(processes: ProcessGroup) {
    this.processes = processes;
  }

  /**
   * The namespace of a node another process holds (its init's PID, RealNodeInfo.namespacePid), to
   * run commands and relays in from a test; destroy() is not for it.
   */
  static attach(processes: ProcessGroup, pid: number): NodeNamespace {
    const ns = new NodeNamespace(processes);
    ns.holderPid = pid;
    return ns;
  }

  /** The PID (in this machine's PID namespace) of the namespace's init. */
  get pid(): number {
    return this.holderPid;
  }

  async create(): Promise<void> {
    const unshare = this.processes.start("namespace", "unshare", [
      "--net",
      "--pid",
      "--mount",
      "--fork",
      "--kill-child",
      "--propagation",
      "private",
      "--mount-proc",
      "--",
      // PID 1 must reap orphans: containerd's shims re-parent to it when they daemonize.
      "tini",
      "--",
      "sleep",
      "infinity",
    ]);
    const unsharePid = unshare.pid ?? 0;
    await waitFor(
      "node namespace",
      () => {
        this.holderPid = childPid(unsharePid);
        return this.holderPid > 0;
      },
      10_000,
      { alive: () => this.processes.has("namespace"), logs: this.processes.logFile("namespace") },
    );
  }

  /** nsenter arguments that run a command in the namespace (network, mounts and PIDs). */
  private enter(args: string[]): string[] {
    return ["-t", String(this.holderPid), "--net", "--mount", "--pid", "--", ...args];
  }

  /** Runs a short command inside the namespace; rejects with its stderr when it fails. */
  async run(command: string, args: string[], timeoutMs = 30_000): Promise<string> {
    const { stdout } = await execFileAsync("nsenter", this.enter([command, ...args]), {
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  }

  /**
   * Starts a long-running daemon inside the namespace, logging to logs/<name>.log. nsenter forks to
   * enter the PID namespace and does not pass signals on, so the daemon gets SIGTERM through its
   * parent-death signal when nsenter is stopped, and stopDaemon() waits for the daemon itself.
   */
  async startDaemon(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<void> {
    const wrapper = this.processes.start(
      name,
      "nsenter",
      this.enter(["setpriv", "--pdeathsig", "SIGTERM", "--", command, ...args]),
      env ? { env } : {},
    );
    const wrapperPid = wrapper.pid ?? 0;
    await waitFor(
      `${name} (in the node namespace)`,
      () => {
        const pid = childPid(wrapperPid);
        if (pid > 0) this.inner.set(name, pid);
        return pid > 0;
      },
      10_000,
      { alive: () => this.processes.has(name), logs: this.processes.logFile(name) },
    );
  }

  isRunning(name: string): boolean {
    const pid = this.inner.get(name);
    return pid !== undefined && alive(pid);
  }

  async stopDaemon(name: string, graceMs = 10_000): Promise<void> {
    const pid = this.inner.get(name);
    await this.processes.stop(name);
    if (pid === undefined) return;
    this.inner.delete(name);
    const deadline = Date.now() + graceMs;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (alive(pid)) process.kill(pid, "SIGKILL");
  }

  /** Ends the namespace: the kernel kills whatever still runs in it and drops its mounts. */
  async destroy(): Promise<void> {
    for (const name of [...this.inner.keys()]) await this.stopDaemon(name, 5_000);
    // unshare ignores SIGTERM while it waits for its child, so it alone would take the whole grace
    // and SIGKILL: tini, the namespace's init, is told instead; it ends `sleep` and exits, and
    // unshare with it.
    if (this.holderPid > 0 && alive(this.holderPid)) process.kill(this.holderPid, "SIGTERM");
    await this.processes.stop("namespace", 5_000);
    this.holderPid = 0;
  }
}

/** The first child of `pid`, or 0 while it has none. */
function childPid(pid: number): number {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/);
    return Number(children[0]) || 0;
  } catch {
    return 0;
  }
}

function alive(pid: number): boolean {
  try {
    // A zombie still answers kill(0); its state in /proc says it is gone.
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}
