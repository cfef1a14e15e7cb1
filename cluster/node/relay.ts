/**
 * TCP relays across the node namespace's wall, over Unix sockets (a path in the file system is
 * reachable from both sides; no network route is): the harness's end is a socket in this process,
 * the namespace's end is socat running inside. Nothing else crosses.
 *   - into the cluster (`expose`): 127.0.0.1:<port> on the host → a pod or Service address inside;
 *   - out to the control plane (`exposeInside`): an address inside → 127.0.0.1:<port> on the host,
 *     which is how the node and its pods reach the API server.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { ProcessGroup, waitFor } from "../processes.ts";
import { NodeNamespace } from "./namespace.ts";

/** Connections a relay's socat end may have waiting to be accepted. */
const BACKLOG = 512;

/**
 * socat's connect to the target inside is non-blocking (`connect-timeout` makes it so), and this
 * bounds it. With socat's default blocking connect, a first SYN that the node's kube-proxy rejects
 * (a Service whose endpoint it has not programmed yet, a moment after the Userland turns Ready)
 * leaves the ICMP "port unreachable" on the socket's error queue while the kernel retries the SYN
 * and connects a second later (Linux's tcp_v4_err queues an ICMP error on a connecting socket's
 * error queue, IP_RECVERR or not, and only notes it softly while connect() holds the socket). From
 * then on select() calls the socket readable for good; socat
 * 1.7's blocking read() waits there for an answer that is not coming and stops relaying the other
 * way: the connection's first request is answered, the next one is never sent on. Non-blocking,
 * the refusal is a refusal: the client's connection is closed before any answer, as a pod's would
 * be refused. Measured: 2 of 10 Jupyter kernel starts hung so (test/node/ide.alone.ts), each after a
 * 1 s connect; reproduced in a namespace of its own by test/harness/relay.test.ts.
 */
const CONNECT_TIMEOUT_S = 30;

export class Relays {
  private readonly dir: string;
  private readonly ns: NodeNamespace;
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly daemons: string[] = [];
  private readonly prefix: string;
  private count = 0;

  /**
   * A set of relays of its own into the running node namespace whose init is `namespacePid` (for
   * tests, benchmarks and the local platform beside the node's own relays); `close` removes them.
   */
  static into(namespacePid: number): Relays {
    const dir = mkdtempSync(join(tmpdir(), "userland-relay-"));
    const ns = NodeNamespace.attach(new ProcessGroup(dir, () => undefined), namespacePid);
    const relays = new Relays(dir, ns, `relay-${process.pid}-${Math.random().toString(16).slice(2, 8)}`);
    relays.ownsDir = true;
    return relays;
  }

  private ownsDir = false;

  /** `prefix` names this set's socat daemons and sockets (several sets may share a namespace). */
  constructor(dir: string, ns: NodeNamespace, prefix = "relay") {
    this.dir = dir;
    this.ns = ns;
    this.prefix = prefix;
  }

  private socketPath(name: string): string {
    mkdirSync(this.dir, { recursive: true });
    return join(this.dir, `${name}.sock`);
  }

  /**
   * Makes `target` ("host:port", an address inside the node namespace) reachable at the returned
   * 127.0.0.1 port of this machine (`port`, or a free one).
   */
  async expose(target: string, port = 0): Promise<number> {
    const name = `${this.prefix}-${++this.count}`;
    const socket = this.socketPath(name);
    this.daemons.push(name);
    // socat's default listen backlog is 5: a class signing in at once would be reset.
    await this.ns.startDaemon(name, "socat", [
      `UNIX-LISTEN:${socket},fork,unlink-early,backlog=${BACKLOG}`,
      `TCP:${target},connect-timeout=${CONNECT_TIMEOUT_S}`,
    ]);
    // Until socat has bound its socket, a connection through the relay would be reset.
    await waitFor(`the relay to ${target}`, () => existsSync(socket), 10_000, {
      alive: () => this.ns.isRunning(name),
    });
    const server = this.track(createServer((client) => this.pipe(client, connect(socket))));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    const address = server.address();
    if (!address || typeof address !== "object") throw new Error(`relay to ${target}: no port`);
    return address.port;
  }

  /** Makes 127.0.0.1:`hostPort` of this machine reachable inside the namespace at `inside` ("ip:port"). */
  async exposeInside(inside: string, hostPort: number): Promise<void> {
    const name = `${this.prefix}-${++this.count}`;
    const socket = this.socketPath(name);
    const server = this.track(createServer((client) => this.pipe(client, connect(hostPort, "127.0.0.1"))));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socket, resolve);
    });
    const [host, port] = splitHostPort(inside);
    this.daemons.push(name);
    await this.ns.startDaemon(name, "socat", [
      `TCP-LISTEN:${port},bind=${host},fork,reuseaddr,backlog=${BACKLOG}`,
      `UNIX-CONNECT:${socket}`,
    ]);
  }

  async close(): Promise<void> {
    for (const name of this.daemons.splice(0)) await this.ns.stopDaemon(name, 2_000);
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    this.servers.length = 0;
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }

  private track(server: Server): Server {
    this.servers.push(server);
    return server;
  }

  private pipe(a: Socket, b: Socket): void {
    for (const s of [a, b]) {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
      // A reset on one side ends the other; neither error may crash the harness.
      s.once("error", () => {
        a.destroy();
        b.destroy();
      });
    }
    a.pipe(b);
    b.pipe(a);
  }
}

function splitHostPort(address: string): [string, string] {
  const at = address.lastIndexOf(":");
  if (at <= 0) throw new Error(`"${address}" is not host:port`);
  return [address.slice(0, at), address.slice(at + 1)];
}
