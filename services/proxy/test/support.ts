/**
 * Test support for the proxy: real sessions (lib/session.ts), loopback upstreams that report what
 * they received, the proxy in-process under a real ServiceAccount with only the rights it needs,
 * and a raw HTTP client that can send what browsers never would (duplicate and underscore
 * headers, absolute-form targets, any Host).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
} from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { SignJWT, type JWK } from "jose";
import { WebSocket, WebSocketServer } from "ws";
import type { k8s } from "../../../lib/kube.ts";
import { createLogger } from "../../../lib/logger.ts";
import {
  SESSION_AUDIENCE,
  SESSION_ISSUER,
  createSessionSigner,
  generateSigningKey,
  parseSigningKeys,
  publicJwks,
  type SessionSigner,
  type SigningKeys,
} from "../../../lib/session.ts";
import { grantChartRights } from "../../../test/support/chartRights.ts";
import { serviceAccountToken, testCluster, type TestCluster } from "../../../test/support/cluster.ts";
import { buildProxyApp, type ProxyApp } from "../app.ts";
import { loadProxyConfig } from "../config.ts";
import { overrideResolver, type OverrideResolver } from "../resolver.ts";

/**
 * Where a helper registers its clean-up: a test's `TestContext`, or a script's own list
 * (test/reliability/soak.ts runs these helpers outside node:test).
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

/** A token the real signer would never make (expired, wrong audience, ...), signed with a real key. */
export async function forgeToken(
  keys: SigningKeys,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const key = keys.keys[0];
  if (!key) throw new Error("no key");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sid: "forged", iss: SESSION_ISSUER, aud: SESSION_AUDIENCE, iat: now - 10, ...claims })
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT", ...header })
    .sign(key.privateKey);
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
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    seen.push({
      upstream: name,
      method: "UPGRADE",
      url: req.url ?? "",
      headers: req.headers,
      rawHeaders: req.rawHeaders,
    });
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

/** A kubeconfig of the proxy's ServiceAccount in `namespace`, with the chart's rights. */
export async function proxyKubeConfig(namespace: string, on?: TestCluster): Promise<k8s.KubeConfig> {
  const cluster = on ?? (await testCluster());
  const account = await grantChartRights("proxy", namespace, { cluster });
  const token = await serviceAccountToken(namespace, account, cluster);
  return cluster.kubeConfigForToken(token, namespace);
}

export interface TestProxy {
  app: ProxyApp;
  resolver: OverrideResolver;
  url: string;
  port: number;
  adminUrl: string;
  close(graceMs?: number): Promise<void>;
}

/**
 * The proxy in-process on 127.0.0.1:0, configured through its real settings parser. Its session
 * keys: the public file of `keys`, or, given a URL, fetched from there (PROXY_SESSION_JWKS_URL).
 */
export async function startProxy(
  t: TestContext,
  namespace: string,
  keys: TestKeys | URL,
  env: Record<string, string> = {},
): Promise<TestProxy> {
  const config = loadProxyConfig({
    ...(keys instanceof URL
      ? { PROXY_SESSION_JWKS_URL: keys.href }
      : { PROXY_SESSION_PUBLIC_KEYS_FILE: keys.publicFile }),
    PROXY_LOGIN_URL: "https://auth.example.test/login",
    PROXY_HOST_TEMPLATES: "code.example.test=code,jupyter.example.test=jupyter",
    PROXY_BASE_DOMAIN: "apps.example.test",
    PROXY_ACTIVITY_FLUSH: "500ms",
    PROXY_ACCESS_LOG: "true",
    ...env,
  });
  const resolver = overrideResolver();
  const app = await buildProxyApp(config, {
    kc: await proxyKubeConfig(namespace),
    log: createLogger("proxy-test", process.env.LOG_LEVEL ?? "warn"),
    namespace,
    resolver,
  });
  const { url, adminUrl } = await app.proxy.listen({
    host: "127.0.0.1",
    port: 0,
    adminHost: "127.0.0.1",
    adminPort: 0,
  });
  let closed = false;
  const close = async (graceMs = 1000) => {
    if (closed) return;
    closed = true;
    await app.close(graceMs);
  };
  t.after(() => close());
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    app.synced,
    new Promise(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error("the proxy's caches did not sync within 30 s")), 30_000)),
    ),
  ]).finally(() => clearTimeout(timer));
  return { app, resolver, url, port: Number(new URL(url).port), adminUrl, close };
}

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

