/**
 * How the harness gives ports to what it starts, without races. Picking a "free" port (bind port
 * 0, close, hand the number on) loses it now and then: between the close and the real server's
 * listen, anything may take it, most often an outgoing connection, whose local end the kernel picks
 * from the same range port 0 draws from (a fresh CI run failed with EADDRINUSE that way). So:
 *
 * - Node components get a socket the harness already listens on, passed down as an inherited
 *   descriptor (`listeningSocket` + `socketsFor`; the component side is lib/listen.ts, systemd's
 *   LISTEN_FDS convention). The port is theirs from the first moment.
 * - Programs that cannot take a descriptor (etcd, kube-apiserver) get a `heldPort`: one below the
 *   kernel's ephemeral range (ip_local_port_range), which no outgoing connection is ever given,
 *   locked against every other run on this machine by a lock file naming the owner's pid (reclaimed
 *   once that pid is dead), and checked free by a bind. It stays held until released, so a
 *   component restarted on it (the API server in outage tests) finds it free.
 */
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface HeldPort {
  port: number;
  /** Gives the port back (the lock file goes); also done when this process exits. */
  release(): void;
}

/** Shared by every run on the machine (every worktree, every user: sticky like /tmp). */
const LOCK_DIR = join(tmpdir(), "userland-ports");
/** The lowest port handed out: well above the usual fixed ports of local services. */
const LOWEST = 20_000;
const held = new Set<string>();
process.once("exit", () => {
  for (const file of held) unlinkQuietly(file);
});

/** The kernel's range for outgoing connections' local ports. */
export function ephemeralRange(): { first: number; last: number } {
  try {
    const [first, last] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (first && last) return { first, last };
  } catch {
    // Not Linux: the IANA range, which most other systems use.
  }
  return { first: 49_152, last: 65_535 };
}

/**
 * `count` consecutive ports (default 1) held for this process: outside the ephemeral range, locked
 * against other runs, free right now. Returns the first; `release` gives all of them back.
 * `range` (first and last port to consider) is for tests; by default every port from 20000 up to
 * the ephemeral range.
 */
export async function heldPort(count = 1, range = portRange(count)): Promise<HeldPort> {
  const [low, high] = [range.low, range.high - count + 1];
  mkdirSync(LOCK_DIR, { recursive: true });
  try {
    chmodSync(LOCK_DIR, 0o1777);
  } catch {
    // another user's directory, already shared
  }
  const span = high - low + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const base = low + ((start + i) % span);
    const files: string[] = [];
    let ok = true;
    for (let p = base; p < base + count && ok; p++) {
      const file = lock(p);
      if (file) files.push(file);
      else ok = false;
    }
    if (ok) {
      const free = await Promise.all(files.map((_, j) => bindable(base + j)));
      ok = free.every(Boolean);
    }
    if (ok) {
      for (const file of files) held.add(file);
      return {
        port: base,
        release: () => {
          for (const file of files) {
            held.delete(file);
            unlinkQuietly(file);
          }
        },
      };
    }
    for (const file of files) unlinkQuietly(file);
  }
  throw new Error(`no free port in ${range.low}-${range.high}: every one is taken or locked in ${LOCK_DIR}`);
}

/** Below the ephemeral range, or above it where it starts too low to leave room. */
function portRange(count: number): { low: number; high: number } {
  const { first, last } = ephemeralRange();
  if (first - LOWEST >= 1_000) return { low: LOWEST, high: first - 1 };
  if (65_535 - last >= 1_000) return { low: last + 1, high: 65_535 };
  throw new Error(`no room for ${count} port(s) outside the ephemeral range ${first}-${last}`);
}

/** The lock files' directory (for tests). */
export const portLockDir = (): string => LOCK_DIR;

/** Creates the port's lock file, or takes over one whose owner is dead; undefined if it is held. */
function lock(port: number): string | undefined {
  const file = join(LOCK_DIR, `${port}.lock`);
  if (create(file)) return file;
  if (ownerAlive(file)) return undefined;
  // One taker at a time: two runs that both saw the owner dead must not both remove the lock and
  // each create its own. A taker that dies in between leaves the port skipped, not shared.
  const taking = `${file}.taking`;
  if (!create(taking)) return undefined;
  try {
    if (ownerAlive(file)) return undefined;
    unlinkQuietly(file);
    return create(file) ? file : undefined;
  } finally {
    unlinkQuietly(taking);
  }
}

/** Creates `file` holding this process's id, unless it exists. */
function create(file: string): boolean {
  try {
    const fd = openSync(file, "wx", 0o644);
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

function ownerAlive(file: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(file, "utf8").trim());
  } catch {
    return true; // just being written, or just removed: not ours to take this time
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** A TCP socket listening on 127.0.0.1:`port` (0: any free port) that a child will serve on. */
export async function listeningSocket(port = 0): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1" }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server;
}

/** The port a listening socket has. */
export function portOf(server: Server): number {
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("the socket is not listening");
  return address.port;
}

/**
 * What spawn needs to pass `sockets` (by the setting each stands for, e.g. AUTH_PORT) to a child:
 * the descriptors at 3, 4, … after stdin, stdout and stderr, and LISTEN_FDS/LISTEN_FDNAMES
 * (lib/listen.ts). Call `close` right after spawn: the child has its copies, and this process must
 * never accept a connection meant for it.
 */
export function socketsFor(sockets: Record<string, Server>): {
  fds: number[];
  env: Record<string, string>;
  close(): void;
} {
  const names = Object.keys(sockets);
  const fds = names.map((name) => {
    // Linux exposes a listening TCP handle's descriptor; spawn hands integers on as they are.
    const fd = (sockets[name] as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== "number" || fd < 0) throw new Error(`the socket for ${name} has no descriptor`);
    return fd;
  });
  return {
    fds,
    env: names.length > 0 ? { LISTEN_FDS: String(names.length), LISTEN_FDNAMES: names.join(":") } : {},
    close: () => {
      for (const server of Object.values(sockets)) server.close();
    },
  };
}
