/**
 * Slow and endless clients against every listener of the platform (issue 13 item 4): the auth
 * service and the user-manager (in-process, on their own fastify servers) and the proxy (real
 * control plane), each configured with short timeouts. A slow-loris client trickles a byte every
 * 100 ms; each row says how soon the service must have closed the connection. Every client here
 * gives up on its own after a few seconds, so a service that never closes fails the row in bounded
 * time.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import { createLogger } from "../../lib/logger.ts";
import { buildApp as buildAuthApp } from "../../services/auth/app.ts";
import { loadAuthConfig } from "../../services/auth/config.ts";
import { newKeysFile, tempDir } from "../../services/auth/test/support/auth.ts";
import { startOidcProvider } from "../../services/auth/test/support/oidcProvider.ts";
import { startProxy, startUpstream, testKeys } from "../../services/proxy/test/support.ts";
import { startUserManager } from "../../services/user-manager/test/support.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { createTemplate, createUserland, markReady, simpleTemplateSpec } from "../support/resources.ts";

/** Every service here: headers within 1 s, the whole request within 3 s. */
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 3000;
/** How long a client keeps trickling before it gives up (the service never closed). */
const CLIENT_GIVES_UP_MS = 8000;

interface Trickled {
  /** The service closed the connection (rather than the client giving up). */
  closedByServer: boolean;
  ms: number;
  /** Everything the service sent. */
  text: string;
}

/**
 * Sends `head`, then one byte of `drip` every 100 ms until the service closes the connection or
 * CLIENT_GIVES_UP_MS pass.
 */
function trickle(port: number, head: string, drip: string): Promise<Trickled> {
  return new Promise((resolve) => {
    const start = performance.now();
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    let i = 0;
    let gaveUp = false;
    const timer = setInterval(() => {
      if (socket.writable) socket.write(drip[i++ % drip.length] ?? "a");
    }, 100);
    const giveUp = setTimeout(() => {
      gaveUp = true;
      socket.destroy();
    }, CLIENT_GIVES_UP_MS);
    socket.on("data", (c: Buffer) => chunks.push(c));
    // A reset while still writing is the service closing too.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({
        closedByServer: !gaveUp,
        ms: performance.now() - start,
        text: Buffer.concat(chunks).toString("latin1"),
      });
    });
    socket.write(head);
  });
}

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

