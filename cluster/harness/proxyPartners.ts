/**
 * What a proxy under test talks to, for the component tests and the soak (reliability/soak.ts):
 * session keys and cookies (lib/session.ts), loopback environment stand-ins that report what they
 * received, a WebSocket client that also reports a refused handshake, and the proxy's kubeconfig
 * with the chart's rights. Loopback only.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JWK } from "jose";
import { WebSocket, WebSocketServer } from "ws";
import type { k8s } from "../../lib/kube.ts";
import {
  createSessionSigner,
  generateSigningKey,
  parseSigningKeys,
  publicJwks,
  type SessionSigner,
  type SigningKeys,
} from "../../lib/session.ts";
import { grantComponentRights } from "./chartRights.ts";
import { requestServiceAccountToken, type ClusterAccess } from "./connect.ts";

/**
 * Where a helper registers its clean-up: a test's `TestContext`, or a script's own list
 * (reliability/soak.ts runs these helpers outside node:test).
 */
export interface CleanupScope {
  after(fn: () => unknown): void;
}

export interface TestKeys {
  signer: SessionSigner;
  keys: SigningKeys;
  jwk: JWK;
  publicFile: string;
  dir: string;
  /** A valid session cookie header value for `user`. */
  cookie(user: string, ttlSeconds?: number): Promise<string>;
}

/**
 * Session keys for a test proxy: a new key, or the given private JWKs (the first signs; all of them
 * are in the public file the proxy verifies with), e.g. the auth service's own keys.
 */
export async function testKeys(t: CleanupScope, signingJwks?: JWK[]): Promise<TestKeys> {
  const dir = await mkdtemp(join(tmpdir(), "userland-proxy-test-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const jwks = signingJwks ?? [await generateSigningKey("proxy-test")];
  const jwk = jwks[0];
  if (!jwk) throw new Error("testKeys: no key given");
  const keys = await parseSigningKeys({ keys: jwks });
  const publicFile = join(dir, "session-public.json");
  await writeFile(publicFile, JSON.stringify(publicJwks(keys)));
  const signer = createSessionSigner(keys);
  return {
    signer,
    keys,
    jwk,
    publicFile,
    dir,
    cookie: async (user, ttl = 3600) => `userland_session=${await signer.sign(user, ttl)}`,
  };
}

export interface Seen {
  upstream: string;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  /** Trailers of a chunked request body (set once the body has been read). */
  trailers?: NodeJS.Dict<string>;
}

export interface Upstream {
  name: string;
  url: string;
  port: number;
  server: Server;
  /** Requests received, newest last. */
  seen: Seen[];
  close(): Promise<void>;
}

/**
 * A loopback environment stand-in: answers every request with JSON saying which upstream it is
 * and what it received; `/slow?ms=N` answers after N ms; `/reset` drops the connection; WebSocket
 * messages are echoed with the upstream's name and the X-User it saw at the handshake.
 */
export async function startUpstream(t: CleanupScope, name: string): Promise<Upstream> {
  const seen: Seen[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const record: Seen = {
      upstream: name,
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      rawHeaders: req.rawHeaders,
    };
    seen.push(record);
    // Prefixed, not resolved against a base: "//x:99999" is a path here, not a host.
    const url = new URL(`http://x${req.url ?? "/"}`);
    const reply = () => {
      const body = JSON.stringify({ ...record, xUser: req.headers["x-user"] });
      res.writeHead(200, {
        "content-type": "application/json",
        "set-cookie": ["app=1; Path=/", "userland_session=evil; Path=/"],
        // What an environment sends to widen its service worker's scope to the whole origin.
        ...(url.pathname === "/sw.js" ? { "service-worker-allowed": "/" } : {}),
      });
      res.end(body);
    };
    if (url.pathname === "/reset") {
      req.socket.destroy();
      return;
    }
    if (url.pathname === "/slow") {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          reply();
        },
        Number(url.searchParams.get("ms") ?? 1000),
      );
      timers.add(timer);
      return;
    }
    req.resume();
    req.on("end", () => {
      record.trailers = req.trailers;
      reply();
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  // What a hostile environment answers a handshake with: the platform's cookies (issue 41 item 1).
  const plantedCookies = [
    "app=1; Path=/",
    "userland_session=evil; Path=/",
    "userland_visit=other-student; Path=/; Max-Age=31536000",
    "=userland_session=nameless",
  ];
  wss.on("headers", (headers: string[]) => headers.push(...plantedCookies.map((c) => `Set-Cookie: ${c}`)));
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    seen.push({
      upstream: name,
      method: "UPGRADE",
      url: req.url ?? "",
      headers: req.headers,
      rawHeaders: req.rawHeaders,
    });
    if (req.url === "/refused-socket") {
      socket.end(
        `HTTP/1.1 403 Forbidden\r\n${plantedCookies.map((c) => `Set-Cookie: ${c}\r\n`).join("")}` +
          "Content-Length: 0\r\n\r\n",
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const xUser = req.headers["x-user"];
      ws.on("message", (data: Buffer) =>
        ws.send(JSON.stringify({ upstream: name, xUser, echo: data.toString() })),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    for (const timer of timers) clearTimeout(timer);
    for (const client of wss.clients) client.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return { name, url: `http://127.0.0.1:${port}`, port, server, seen, close };
}

/** Opens a WebSocket through the proxy; resolves with the socket or the refusal status. */
export function openWebSocket(
  port: number,
  options: {
    host: string;
    cookie?: string;
    origin?: string;
    path?: string;
    headers?: Record<string, string>;
  },
): Promise<
  | { ws: WebSocket; headers: IncomingHttpHeaders }
  | { status: number; body: string; headers: IncomingHttpHeaders }
> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: options.host, ...options.headers };
    if (options.cookie) headers.cookie = options.cookie;
    const ws = new WebSocket(`ws://127.0.0.1:${port}${options.path ?? "/socket"}`, {
      headers,
      ...(options.origin ? { origin: options.origin } : {}),
    });
    let upgradeHeaders: IncomingHttpHeaders = {};
    ws.once("upgrade", (res: IncomingMessage) => (upgradeHeaders = res.headers));
    ws.once("open", () => resolve({ ws, headers: upgradeHeaders }));
    ws.once("unexpected-response", (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("utf8"),
          headers: res.headers,
        }),
      );
    });
    ws.once("error", (error) => reject(error));
  });
}

/** A kubeconfig of the proxy's ServiceAccount in `namespace`, with the chart's rights (cluster/chartRbac.ts). */
export async function proxyKubeConfig(namespace: string, cluster: ClusterAccess): Promise<k8s.KubeConfig> {
  const account = await grantComponentRights(cluster, "proxy", namespace);
  const token = await requestServiceAccountToken(cluster, namespace, account);
  return cluster.kubeConfigForToken(token, namespace);
}
