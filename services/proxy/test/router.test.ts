/**
 * The proxy's request path piece by piece, without a cluster or a network: the Router's Route for
 * each situation, the Starter's once-a-minute rule, the user-manager client's answers and the
 * page shell every service uses.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { userlandNameFor } from "../../../api/naming.ts";
import type { Template, Userland } from "../../../api/v1alpha1/index.ts";
import { html, pageDocument } from "../../../lib/html.ts";
import { createLogger } from "../../../lib/logger.ts";
import type { SessionLookup } from "../../../lib/requestSessions.ts";
import {
  UserManagerError,
  userManagerClient,
  type UserManagerClient,
} from "../../../lib/userManagerClient.ts";
import { trustedProxies } from "../forward/headers.ts";
import { createMetrics } from "../metrics.ts";
import type { RequestRecord } from "../requestLog.ts";
import { overrideResolver } from "../route/resolver.ts";
import { Router } from "../route/router.ts";
import type { Route } from "../route/routes.ts";
import { UserlandIndex } from "../route/userlandIndex.ts";
import { Starter } from "../endpoints/starter.ts";

const HOST = "code.example.org";
const log = createLogger("proxy-router-test");

function userland(user: string, status: Userland["status"], enabled?: boolean): Userland {
  return {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name: user, namespace: "ns", generation: 1 },
    spec: { user, templateName: "code", ...(enabled === undefined ? {} : { enabled }) },
    ...(status ? { status } : {}),
  };
}

const ready = { phase: "Ready" as const, observedGeneration: 1, service: { name: "svc", port: 80 } };

function fakeRequest(url: string, headers: Record<string, string> = {}): IncomingMessage {
  return {
    url,
    method: "GET",
    headers: { host: HOST, ...headers },
    socket: { remoteAddress: "127.0.0.1" },
  } as unknown as IncomingMessage;
}

/** A router over an in-memory index; the session user is the `user` header (no cookies needed here). */
function router(
  options: {
    userlands?: Userland[];
    startOnAccess?: boolean;
    userManager?: UserManagerClient;
    starter?: Starter;
    synced?: boolean;
    origins?: "shared" | "perUser";
    baseDomain?: string;
    /** The Templates that exist (getTemplate), by name. */
    templates?: string[];
    /** What the API server holds beyond the cache (fetchUserland). */
    apiServer?: Userland[];
  } = {},
) {
  const index = new UserlandIndex();
  for (const u of options.userlands ?? []) index.upsert(u);
  const resolver = overrideResolver();
  resolver.set("ns", "svc", "http://127.0.0.1:9");
  const starter = options.starter ?? new Starter(options.userManager, createMetrics(), log);
  return new Router({
    config: {
      hostTemplates: new Map([[HOST, "code"]]),
      baseDomain: options.baseDomain,
      visitDomain: options.baseDomain,
      defaultTemplate: undefined,
      trustedProxies: trustedProxies([]),
      allowedOrigins: [],
      startOnAccess: options.startOnAccess ?? false,
      origins: options.origins ?? "shared",
      readyGraceMs: 30_000,
      loginUrl: new URL("https://auth.example.org/login"),
    },
    cluster: {
      namespace: "ns",
      findUserland: (user, template) => index.find(user, template),
      getUserland: (name) => options.userlands?.find((u) => u.metadata.name === name),
      getTemplate: (name) =>
        options.templates?.includes(name)
          ? {
              apiVersion: "userland.dev/v1alpha1",
              kind: "Template",
              metadata: { name },
              spec: {} as Template["spec"],
            }
          : undefined,
      synced: () => options.synced ?? true,
      ...(options.apiServer
        ? {
            fetchUserland: (namespace: string, name: string) =>
              Promise.resolve(
                options.apiServer?.find(
                  (u) => u.metadata.namespace === namespace && u.metadata.name === name,
                ),
              ),
          }
        : {}),
    },
    sessions: {
      fromRequest: (req): Promise<SessionLookup> => {
        const user = req.headers.user;
        return Promise.resolve(
          typeof user === "string"
            ? { session: { user, groups: [], sid: "s", exp: Date.now() / 1000 + 60, iat: Date.now() / 1000 } }
            : { session: undefined, conflicting: false },
        );
      },
      verify: () => Promise.resolve(undefined),
    },
    resolver,
    starter,
  });
}

const record = (): RequestRecord => ({ kind: "http", start: 0, peer: "127.0.0.1" });

function pageOf(route: Route): { outcome: string; status: number } {
  assert.equal(route.kind, "page");
  return { outcome: route.outcome, status: route.page.status };
}

test("a Userland just created and not yet in this replica's cache gets the starting page, never 'no environment' (issue 43 item 1)", async () => {
  const erin = userland("erin", undefined);
  erin.metadata.name = userlandNameFor("erin", "code");
  // The cache lags behind the API server: the Userland exists there only.
  const lagging = router({ apiServer: [erin] });
  assert.deepEqual(pageOf(await lagging.route(fakeRequest("/", { user: "erin" }), "http", record())), {
    outcome: "starting",
    status: 503,
  });
  // Someone else's name is not theirs; nobody with none gets a starting page.
  assert.deepEqual(pageOf(await lagging.route(fakeRequest("/", { user: "frank" }), "http", record())), {
    outcome: "no_environment",
    status: 404,
  });
});

