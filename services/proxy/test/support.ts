/**
 * Test support for the proxy: the proxy in-process under a real ServiceAccount with the chart's
 * rights, forged tokens, and a raw HTTP client that can send what browsers never would (duplicate
 * and underscore headers, absolute-form targets, any Host). Session keys, loopback upstreams and
 * the WebSocket client are cluster/harness/proxyPartners.ts's (the soak uses them too).
 */
import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import { connect } from "node:net";
import type { TestContext } from "node:test";
import { SignJWT } from "jose";
import type { WebSocket } from "ws";
import type { k8s } from "../../../lib/kube.ts";
import { createLogger } from "../../../lib/logger.ts";
import { SESSION_AUDIENCE, SESSION_ISSUER, type SigningKeys } from "../../../lib/session.ts";
import {
  openWebSocket,
  proxyKubeConfig as proxyKubeConfigOn,
  startUpstream,
  testKeys,
  type CleanupScope,
  type Seen,
  type TestKeys,
  type Upstream,
} from "../../../cluster/harness/proxyPartners.ts";
import { testCluster, type TestCluster } from "../../../test/support/cluster.ts";
import { buildProxyApp, type ProxyApp } from "../app.ts";
import { loadProxyConfig } from "../config.ts";
import { overrideResolver, type OverrideResolver } from "../route/resolver.ts";

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

/** The proxy's kubeconfig in `namespace` of the shared test cluster (or `on`), with the chart's rights. */
export async function proxyKubeConfig(namespace: string, on?: TestCluster): Promise<k8s.KubeConfig> {
  return proxyKubeConfigOn(namespace, on ?? (await testCluster()));
}

// The proxy tests' partners live in cluster/harness (the soak uses them too); tests import them here.
export { openWebSocket, startUpstream, testKeys, type CleanupScope, type Seen, type TestKeys, type Upstream };

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
/**
 * The form post the console's Open page makes to a visit's host (endpoints/visitEndpoints.ts):
 * `token` is the visitor's session, `origin` the page's (undefined: none sent).
 */
export function handOverVisit(port: number, host: string, origin: string | undefined, token: string) {
  return send(port, {
    method: "POST",
    path: "/_userland/visit",
    headers: {
      host,
      accept: "text/html",
      "content-type": "application/x-www-form-urlencoded",
      ...(origin ? { origin } : {}),
    },
    body: new URLSearchParams({ session: token }).toString(),
  });
}

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
  // Issue 41 item 10: what a deny-list let through; only an allow-list reaches the environment.
  "X-Auth-Username",
  "Userland-Visitor",
  "X-Oidc-User",
  "Username",
  "User",
  "X-Client-Cert",
];
