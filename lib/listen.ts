/**
 * Where a component listens: on a socket its parent already holds and passed down, or on
 * host:port (port 0 picks a free port, which tests use), and learning the URL it got.
 *
 * Passed sockets follow systemd's socket-activation convention (sd_listen_fds(3)): LISTEN_FDS=n
 * sockets are open at descriptors 3…3+n-1, LISTEN_FDNAMES names them (colon-separated), and
 * LISTEN_PID, when set, must be this process's id. The name of a socket is the setting it stands
 * for, e.g. AUTH_PORT: then AUTH_HOST/AUTH_PORT are not used. A parent that binds the socket itself
 * (the local platform, the tests) knows the address before the child starts and nothing else can
 * take the port in between; a parent that picked a "free" port and let the child bind it lost it to
 * an outgoing connection's local end once (EADDRINUSE). Node's spawn cannot know the child's pid
 * before it starts, so such parents leave LISTEN_PID unset.
 */
import type { Server } from "node:http";
import type { AddressInfo, ListenOptions } from "node:net";

/** The first passed descriptor (SD_LISTEN_FDS_START): 0–2 are stdin, stdout and stderr. */
export const LISTEN_FDS_START = 3;

let passed: Map<string, number> | undefined;

/**
 * The sockets passed by the parent, by name; read once, then the variables are removed (as
 * sd_listen_fds(1) does) so a child of this process does not take the descriptors for its own.
 */
export function passedSockets(): Map<string, number> {
  if (passed) return passed;
  const env = process.env;
  passed = new Map();
  const count = Number(env.LISTEN_FDS ?? 0);
  const forUs = env.LISTEN_PID === undefined || Number(env.LISTEN_PID) === process.pid;
  if (forUs && Number.isInteger(count) && count > 0) {
    const names = (env.LISTEN_FDNAMES ?? "").split(":");
    for (let i = 0; i < count; i++) passed.set(names[i] || `fd${LISTEN_FDS_START + i}`, LISTEN_FDS_START + i);
  }
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  delete env.LISTEN_PID;
  return passed;
}

/**
 * The listen options for the setting `name` (e.g. "AUTH_PORT"): the passed socket of that name,
 * else host:port. Node's server.listen and fastify's listen both take them.
 */
export function listenOptions(name: string, port: number, host: string): ListenOptions & { fd?: number } {
  const fd = passedSockets().get(name);
  if (fd === undefined) return { port, host };
  // Node ignores host beside fd; fastify reads it, and for "localhost" binds ::1 as well, with fd.
  return { fd, host: host === "localhost" ? "127.0.0.1" : host };
}

/** http://host:port of a listening server, e.g. http://127.0.0.1:9090 or http://[::1]:9090. */
export function serverUrl(server: { address(): AddressInfo | string | null }): string {
  const address = server.address() as AddressInfo;
  const h = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${h}:${address.port}`;
}

/**
 * Listens on the socket passed as `name`, else on host:port; resolves with the server's URL.
 * Without a name, always host:port.
 */
export function listenOn(server: Server, port: number, host: string, name?: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    server.once("error", reject);
    const options = name ? listenOptions(name, port, host) : { port, host };
    const onListening = () => {
      server.off("error", reject);
      resolve(serverUrl(server));
    };
    // A passed descriptor is a handle to node's listen, which @types/node types apart.
    if (options.fd === undefined) server.listen(options, onListening);
    else server.listen({ fd: options.fd }, onListening);
  });
}