test("the router decides once for HTTP and WebSocket: refusals, sign-in, own endpoints, pages, forward", async () => {
  const alice = userland("alice", ready);
  const r = router({
    userlands: [alice, userland("bob", { phase: "Starting" }), userland("carol", undefined, false)],
  });

  assert.deepEqual(pageOf(await r.route(fakeRequest("http://other/"), "http", record())), {
    outcome: "bad_request",
    status: 400,
  });
  assert.deepEqual(pageOf(await r.route(fakeRequest("/", { host: "evil.org" }), "http", record())), {
    outcome: "unknown_host",
    status: 404,
  });
  assert.equal((await r.route(fakeRequest("/"), "http", record())).kind, "signIn");

  const own = await r.route(fakeRequest("/_userland/status", { user: "alice" }), "http", record());
  assert.equal(own.kind, "ownEndpoint");
  assert.equal(own.kind === "ownEndpoint" && own.pathname, "/_userland/status");

  const rec = record();
  const forward = await r.route(fakeRequest("/x", { user: "alice" }), "http", rec);
  assert.equal(forward.kind, "forward");
  assert.equal(forward.kind === "forward" && forward.target.href, "http://127.0.0.1:9/");
  assert.deepEqual([rec.template, rec.user, rec.userland], ["code", "alice", "ns/alice"]);

  assert.deepEqual(pageOf(await r.route(fakeRequest("/", { user: "bob" }), "http", record())), {
    outcome: "starting",
    status: 503,
  });
  assert.deepEqual(pageOf(await r.route(fakeRequest("/", { user: "carol" }), "http", record())), {
    outcome: "stopped",
    status: 503,
  });
  assert.deepEqual(pageOf(await r.route(fakeRequest("/", { user: "dave" }), "http", record())), {
    outcome: "no_environment",
    status: 404,
  });

  // Only WebSockets are checked for their Origin here (form posts in the own endpoints).
  const foreign = { user: "alice", origin: "https://evil.org" };
  assert.equal((await r.route(fakeRequest("/", foreign), "http", record())).kind, "forward");
  assert.deepEqual(pageOf(await r.route(fakeRequest("/", foreign), "websocket", record())), {
    outcome: "forbidden_origin",
    status: 403,
  });

  const notSynced = router({ userlands: [alice], synced: false });
  assert.deepEqual(
    pageOf(await notSynced.route(fakeRequest("/", { user: "alice" }), "websocket", record())),
    {
      outcome: "starting",
      status: 503,
    },
  );
});

test("an environment's own host (<userland>--<template>) is served in both origin modes, so old and new replicas agree while an admin switches; a Template of that name keeps its host", async () => {
  const alice = userland("alice", ready);
  for (const origins of ["shared", "perUser"] as const) {
    const r = router({ userlands: [alice], origins, baseDomain: "example.org", templates: ["code", "a--b"] });
    const at = (host: string, user: string) => fakeRequest("/x", { host, user });
    const rec = record();
    const own = await r.route(at("alice--code.example.org", "alice"), "http", rec);
    assert.equal(own.kind, "forward", `${origins}: alice at her own host`);
    assert.deepEqual([rec.template, rec.userland], ["code", "ns/alice"]);
    // Someone else's host looks like a host naming nothing.
    assert.deepEqual(pageOf(await r.route(at("alice--code.example.org", "bob"), "http", record())), {
      outcome: "unknown_host",
      status: 404,
    });
    if (origins === "shared") {
      const named = record();
      await r.route(at("a--b.example.org", "alice"), "http", named);
      assert.equal(named.template, "a--b", "the Template a--b at its own host");
    }
  }
});

test("a Ready Userland whose Service has no address gets the 502 page", async () => {
  const r = router({ userlands: [userland("alice", { ...ready, service: { name: "unlisted", port: 80 } })] });
  assert.deepEqual(pageOf(await r.route(fakeRequest("/", { user: "alice" }), "http", record())), {
    outcome: "unresolved",
    status: 502,
  });
});

test("just after Ready, a Service with no address yet gets the starting page; later the 502 page", async () => {
  const since = new Date(Date.now() - 20_000).toISOString();
  const at = (s: number) => new Date(Date.parse(since) + s * 1000).toISOString();
  const readyAt = (msAgo: number) => ({
    ...ready,
    service: { name: "unlisted", port: 80 },
    progress: {
      since,
      steps: [
        { step: "Scheduled" as const, at: at(1) },
        { step: "ContainerStarted" as const, at: at(13) },
        { step: "AppReady" as const, at: at(16) },
        { step: "Reachable" as const, at: at(17) },
      ],
    },
    conditions: [
      {
        type: "Ready",
        status: "True" as const,
        reason: "Ready",
        message: "",
        lastTransitionTime: new Date(Date.now() - msAgo).toISOString(),
      },
    ],
  });
  const fresh = router({ userlands: [userland("alice", readyAt(1_000))] });
  const starting = await fresh.route(fakeRequest("/", { user: "alice" }), "http", record());
  assert.deepEqual(pageOf(starting), { outcome: "starting", status: 503 });
  // The start's progress, as the student read it while waiting, stays on the page.
  assert.equal(
    starting.kind === "page" && starting.page.json?.progress,
    "placed on a node 1 s, image pulled, container started 12 s, app ready 3 s, answering 1 s",
  );
  const old = router({ userlands: [userland("alice", readyAt(60_000))] });
  assert.deepEqual(pageOf(await old.route(fakeRequest("/", { user: "alice" }), "http", record())), {
    outcome: "unresolved",
    status: 502,
  });
});

