/**
 * What a student sees around their environment: starting, stopped (and starting it again through
 * the user-manager), missing, failed, unreachable and slow; and a graceful shutdown. Real control
 * plane, real operator, real sessions; upstreams and the user-manager are loopback stand-ins.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { childNames } from "../../../api/naming.ts";
import { UserlandAnnotations } from "../../../api/v1alpha1/index.ts";
import { progressText } from "../../../lib/startProgress.ts";
import { heldPort } from "../../../cluster/ports.ts";
import { eventually, testNamespace } from "../../../test/support/cluster.ts";
import { installCrds, startOperator } from "../../../test/support/operator.ts";
import {
  createTemplate,
  createUserland,
  patchUserland,
  simpleTemplateSpec,
  waitForPhase,
} from "../../../test/support/resources.ts";
import { openWebSocket, roundTrip, send, startProxy, startUpstream, testKeys } from "./support.ts";

const HOST = "code.example.test";
const html = { accept: "text/html,application/xhtml+xml" };

interface StartCall {
  name: string;
  authorization: string | undefined;
}

/** A loopback user-manager: POST /api/v1/userlands/{name}/start enables the Userland, as the real one does. */
async function startUserManager(t: TestContext, namespace: string, token: string) {
  const calls: StartCall[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const match = /^\/api\/v1\/userlands\/([^/]+)\/start$/.exec(req.url ?? "");
    if (req.method !== "POST" || !match?.[1]) {
      res.writeHead(404).end();
      return;
    }
    const name = decodeURIComponent(match[1]);
    calls.push({ name, authorization: req.headers.authorization });
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
      return;
    }
    patchUserland(namespace, name, { spec: { enabled: true } }).then(
      () => res.writeHead(200, { "content-type": "application/json" }).end("{}"),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

test("the starting page follows the Userland and turns into the environment once it is Ready", async (t) => {
  await installCrds();
  const ns = await testNamespace(t, "proxy");
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1", { displayName: "VS Code" }));
  const upstream = await startUpstream(t, "alice/code");
  const proxy = await startProxy(t, ns, keys);
  proxy.resolver.set(ns, childNames("code", "alice").service, upstream.url);
  const cookie = await keys.cookie("alice@uni.example");

  // No operator yet: the Userland exists but nothing has reconciled it.
  await createUserland(ns, "alice", "alice@uni.example", "code");
  const starting = await eventually(
    "the starting page",
    async () => {
      const r = await send(proxy.port, { headers: { host: HOST, cookie, ...html } });
      return r.status === 503 ? r : undefined;
    },
    10_000,
  );
  assert.match(starting.body, /Your VS Code environment is starting/);
  assert.match(starting.body, /fetch\("\/_userland\/status"/, "the page follows the status endpoint");
  assert.match(
    starting.body,
    /<noscript><meta http-equiv="refresh" content="5" \/><\/noscript>/,
    "and refreshes itself without JavaScript",
  );
  assert.equal(starting.headers["retry-after"], "2");
  assert.equal(starting.headers["cache-control"], "no-store");
  assert.match(
    String(starting.headers["content-security-policy"] ?? ""),
    /script-src 'sha256-[A-Za-z0-9+/=]+'/,
  );
  const status = await send(proxy.port, {
    path: "/_userland/status",
    headers: { host: HOST, cookie, accept: "application/json" },
  });
  assert.equal(status.json().state, "starting");
  const ws = await openWebSocket(proxy.port, { host: HOST, cookie });
  assert.ok("status" in ws && ws.status === 503, "WebSockets wait for the environment too");
  assert.equal(upstream.seen.length, 0, "nothing reached the environment yet");

  await startOperator(t, ns);
  await eventually("the status endpoint to report ready", async () => {
    const r = await send(proxy.port, {
      path: "/_userland/status",
      headers: { host: HOST, cookie, accept: "application/json" },
    });
    return r.json().state === "ready";
  });
  const ready = await send(proxy.port, { path: "/", headers: { host: HOST, cookie, ...html } });
  assert.equal(ready.status, 200);
  assert.equal(ready.json().upstream, "alice/code");
  assert.equal(ready.json().xUser, "alice@uni.example");
});

test("stopped: a page with a Start button that starts the environment through the user-manager; optional start on access", async (t) => {
  const ns = await testNamespace(t, "proxy");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "alice", "alice", "code", false);
  await createUserland(ns, "bob", "bob", "code", false);
  await patchUserland(ns, "alice", {
    metadata: { annotations: { [UserlandAnnotations.stoppedReason]: "IdleTimeout" } },
  });
  await waitForPhase(ns, "alice", "Stopped");
  await waitForPhase(ns, "bob", "Stopped");
  const upstream = await startUpstream(t, "code");
  const token = "user-manager-token";
  const userManager = await startUserManager(t, ns, token);
  const tokenFile = join(keys.dir, "um-token");
  await writeFile(tokenFile, `${token}\n`);
  const proxy = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: userManager.url,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
  });
  for (const name of ["alice", "bob"]) proxy.resolver.set(ns, childNames("code", name).service, upstream.url);
  const alice = await keys.cookie("alice");

  const stopped = await send(proxy.port, {
    path: "/notebooks/a.ipynb",
    headers: { host: HOST, cookie: alice, ...html },
  });
  assert.equal(stopped.status, 503);
  assert.match(stopped.body, /Your Test IDE environment is stopped/);
  assert.match(stopped.body, /stopped after a while without use/);
  assert.match(stopped.body, /<form method="post" action="\/_userland\/start"/);
  assert.match(stopped.body, /name="rd" value="\/notebooks\/a.ipynb"/);

  const form = { "content-type": "application/x-www-form-urlencoded" };
  const foreign = await send(proxy.port, {
    method: "POST",
    path: "/_userland/start",
    headers: { host: HOST, cookie: alice, origin: "https://evil.example", ...form },
    body: "rd=%2F",
  });
  assert.equal(foreign.status, 403, "a form on another site cannot start environments");
  const anonymous = await send(proxy.port, {
    method: "POST",
    path: "/_userland/start",
    headers: { host: HOST, origin: `https://${HOST}`, ...form },
  });
  assert.equal(anonymous.status, 401);
  assert.equal(userManager.calls.length, 0);

  const started = await send(proxy.port, {
    method: "POST",
    path: "/_userland/start",
    headers: { host: HOST, cookie: alice, origin: `https://${HOST}`, ...form },
    body: "rd=%2Fnotebooks%2Fa.ipynb",
  });
  assert.equal(started.status, 303);
  assert.equal(started.headers.location, "/notebooks/a.ipynb");
  assert.deepEqual(
    userManager.calls,
    [{ name: "alice", authorization: `Bearer ${token}` }],
    "started with the proxy's token, for the session's own Userland",
  );
  const next = await send(proxy.port, {
    path: "/notebooks/a.ipynb",
    headers: { host: HOST, cookie: alice, ...html },
  });
  assert.ok(
    next.status === 503 || next.status === 200,
    `right after Start: the starting page or the environment (${next.status})`,
  );
  if (next.status === 503) assert.match(next.body, /is starting/);
  await eventually("alice's environment", async () => {
    const r = await send(proxy.port, { headers: { host: HOST, cookie: alice } });
    return r.status === 200 && r.json().xUser === "alice";
  });
  const offsite = await send(proxy.port, {
    method: "POST",
    path: "/_userland/start",
    headers: { host: HOST, cookie: alice, origin: `https://${HOST}`, ...form },
    body: "rd=%2F%2Fevil.example%2F",
  });
  assert.equal(offsite.status, 400, "a return path off the site is refused");
  assert.equal(offsite.headers.location, undefined, "the return path never leaves the site");

  // Start on access: visiting is enough.
  const onAccess = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: userManager.url,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
    PROXY_START_ON_ACCESS: "true",
  });
  onAccess.resolver.set(ns, childNames("code", "bob").service, upstream.url);
  const bob = await keys.cookie("bob");
  const visit = await send(onAccess.port, { headers: { host: HOST, cookie: bob, ...html } });
  assert.equal(visit.status, 503);
  assert.match(visit.body, /is starting/);
  assert.deepEqual(userManager.calls.at(-1), { name: "bob", authorization: `Bearer ${token}` });
  await eventually("bob's environment", async () => {
    const r = await send(onAccess.port, { headers: { host: HOST, cookie: bob } });
    return r.status === 200 && r.json().xUser === "bob";
  });
});

