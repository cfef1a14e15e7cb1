/**
 * The common alternative as a benchmark anchor: nginx from Debian set up as oauth2-proxy-style
 * deployments do it — every request first asks the auth service's /forward-auth (`auth_request`),
 * then goes to the environment named by the identity it returned, with `X-User` set — end to end
 * with this platform's real auth service and session cookies. One worker process, as the Node
 * proxies beside it are one process each; keep-alive pools to the auth service and the environment.
 *
 * nginx is installed by scripts/bootstrap.sh (what `npm test` and the bench scripts run first).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JSONWebKeySet } from "jose";
import { heldPort, listeningSocket, portOf, socketsFor } from "../cluster/ports.ts";

export interface NginxAnchor {
  port: number;
  /** The processes that serve it (nginx's master and worker, the auth service), for RSS and fds. */
  pids: () => number[];
  stop: () => void;
}

const NGINX = "/usr/sbin/nginx";

/** GET `path` on 127.0.0.1:`port`; resolves with the status, or 0 when nothing answers. */
function status(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

async function until(what: string, check: () => Promise<boolean>, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`${what}: exited with ${child.exitCode}`);
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not ready within 10 s`);
}

function config(dir: string, port: number, authPort: number, upstreamPort: number, user: string): string {
  return `
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream auth { server 127.0.0.1:${authPort}; keepalive 64; }
  # One upstream per student environment, chosen by the identity the auth service returned.
  upstream environment_bench { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  map $auth_user $environment { "${user}" environment_bench; default environment_missing; }
  upstream environment_missing { server 127.0.0.1:1; }
  map $http_upgrade $connection_upgrade { default upgrade; "" ""; }
  server {
    listen 127.0.0.1:${port};
    location = /_auth {
      internal;
      proxy_pass http://auth/forward-auth;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Original-URI $request_uri;
    }
    location / {
      auth_request /_auth;
      auth_request_set $auth_user $upstream_http_x_auth_request_user;
      proxy_pass http://$environment;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header X-User $auth_user;
      proxy_read_timeout 3600s;
    }
  }
}
`;
}

/**
 * Starts the auth service (its real entry point, signing keys `keys`) and nginx in front of the
 * environment at 127.0.0.1:`upstreamPort`, which `user`'s session reaches; resolves once a request
 * with `cookie` is answered 200 through both.
 */
export async function startNginxAnchor(
  upstreamPort: number,
  keys: JSONWebKeySet,
  user: string,
  cookie: string,
): Promise<NginxAnchor> {
  const dir = mkdtempSync(join(tmpdir(), "userland-bench-nginx-"));
  const keysFile = join(dir, "keys.json");
  writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
  // The auth service gets its socket passed down; nginx, which cannot take one, a held port
  // (cluster/ports.ts).
  const authSocket = await listeningSocket();
  const authPort = portOf(authSocket);
  const passed = socketsFor({ AUTH_PORT: authSocket });
  const held = await heldPort();
  const port = held.port;
  const auth = spawn(process.execPath, [join(import.meta.dirname, "..", "services", "auth", "main.ts")], {
    stdio: ["ignore", "ignore", "inherit", ...passed.fds],
    env: {
      ...process.env,
      ...passed.env,
      LOG_LEVEL: "warn",
      AUTH_PUBLIC_URL: `http://127.0.0.1:${authPort}/`,
      AUTH_COOKIE_SECURE: "false",
      AUTH_SESSION_KEYS_FILE: keysFile,
      // A provider must be configured; nothing here ever signs in through it.
      AUTH_GITHUB_CLIENT_ID: "bench",
      AUTH_GITHUB_CLIENT_SECRET: "bench",
    },
  });
  passed.close();
  const processes: ChildProcess[] = [auth];
  const stop = () => {
    for (const p of processes) p.kill();
    held.release();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until("the auth service", async () => (await status(authPort, "/healthz")) === 200, auth);
    writeFileSync(join(dir, "nginx.conf"), config(dir, port, authPort, upstreamPort, user));
    const nginx = spawn(NGINX, ["-c", join(dir, "nginx.conf"), "-p", dir, "-g", "daemon off;"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    processes.push(nginx);
    await until("nginx", async () => (await status(port, "/small", { cookie })) === 200, nginx);
    if ((await status(port, "/small")) !== 401)
      throw new Error("nginx let a request without a session through");
    return {
      port,
      pids: () => {
        const master = nginx.pid ?? 0;
        let workers: number[] = [];
        try {
          workers = readFileSync(`/proc/${master}/task/${master}/children`, "utf8")
            .trim()
            .split(/\s+/)
            .filter(Boolean)
            .map(Number);
        } catch {
          // nginx has exited: nothing to count
        }
        return [master, ...workers, auth.pid ?? 0].filter((pid) => pid > 0);
      },
      stop,
    };
  } catch (error) {
    stop();
    throw error;
  }
}