/**
 * One request over a fresh connection. `headers` may be a raw list [name, value, name, value...]
 * to send duplicates and exact spellings; `path` is sent verbatim (absolute-form, "/../").
 */
export function send(
  port: number,
  options: { method?: string; path?: string; headers?: OutgoingHttpHeaders | string[]; body?: string } = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "GET",
        path: options.path ?? "/",
        headers: options.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json: <T>() => JSON.parse(body) as T,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/**
 * Writes `text` as is on a fresh connection and resolves with everything the server sent until it
 * closed the connection (or `timeoutMs` passed): for requests no HTTP client library would send
 * (smuggling, pipelining, malformed header names, CONNECT, no Host). End the last request with
 * `Connection: close`.
 */
export function rawExchange(port: number, text: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A server that refuses by resetting the connection has answered all the same.
      if (error.code !== "ECONNRESET") reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("latin1"));
    });
    socket.write(text, "latin1");
  });
}

/** The status codes of every response in a raw exchange, in order. */
export function rawStatuses(response: string): number[] {
  return [...response.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => Number(m[1]));
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
): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: options.host, ...options.headers };
    if (options.cookie) headers.cookie = options.cookie;
    const ws = new WebSocket(`ws://127.0.0.1:${port}${options.path ?? "/socket"}`, {
      headers,
      ...(options.origin ? { origin: options.origin } : {}),
    });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    ws.once("error", (error) => reject(error));
  });
}

/** Sends one message and waits for the echo. */
export function roundTrip(
  ws: WebSocket,
  message: string,
): Promise<{ upstream: string; xUser: string; echo: string }> {
  return new Promise((resolve, reject) => {
    ws.once("message", (data: Buffer) =>
      resolve(JSON.parse(data.toString()) as { upstream: string; xUser: string; echo: string }),
    );
    ws.once("error", reject);
    ws.send(message);
  });
}

/**
 * Client-supplied identity headers in every spelling the proxy must strip: case, underscores, and
 * the names other auth proxies and clouds use. One list for the unit, routing and hostile-input tests.
 */
export const SPOOFED_IDENTITY_HEADERS: readonly string[] = [
  "X-User",
  "x-user",
  "X-USER",
  "X_User",
  "x_user",
  "x_USER",
  "X_USER",
  "X-Forwarded-User",
  "X_Forwarded_User",
  "x_forwarded_user",
  "X-Forwarded-Email",
  "X-Forwarded-Preferred-Username",
  "X-Forwarded-Groups",
  "X-Auth-Request-User",
  "x_auth_request_user",
  "X-Auth-Request-Email",
  "X-Auth-Request-Preferred-Username",
  "X-Auth-Request-Groups",
  "X-Remote-User",
  "Remote-User",
  "REMOTE_USER",
  "Remote-Email",
  "X-WebAuth-User",
  "X-Auth-User",
  "X-Username",
  "X-Email",
  "X-Userland-User",
  "X-User-Id",
  "X-Ms-Client-Principal-Name",
  "X-Goog-Authenticated-User-Email",
  "Cf-Access-Authenticated-User-Email",
  "X-Amzn-Oidc-Identity",
  // Issue 29 item 6: other separators, and other platforms' names.
  "X.User",
  "X~User",
  "x.forwarded.user",
  "Remote.User",
  "XUser",
  "X-Proxy-User",
  "X-Authenticated-User",
  "X-Jupyterhub-User",
  "Impersonate-User",
  "Impersonate-Group",
  "X-Original-User",
  "X-Pomerium-Claim-Email",
  "X-Pomerium-Jwt-Assertion",
  "Cf-Access-Jwt-Assertion",
  "X-Goog-Iap-Jwt-Assertion",
  "X-Authentik-Username",
  "X-Vouch-User",
  "X-Consumer-Username",
  "Tailscale-User-Login",
];