test("just after Ready, a refused connection is tried again, then shows the starting page, never 'not answering'", async (t) => {
  const ns = await testNamespace(t, "proxy");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1", { displayName: "VS Code" }));
  await createUserland(ns, "alice", "alice", "code");
  const ready = await waitForPhase(ns, "alice", "Ready");
  // How the start went, as the student read it while waiting: the page kept after Ready says it too.
  const progress = progressText(ready.status?.progress, new Date());
  assert.match(progress, /placed on a node \d+ s, .*answering \d+ s/);
  const proxy = await startProxy(t, ns, keys, { PROXY_READY_GRACE: "10m" });
  // Nothing listens there yet: the Service does not route to the pod.
  const held = await heldPort();
  t.after(() => held.release());
  const port = held.port;
  proxy.resolver.set(ns, childNames("code", "alice").service, `http://127.0.0.1:${port}`);
  const cookie = await keys.cookie("alice");
  const get = () => send(proxy.port, { path: "/", headers: { host: HOST, cookie, ...html } });
  const refusals = async () => {
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    return Number(
      /userland_proxy_upstream_errors_total\{kind="http",error="refused"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
  };

  const started = Date.now();
  const refused = await get();
  assert.equal(refused.status, 503);
  assert.match(refused.body, /Your VS Code environment is starting/);
  assert.match(refused.body, /Waiting for your environment to answer/);
  assert.ok(refused.body.includes(`<p class="muted" id="progress">${progress}</p>`), refused.body);
  assert.doesNotMatch(refused.body, /not answering/);
  assert.equal(await refusals(), 5, "the first attempt and four more");
  assert.ok(Date.now() - started < 8000, "the retries are bounded (about 5 s)");

  // The environment answers while the request is being retried: the student gets it.
  const pending = get();
  await eventually("the first attempt to be refused", async () => (await refusals()) > 5);
  const upstream = createServer((_req, res) => res.end("hello from the IDE"));
  await new Promise<void>((resolve) => upstream.listen(port, "127.0.0.1", resolve));
  t.after(
    () => new Promise<void>((resolve) => (upstream.closeAllConnections(), upstream.close(() => resolve()))),
  );
  const answered = await pending;
  assert.equal(answered.status, 200);
  assert.equal(answered.body, "hello from the IDE");
});

test("missing and failed environments, unreachable (502) and slow (504) upstreams, graceful shutdown", async (t) => {
  const ns = await testNamespace(t, "proxy");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "alice", "alice", "code");
  await createUserland(ns, "carol", "carol", "gone");
  await waitForPhase(ns, "alice", "Ready");
  await waitForPhase(ns, "carol", "Failed");
  const upstream = await startUpstream(t, "alice/code");
  // Refusals here are outages: no grace after Ready (the next test covers the grace).
  const proxy = await startProxy(t, ns, keys, { PROXY_UPSTREAM_TIMEOUT: "500ms", PROXY_READY_GRACE: "0s" });
  const service = childNames("code", "alice").service;
  proxy.resolver.set(ns, service, upstream.url);
  const alice = await keys.cookie("alice");
  const get = (path: string, cookie = alice, host = HOST) =>
    send(proxy.port, { path, headers: { host, cookie, ...html } });

  const missing = await get("/", await keys.cookie("nobody"));
  assert.equal(missing.status, 404);
  assert.match(missing.body, /You have no Test IDE environment/);
  assert.match(missing.body, /nobody/);
  const missingJson = await send(proxy.port, {
    headers: { host: HOST, cookie: await keys.cookie("nobody"), accept: "application/json" },
  });
  assert.deepEqual(missingJson.json(), { state: "missing", template: "code" });

  const failed = await get("/", await keys.cookie("carol"), "gone.apps.example.test");
  assert.equal(failed.status, 503);
  assert.match(failed.body, /could not start/);
  assert.match(failed.body, /Template &#34;gone&#34; does not exist/);

  assert.equal((await get("/")).status, 200);
  const slow = await get("/slow?ms=3000");
  assert.equal(slow.status, 504);
  assert.match(slow.body, /taking too long to answer/);
  const reset = await get("/reset");
  assert.equal(reset.status, 502);
  assert.match(reset.body, /not answering/);

  // Held, so nothing listens there: the connection is refused.
  const closed = await heldPort();
  t.after(() => closed.release());
  proxy.resolver.set(ns, service, `http://127.0.0.1:${closed.port}`);
  const refused = await get("/");
  assert.equal(refused.status, 502);
  assert.match(refused.body, /refused the connection/);
  const refusedWs = await openWebSocket(proxy.port, { host: HOST, cookie: alice });
  assert.ok("status" in refusedWs && refusedWs.status === 502);
  proxy.resolver.delete(ns, service);
  assert.equal((await get("/")).status, 502, "a Service without an address is a 502 too, never a guess");

  const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
  assert.match(metrics, /userland_proxy_upstream_errors_total\{kind="http",error="timeout"\} 1/);
  assert.match(metrics, /userland_proxy_upstream_errors_total\{kind="http",error="refused"\} 1/);
  assert.match(metrics, /userland_proxy_route_outcomes_total\{kind="http",outcome="no_environment"\} 2/);

  // Graceful shutdown: requests in flight finish, WebSockets close, nothing new is accepted.
  const drain = await startProxy(t, ns, keys, { PROXY_UPSTREAM_TIMEOUT: "10s" });
  drain.resolver.set(ns, service, upstream.url);
  const opened = await openWebSocket(drain.port, { host: HOST, cookie: alice });
  assert.ok("ws" in opened);
  assert.equal((await roundTrip(opened.ws, "hi")).upstream, "alice/code");
  const wsClosed = new Promise((resolve) => opened.ws.once("close", resolve));
  const inFlight = send(drain.port, { path: "/slow?ms=800", headers: { host: HOST, cookie: alice } });
  await eventually(
    "the slow request to reach the upstream",
    () => upstream.seen.some((s) => s.url === "/slow?ms=800"),
    5000,
    10,
  );
  const closing = drain.close(5000);
  await wsClosed;
  const finished = await inFlight;
  assert.equal(finished.status, 200, "the request in flight finished");
  await closing;
  await assert.rejects(send(drain.port, { headers: { host: HOST, cookie: alice } }), /ECONNREFUSED/);
  assert.equal((await fetch(`${proxy.adminUrl}/readyz`)).status, 200, "the other proxy is unaffected");
});