test("start on access asks the user-manager at most once a minute per Userland", async () => {
  const starts: string[] = [];
  const userManager: UserManagerClient = {
    start: (name) => {
      starts.push(name);
      return Promise.resolve();
    },
    stop: () => Promise.reject(new Error("not used")),
    create: () => Promise.reject(new Error("not used")),
    assignments: () => Promise.reject(new Error("not used")),
    handIn: () => Promise.reject(new Error("not used")),
  };
  const starter = new Starter(userManager, createMetrics(), log);
  const r = router({ userlands: [userland("carol", undefined, false)], startOnAccess: true, starter });
  const decided = await r.route(fakeRequest("/", { user: "carol" }), "http", record());
  assert.equal(decided.kind, "start");
  assert.deepEqual(starts, [], "deciding starts nothing: server.ts acts on the route");
  // What server.ts's act() does with a start route, then two more requests within the minute.
  assert.equal(await starter.request(decided.userland, decided.user), true);
  assert.equal(decided.starting.status, 503);
  for (let i = 0; i < 2; i++)
    assert.deepEqual(pageOf(await r.route(fakeRequest("/", { user: "carol" }), "http", record())), {
      outcome: "starting",
      status: 503,
    });
  assert.deepEqual(starts, ["carol"]);

  const failing = new Starter(
    {
      start: () => Promise.reject(new Error("down")),
      stop: () => Promise.reject(new Error("not used")),
      create: () => Promise.reject(new Error("not used")),
      assignments: () => Promise.reject(new Error("not used")),
      handIn: () => Promise.reject(new Error("not used")),
    },
    createMetrics(),
    log,
  );
  const carol = userland("carol", undefined, false);
  assert.equal(await failing.request(carol, "carol"), false);
  assert.equal(failing.recentlyRequested(carol), false, "a failed start may be retried at once");
  assert.equal(new Starter(undefined, createMetrics(), log).canStart, false);
});

async function userManagerStandIn(t: TestContext, status: number) {
  const calls: { url: string; authorization: string | undefined; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      calls.push({ url: req.url ?? "", authorization: req.headers.authorization, body });
      res.writeHead(status, { "content-type": "application/json" }).end('{"message":"no"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/base`), calls };
}

test("the user-manager client: start, stop and create, 409 is 'exists', refusals and unreachable are errors", async (t) => {
  const created = await userManagerStandIn(t, 201);
  const client = userManagerClient({ url: created.url });
  assert.equal(await client.create("Ada", "code"), "created");
  await client.start("ada-x");
  await client.stop("ada-x");
  assert.deepEqual(
    created.calls.map((c) => [c.url, c.body]),
    [
      ["/base/api/v1/userlands", JSON.stringify({ user: "Ada", templateName: "code" })],
      ["/base/api/v1/userlands/ada-x/start", "{}"],
      ["/base/api/v1/userlands/ada-x/stop", "{}"],
    ],
  );

  const conflict = await userManagerStandIn(t, 409);
  assert.equal(await userManagerClient({ url: conflict.url }).create("Ada", "code"), "exists");
  await assert.rejects(
    userManagerClient({ url: conflict.url }).start("ada"),
    (error: unknown) => error instanceof UserManagerError && error.status === 409 && /no/.test(error.detail),
  );

  await assert.rejects(
    userManagerClient({ url: new URL("http://127.0.0.1:9/"), timeoutMs: 2000 }).start("ada"),
    (error: unknown) => error instanceof UserManagerError && error.status === 0,
  );
});

test("one page shell: title, heading, head extras and escaping", () => {
  const page = pageDocument({
    title: "A <title>",
    style: "body{}",
    heading: html`<span id="who">${"<b>"}</span>`,
    head: html`<meta name="robots" content="noindex" />`,
    body: html`<p>${"x & y"}</p>`,
  });
  assert.match(page, /^<!doctype html>/);
  assert.match(page, /<title>A &#60;title&#62;<\/title>/);
  assert.match(page, /<h1><span id="who">&#60;b&#62;<\/span><\/h1>/);
  assert.match(page, /<meta name="robots" content="noindex" \/>/);
  assert.match(page, /<p>x &#38; y<\/p>/);
  assert.match(pageDocument({ title: "T", style: "", body: html`` }), /<h1>T<\/h1>/);
});