/** A service closes a client trickling its headers within the headers timeout (plus Node's check interval). */
async function slowHeaders(port: number): Promise<void> {
  const r = await trickle(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", "a");
  assert.ok(r.closedByServer, `still open after ${Math.round(r.ms)} ms`);
  assert.ok(r.ms < HEADERS_TIMEOUT_MS + 2000, `closed after ${Math.round(r.ms)} ms`);
}

/** A service closes a client trickling a body within the request timeout. */
async function slowBody(port: number, head: string): Promise<void> {
  const r = await trickle(port, head, "a");
  assert.ok(r.closedByServer, `still open after ${Math.round(r.ms)} ms`);
  assert.ok(r.ms < REQUEST_TIMEOUT_MS + 2000, `closed after ${Math.round(r.ms)} ms`);
  // Not refused for something else (a body limit): the timeout closed it.
  assert.ok(r.ms > REQUEST_TIMEOUT_MS - 500, `closed after ${Math.round(r.ms)} ms: ${r.text.slice(0, 200)}`);
}

/**
 * A service refusing a request before its body (401, 403) closes the connection after its answer
 * instead of reading an endless chunked body: well before the request timeout.
 */
async function refusedThenClosed(port: number, head: string, expected: number): Promise<void> {
  const r = await trickle(port, `${head}Transfer-Encoding: chunked\r\n\r\n`, "1\r\na\r\n");
  assert.equal(status(r.text), expected, r.text.slice(0, 300));
  assert.ok(r.closedByServer, `still open after ${Math.round(r.ms)} ms`);
  assert.ok(r.ms < REQUEST_TIMEOUT_MS - 1000, `closed after ${Math.round(r.ms)} ms, not at once`);
}

const timeouts = (prefix: string) => ({
  [`${prefix}_HEADERS_TIMEOUT`]: `${HEADERS_TIMEOUT_MS}ms`,
  [`${prefix}_REQUEST_TIMEOUT`]: `${REQUEST_TIMEOUT_MS}ms`,
});

test("slow and endless clients: the auth service closes them", async (t) => {
  const dir = await tempDir();
  t.after(() => dir.remove());
  const { file } = await newKeysFile(dir);
  const idp = await startOidcProvider({ redirectUri: "http://127.0.0.1:1/callback/oidc", accounts: {} });
  t.after(() => idp.close());
  const config = loadAuthConfig({
    AUTH_PUBLIC_URL: "http://127.0.0.1:1/",
    AUTH_COOKIE_SECURE: "false",
    AUTH_SESSION_KEYS_FILE: file,
    AUTH_OIDC_ISSUER: idp.issuer,
    AUTH_OIDC_CLIENT_ID: idp.clientId,
    AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
    AUTH_OIDC_ALLOW_HTTP: "true",
    ...timeouts("AUTH"),
  });
  // Its own fastify server (not a test listener): the timeouts are the server's.
  const app = await buildAuthApp(config, { log: createLogger("auth-test", "silent") });
  await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const port = (app.server.address() as { port: number }).port;
  const own = "http://127.0.0.1:1";

  await t.test("headers trickled a byte at a time: closed after AUTH_HEADERS_TIMEOUT", () =>
    slowHeaders(port),
  );
  await t.test("a sign-out form body trickled a byte at a time: closed after AUTH_REQUEST_TIMEOUT", () =>
    slowBody(
      port,
      `POST /logout HTTP/1.1\r\nHost: x\r\nOrigin: ${own}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nrd=`,
    ),
  );
  await t.test("an endless body after the 403 for a cross-site sign-out: closed at once", () =>
    refusedThenClosed(
      port,
      "POST /logout HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n",
      403,
    ),
  );
});

test("slow and endless clients: the user-manager closes them", async (t) => {
  const h = await startUserManager(t, {
    config: { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
  });
  const port = Number(new URL(h.base).port);

  await t.test("headers trickled a byte at a time: closed after USER_MANAGER_HEADERS_TIMEOUT", () =>
    slowHeaders(port),
  );
  await t.test(
    "a create body trickled a byte at a time by an authorised caller: closed after USER_MANAGER_REQUEST_TIMEOUT",
    () =>
      slowBody(
        port,
        `POST /api/v1/userlands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.teacher}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"user":"`,
      ),
  );
  await t.test("an endless body after the 401 for a missing token: closed at once", () =>
    refusedThenClosed(
      port,
      "POST /api/v1/rosters/import HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n",
      401,
    ),
  );
  await t.test("an endless body after the 403 for a caller without rights: closed at once", () =>
    refusedThenClosed(
      port,
      `POST /api/v1/userlands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.student}\r\nContent-Type: application/json\r\n`,
      403,
    ),
  );
});

test("slow and endless clients: the proxy closes them", async (t) => {
  const ns = await testNamespace(t, "sec-slow");
  await installCrds();
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "code-mallory", "mallory", "code");
  await markReady(ns, "code-mallory", { name: "code-mallory-svc", port: 80 });
  const upstream = await startUpstream(t, "mallory/code");
  const keys = await testKeys(t);
  const proxy = await startProxy(t, ns, keys, timeouts("PROXY"));
  proxy.resolver.set(ns, "code-mallory-svc", upstream.url);
  const cookie = await keys.cookie("mallory");
  const host = "code.example.test";

  await t.test("headers trickled a byte at a time: closed after PROXY_HEADERS_TIMEOUT", () =>
    slowHeaders(proxy.port),
  );
  await t.test(
    "an upload to the student's own environment trickled a byte at a time: closed after PROXY_REQUEST_TIMEOUT",
    () =>
      slowBody(
        proxy.port,
        `POST /upload HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nContent-Length: 100000\r\n\r\n`,
      ),
  );
  await t.test("an endless body after the 401 for a missing session: closed at once", () =>
    refusedThenClosed(
      proxy.port,
      `POST /upload HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\n`,
      401,
    ),
  );
  await t.test("an endless body after the 403 for a cross-site Start form: closed at once", () =>
    refusedThenClosed(
      proxy.port,
      `POST /_userland/start HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nOrigin: https://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n`,
      403,
    ),
  );
});
