/**
 * Hostile input against the proxy: the real proxy (in-process, under a ServiceAccount with only its
 * Role), the real operator, the real control plane and real session keys. Two students, "mallory"
 * (the attacker, whose session every request carries unless a row says otherwise) and "victim",
 * each with a "code" and a "jupyter" environment served by a loopback upstream that reports what it
 * received. Every row is its own test and checks two things: what the proxy answered, and that no
 * upstream but mallory's own saw the request (and that mallory's saw exactly one X-User: mallory).
 */
import assert from "node:assert/strict";
import { createPublicKey } from "node:crypto";
import { test } from "node:test";
import { SignJWT } from "jose";
import { SESSION_AUDIENCE, SESSION_ISSUER } from "../../lib/session.ts";
import {
  forgeToken,
  openWebSocket,
  rawExchange,
  rawStatuses,
  roundTrip,
  send,
  startProxy,
  startUpstream,
  testKeys,
  type Response,
  type Seen,
  type Upstream,
  SPOOFED_IDENTITY_HEADERS,
} from "../../services/proxy/test/support.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import { createTemplate, createUserland, simpleTemplateSpec, waitForPhase } from "../support/resources.ts";

const MALLORY = "mallory";
const VICTIM = "victim";
/** A third student, for the per-student limits. */
const BOB = "bob";
const CODE = "code.example.test";
const JUPYTER = "jupyter.example.test";
const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** Header names an environment could take for an identity (after the proxy, only x-user may remain). */
const identityLike = (name: string) =>
  /user|email|remote|principal|oidc|group|auth-request|assertion|impersonate|pomerium/i.test(name);

interface Row {
  name: string;
  run: () => Promise<void>;
}

test("hostile requests through the proxy never reach another user's environment", async (t) => {
  const ns = await testNamespace(t, "sec-proxy");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1"));
  await createTemplate(ns, "jupyter", simpleTemplateSpec("registry.invalid/jupyter:1"));

  const upstreams = new Map<string, Upstream>();
  const userlands = new Map<string, string>();
  for (const user of [MALLORY, VICTIM]) {
    for (const template of ["code", "jupyter"]) {
      const key = `${user}/${template}`;
      upstreams.set(key, await startUpstream(t, key));
      userlands.set(key, `${template}-${user}`);
      await createUserland(ns, `${template}-${user}`, user, template);
    }
  }
  // A third student, outside the table's bookkeeping: the per-student limits must not touch others.
  const bobUpstream = await startUpstream(t, `${BOB}/code`);
  await createUserland(ns, `code-${BOB}`, BOB, "code");
  // No default Template: an unknown Host is a 404, not somebody's environment. No grace after
  // Ready (PROXY_READY_GRACE): the Userlands here turned Ready moments ago, and the rows on the 502
  // page need a refused connection to be one at once, not a starting page after retries.
  const proxy = await startProxy(t, ns, keys, {
    PROXY_ALLOWED_ORIGINS: "https://portal.example.test",
    PROXY_READY_GRACE: "0s",
  });
  // The same cluster behind a proxy with tiny per-student limits (issue 13 item 6).
  const limited = await startProxy(t, ns, keys, {
    PROXY_MAX_WEBSOCKETS_PER_USER: "2",
    PROXY_MAX_REQUESTS_PER_USER: "2",
  });
  const services = new Map<string, string>();
  for (const [key, name] of [...userlands, [`${BOB}/code`, `code-${BOB}`] as const]) {
    const service = (await waitForPhase(ns, name, "Ready")).status?.service;
    assert.ok(service, `${name} names its Service`);
    services.set(key, service.name);
    const url = key === `${BOB}/code` ? bobUpstream.url : (upstreams.get(key)?.url ?? "");
    proxy.resolver.set(ns, service.name, url);
    limited.resolver.set(ns, service.name, url);
  }

  const mallory = await keys.cookie(MALLORY);
  const malloryToken = mallory.slice("userland_session=".length);
  const own = (template = "code") => upstreams.get(`${MALLORY}/${template}`) as Upstream;
  const counts = () => new Map([...upstreams].map(([k, u]) => [k, u.seen.length]));

  /** Runs `act`; then only `expected` upstreams (keys) may have seen requests, each as mallory. */
  async function only<T>(expected: string[], act: () => Promise<T>): Promise<T> {
    const before = counts();
    const result = await act();
    const reached = [...upstreams].filter(([k, u]) => u.seen.length !== before.get(k)).map(([k]) => k);
    assert.deepEqual(reached.sort(), [...expected].sort(), "upstreams reached");
    for (const key of expected) {
      const seen = upstreams.get(key)?.seen.slice(before.get(key)) ?? [];
      for (const s of seen) assertOnlyProxyIdentity(s);
    }
    return result;
  }
  function assertOnlyProxyIdentity(s: Seen): void {
    const names = s.rawHeaders.filter((_, i) => i % 2 === 0);
    assert.deepEqual(
      names.filter(identityLike),
      ["x-user"],
      `identity headers upstream: ${names.join(", ")}`,
    );
    assert.deepEqual(
      s.rawHeaders.filter((_, i) => i % 2 === 1 && s.rawHeaders[i - 1] === "x-user"),
      [MALLORY],
      "exactly one X-User, the session's",
    );
    assert.ok(!(s.headers.cookie ?? "").includes("userland_session"), "the session cookie is not forwarded");
  }
  const seenBy = (r: Response) => r.json<{ upstream: string; xUser: string; url: string }>();
  const get = (headers: Record<string, string> | string[], path = "/") => send(proxy.port, { path, headers });
  const asMallory = (extra: Record<string, string> = {}, host = CODE) => ({
    host,
    cookie: mallory,
    ...extra,
  });

  const rows: Row[] = [];
  const row = (name: string, run: () => Promise<void>) => rows.push({ name, run });

  // --- Spoofed identity headers ------------------------------------------------------------------
  const spellings = SPOOFED_IDENTITY_HEADERS;
  for (const spelling of spellings) {
    row(`identity header "${spelling}: victim" is stripped; upstream sees only X-User: mallory`, async () => {
      const r = await only([`${MALLORY}/code`], () =>
        get(["Host", CODE, "Cookie", mallory, spelling, VICTIM]),
      );
      assert.equal(r.status, 200, r.body);
      assert.equal(seenBy(r).xUser, MALLORY);
    });
  }
  row("duplicated X-User lines (victim, admin) and mixed spellings are all stripped", async () => {
    const r = await only([`${MALLORY}/code`], () =>
      get(["Host", CODE, "X-User", VICTIM, "Cookie", mallory, "x-user", "admin", "X_USER", VICTIM]),
    );
    assert.equal(r.status, 200, r.body);
  });
  row("an empty X-User header is stripped too", async () => {
    const r = await only([`${MALLORY}/code`], () => get(["Host", CODE, "Cookie", mallory, "X-User", ""]));
    assert.equal(r.status, 200, r.body);
  });
  row("X-User sent as a chunked-body trailer never reaches the upstream", async () => {
    const text =
      `POST /upload HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nTransfer-Encoding: chunked\r\n` +
      `Trailer: X-User\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\nX-User: ${VICTIM}\r\n\r\n`;
    const response = await only([`${MALLORY}/code`], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [200], response);
    const last = own().seen.at(-1);
    assert.equal(last?.trailers?.["x-user"], undefined, "no X-User trailer upstream");
  });
  row("a header name with a space before the colon is refused with 400", async () => {
    const text = `GET / HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nX-User : ${VICTIM}\r\nConnection: close\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [400], response);
  });
  row("an obs-fold continuation line is refused with 400 (it cannot smuggle an X-User header)", async () => {
    const text =
      `GET / HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nX-Note: a\r\n X-User: ${VICTIM}\r\n` +
      `Connection: close\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [400], response);
  });
  row("identity headers on a WebSocket handshake are stripped too", async () => {
    const opened = await only([`${MALLORY}/jupyter`], () =>
      openWebSocket(proxy.port, {
        host: JUPYTER,
        cookie: mallory,
        origin: `https://${JUPYTER}`,
        headers: { "X-User": VICTIM, X_User: VICTIM, "X-Forwarded-User": VICTIM, "Remote-User": VICTIM },
      }),
    );
    assert.ok("ws" in opened, JSON.stringify(opened));
    assert.deepEqual(await roundTrip(opened.ws, "hi"), {
      upstream: `${MALLORY}/jupyter`,
      xUser: MALLORY,
      echo: "hi",
    });
    opened.ws.close();
  });
  row("X-Forwarded-Host and Forwarded from an untrusted client do not pick the Template", async () => {
    const r = await only([`${MALLORY}/code`], () =>
      get(
        asMallory({ "X-Forwarded-Host": JUPYTER, Forwarded: `host=${JUPYTER}`, "X-Original-Host": JUPYTER }),
      ),
    );
    assert.equal(seenBy(r).upstream, `${MALLORY}/code`);
  });

  // --- Sessions: forged, tampered, expired -------------------------------------------------------
  const otherKeys = await testKeys(t);
  const realKid = keys.keys.keys[0]?.kid ?? "";
  const [h = "", p = "", s = ""] = malloryToken.split(".");
  const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
  const victimClaims = {
    sub: VICTIM,
    sid: "x",
    iss: SESSION_ISSUER,
    aud: SESSION_AUDIENCE,
    iat: now(),
    exp: now() + 600,
  };
  const publicKey = createPublicKey({ key: keys.jwk, format: "jwk" });
  const hmacWith = (secret: string) =>
    new SignJWT(victimClaims)
      .setProtectedHeader({ alg: "HS256", kid: realKid, typ: "JWT" })
      .sign(new TextEncoder().encode(secret));
  const badSessions: [string, () => Promise<string> | string][] = [
    ["signed by another key (its own kid)", () => otherKeys.signer.sign(VICTIM, 3600)],
    [
      "signed by another key under the real kid",
      () => forgeToken(otherKeys.keys, { sub: VICTIM, exp: now() + 600 }, { kid: realKid }),
    ],
    ["alg none", () => `${b64({ alg: "none", typ: "JWT", kid: realKid })}.${b64(victimClaims)}.`],
    ["HS256 keyed with the public JWK", () => hmacWith(JSON.stringify({ ...keys.jwk, d: undefined }))],
    [
      "HS256 keyed with the public key's PEM",
      () => hmacWith(publicKey.export({ format: "pem", type: "spki" }).toString()),
    ],
    ["payload changed to the victim, signature kept", () => `${h}.${b64({ ...claims, sub: VICTIM })}.${s}`],
    ["signature altered", () => `${h}.${p}.${s.slice(0, -4)}${s.endsWith("AAAA") ? "BBBB" : "AAAA"}`],
    ["signature stripped", () => `${h}.${p}.`],
    ["expired (real key)", () => forgeToken(keys.keys, { sub: VICTIM, exp: now() - 60 })],
    ["without exp (real key)", () => forgeToken(keys.keys, { sub: VICTIM })],
    [
      "for another audience (real key)",
      () => forgeToken(keys.keys, { sub: VICTIM, exp: now() + 600, aud: "grafana" }),
    ],
    [
      "from another issuer (real key)",
      () => forgeToken(keys.keys, { sub: VICTIM, exp: now() + 600, iss: "evil" }),
    ],
    [
      "not valid yet (nbf in an hour, real key)",
      () => forgeToken(keys.keys, { sub: VICTIM, exp: now() + 7200, nbf: now() + 3600 }),
    ],
    [
      "identity with a line break (real key)",
      () => forgeToken(keys.keys, { sub: `${VICTIM}\nX-User: admin`, exp: now() + 600 }),
    ],
    ["garbage", () => "not-a-token"],
    ["an empty value", () => ""],
    ["16 KB of base64", () => `${"A".repeat(5000)}.${"B".repeat(5000)}.${"C".repeat(5000)}`],
  ];
  for (const [what, make] of badSessions) {
    row(`session ${what}: 401 for API clients, 302 to login for browsers, 401 for WebSockets`, async () => {
      const cookie = `userland_session=${await make()}`;
      await only([], async () => {
        const api = await get({ host: CODE, cookie, accept: "application/json" });
        assert.equal(api.status, 401, api.body);
        const browser = await get({ host: CODE, cookie, accept: "text/html" }, "/lab");
        assert.equal(browser.status, 302);
        const location = new URL(browser.headers.location ?? "");
        assert.equal(location.origin + location.pathname, "https://auth.example.test/login");
        const ws = await openWebSocket(proxy.port, { host: CODE, cookie, origin: `https://${CODE}` });
        assert.ok("status" in ws && ws.status === 401, JSON.stringify(ws));
      });
    });
  }
  row("a forged victim cookie next to mallory's valid one: the request is mallory's", async () => {
    const forged = `${h}.${b64({ ...claims, sub: VICTIM })}.${s}`;
    const r = await only([`${MALLORY}/code`], () =>
      get({ host: CODE, cookie: `userland_session=${forged}; ${mallory}` }),
    );
    assert.equal(seenBy(r).xUser, MALLORY);
  });
  row("the cookie name is exact: USERLAND_SESSION with a valid token is no session", async () => {
    await only([], async () => {
      const r = await get({
        host: CODE,
        cookie: `USERLAND_SESSION=${malloryToken}`,
        accept: "application/json",
      });
      assert.equal(r.status, 401);
    });
  });
  row("a session cookie sent by the environment (Set-Cookie) is dropped", async () => {
    const r = await only([`${MALLORY}/code`], () => get(asMallory()));
    assert.deepEqual(r.headers["set-cookie"], ["app=1; Path=/"]);
  });
  row("keep-alive: a second request on the same connection without a cookie is not signed in", async () => {
    const text =
      `GET /first HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\n\r\n` +
      `GET /second HTTP/1.1\r\nHost: ${JUPYTER}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`;
    const response = await only([`${MALLORY}/code`], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [200, 401], response);
  });

  // --- Paths and request targets -----------------------------------------------------------------
  // Dot segments (also %2e%2e) are resolved the way a browser would before forwarding; nothing else
  // in a path is touched. Either way the path only ever names something in mallory's environment.
  const pathRows: [string, string][] = [
    ["/../victim/", "/victim/"],
    ["/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd"],
    ["/..%2f..%2f", "/..%2f..%2f"],
    ["/%2E%2E%5C%2E%2E%5C", "/%2E%2E%5C%2E%2E%5C"],
    ["//jupyter.example.test/", "//jupyter.example.test/"],
    ["/%2F%2Fjupyter.example.test/", "/%2F%2Fjupyter.example.test/"],
    ["/_userland/../x", "/x"],
    ["/%5Fuserland/status", "/%5Fuserland/status"],
    ["/a?next=//victim", "/a?next=//victim"],
  ];
  for (const [path, upstreamPath] of pathRows) {
    row(`path ${JSON.stringify(path)} reaches mallory's own environment as ${upstreamPath}`, async () => {
      const r = await only([`${MALLORY}/code`], () => get(asMallory(), path));
      assert.equal(r.status, 200, r.body);
      assert.equal(seenBy(r).url, upstreamPath);
    });
  }
  row("a path that resolves into /_userland/ is the proxy's, never forwarded", async () => {
    const r = await only([], () => get(asMallory({ accept: "application/json" }), "/x/../_userland/status"));
    assert.equal(r.status, 200);
    assert.equal(r.json().user, MALLORY);
  });
  for (const target of ["http://jupyter.example.test/", "http://code.example.test/", "https://victim/"]) {
    row(`absolute-form target ${target} is refused with 400`, async () => {
      const r = await only([], () => get(asMallory(), target));
      assert.equal(r.status, 400);
    });
  }
  row("asterisk-form target (OPTIONS *) is refused with 400", async () => {
    const text = `OPTIONS * HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nConnection: close\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [400], response);
  });
  row("CONNECT is not tunnelled anywhere: the connection is closed", async () => {
    const text = `CONNECT code-victim-svc.${ns}.svc:80 HTTP/1.1\r\nHost: code-victim-svc.${ns}.svc:80\r\nCookie: ${mallory}\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text, 3000));
    assert.ok(!rawStatuses(response).some((c) => c >= 200 && c < 300), response);
  });
  row("request smuggling (Content-Length with Transfer-Encoding) is refused with 400", async () => {
    const smuggled = `GET /smuggled HTTP/1.1\r\nHost: ${JUPYTER}\r\nX-User: ${VICTIM}\r\n\r\n`;
    const text =
      `POST / HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nContent-Length: ${5 + smuggled.length}\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`;
    const response = await only([], () => rawExchange(proxy.port, text, 3000));
    assert.deepEqual(rawStatuses(response), [400], response);
  });

  // --- Host tricks --------------------------------------------------------------------------------
  const hostRows: [string, string, string | number][] = [
    ["another Template's host", JUPYTER, "jupyter"],
    ["a port", `${CODE}:8443`, "code"],
    ["upper case", CODE.toUpperCase(), "code"],
    ["a trailing dot", `${CODE}.`, "code"],
    ["<template>.<base domain>", "jupyter.apps.example.test", "jupyter"],
    ["an unknown host", "victim.example.test", 404],
    ["the victim's name as a label", `victim.${CODE}`, 404],
    ["two labels under the base domain", "code.victim.apps.example.test", 404],
    ["a Template nobody has", "rstudio.apps.example.test", 404],
    ["userinfo", `victim@${CODE}`, 404],
    ["an IP literal", "127.0.0.1", 404],
    ["an IPv6 literal", "[::1]:80", 404],
  ];
  for (const [what, host, expected] of hostRows) {
    row(
      `Host with ${what} (${host}) → ${typeof expected === "number" ? String(expected) : `mallory's ${expected}`}`,
      async () => {
        if (typeof expected === "number") {
          const r = await only([], () => get({ host, cookie: mallory, accept: "application/json" }));
          assert.equal(r.status, expected, r.body);
        } else {
          const r = await only([`${MALLORY}/${expected}`], () => get({ host, cookie: mallory }));
          assert.equal(r.status, 200, r.body);
          assert.equal(seenBy(r).upstream, `${MALLORY}/${expected}`);
        }
      },
    );
  }
  row("HTTP/1.1 without a Host header is refused with 400", async () => {
    const text = `GET / HTTP/1.1\r\nCookie: ${mallory}\r\nConnection: close\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [400], response);
  });
  row("two Host headers: the first one decides, and the upstream sees just that one", async () => {
    const text = `GET / HTTP/1.1\r\nHost: ${CODE}\r\nHost: ${JUPYTER}\r\nCookie: ${mallory}\r\nConnection: close\r\n\r\n`;
    const response = await only([`${MALLORY}/code`], () => rawExchange(proxy.port, text));
    assert.deepEqual(rawStatuses(response), [200], response);
    const last = own().seen.at(-1);
    assert.ok(last);
    assert.deepEqual(
      last.rawHeaders.filter((name, i) => i % 2 === 0 && /^host$/i.test(name)),
      ["host"],
    );
    assert.equal(last.headers.host, CODE);
  });

  // --- Oversized input ----------------------------------------------------------------------------
  const stillServes = async () => {
    const r = await only([`${MALLORY}/code`], () => get(asMallory()));
    assert.equal(r.status, 200, "the proxy still serves");
  };
  for (const [what, headers, expected] of [
    ["without a session", { host: CODE }, 401],
    ["with a forged session", { host: CODE, cookie: "userland_session=x.y.z" }, 401],
    ["to an unknown host", { host: "nowhere.example.test", cookie: mallory }, 404],
  ] as const) {
    row(`a 2 MiB POST ${what} is refused with ${expected}; the proxy stays up`, async () => {
      const r = await only([], () =>
        send(proxy.port, {
          method: "POST",
          path: "/upload",
          headers: { ...headers, accept: "application/json", "content-type": "application/octet-stream" },
          body: "u".repeat(2 * 1024 * 1024),
        }),
      );
      assert.equal(r.status, expected, r.body);
      await stillServes();
    });
  }
  row("a 20 KB header is refused with 431; the proxy stays up", async () => {
    const r = await only([], () => get(asMallory({ "x-pad": "a".repeat(20_000) })));
    assert.equal(r.status, 431);
    await stillServes();
  });
  row("200 headers of 100 bytes are refused with 431; the proxy stays up", async () => {
    const raw = ["Host", CODE, "Cookie", mallory];
    for (let i = 0; i < 200; i++) raw.push(`x-pad-${i}`, "b".repeat(100));
    const r = await only([], () => get(raw));
    assert.equal(r.status, 431);
    await stillServes();
  });
  row("a 20 KB URL is refused with 431; the proxy stays up", async () => {
    const r = await only([], () => get(asMallory(), `/${"p".repeat(20_000)}`));
    assert.equal(r.status, 431);
    await stillServes();
  });
  row("a WebSocket handshake with a 20 KB header is refused with 431", async () => {
    const opened = await only([], () =>
      openWebSocket(proxy.port, {
        host: CODE,
        cookie: mallory,
        origin: `https://${CODE}`,
        headers: { "x-pad": "c".repeat(20_000) },
      }),
    );
    assert.ok("status" in opened && opened.status === 431, JSON.stringify(opened).slice(0, 200));
    await stillServes();
  });
  row(
    "an 8 MiB body streams to mallory's own environment (no buffering, no limit of the proxy's)",
    async () => {
      const before = process.memoryUsage().rss;
      const r = await only([`${MALLORY}/code`], () =>
        send(proxy.port, {
          method: "POST",
          path: "/upload",
          headers: { ...asMallory(), "content-type": "application/octet-stream" },
          body: "z".repeat(8 * 1024 * 1024),
        }),
      );
      assert.equal(r.status, 200, r.body);
      assert.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024, "memory stays bounded");
    },
  );
  row("a Start form larger than 4 KiB is refused with 413; the proxy stays up", async () => {
    const r = await only([], () =>
      send(proxy.port, {
        method: "POST",
        path: "/_userland/start",
        headers: {
          ...asMallory(),
          origin: `https://${CODE}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: `rd=/${"x".repeat(8192)}`,
      }),
    );
    assert.equal(r.status, 413, r.body.slice(0, 200));
    await stillServes();
  });

  // --- WebSockets ---------------------------------------------------------------------------------
  const wsRefusals: [string, string | undefined, string | undefined, number][] = [
    ["a foreign Origin", "https://evil.example", mallory, 403],
    ["another Template's host as Origin", `https://${JUPYTER}`, mallory, 403],
    ["the right host on another port as Origin", `https://${CODE}:8443`, mallory, 403],
    ["a look-alike Origin", `https://${CODE}.evil.example`, mallory, 403],
    ["Origin null (sandboxed frame, file://)", "null", mallory, 403],
    ["no session", `https://${CODE}`, undefined, 401],
    ["no session and a foreign Origin", "https://evil.example", undefined, 401],
  ];
  for (const [what, origin, cookie, status] of wsRefusals) {
    row(`WebSocket with ${what} is refused with ${status}`, async () => {
      const opened = await only([], () =>
        openWebSocket(proxy.port, {
          host: CODE,
          ...(cookie ? { cookie } : {}),
          ...(origin ? { origin } : {}),
        }),
      );
      assert.ok("status" in opened && opened.status === status, JSON.stringify(opened));
    });
  }
  row(
    "WebSocket from an allowed origin (PROXY_ALLOWED_ORIGINS) reaches mallory's own environment",
    async () => {
      const opened = await only([`${MALLORY}/code`], () =>
        openWebSocket(proxy.port, { host: CODE, cookie: mallory, origin: "https://portal.example.test" }),
      );
      assert.ok("ws" in opened);
      assert.equal((await roundTrip(opened.ws, "x")).xUser, MALLORY);
      opened.ws.close();
    },
  );
  row("WebSocket without Origin (not a browser page) is allowed, to mallory's own environment", async () => {
    const opened = await only([`${MALLORY}/code`], () =>
      openWebSocket(proxy.port, { host: CODE, cookie: mallory }),
    );
    assert.ok("ws" in opened);
    assert.equal((await roundTrip(opened.ws, "x")).upstream, `${MALLORY}/code`);
    opened.ws.close();
  });
  row("an Upgrade other than websocket (h2c) is refused with 400", async () => {
    const text =
      `GET / HTTP/1.1\r\nHost: ${CODE}\r\nCookie: ${mallory}\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
      `Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`;
    const response = await only([], () => rawExchange(proxy.port, text, 3000));
    assert.deepEqual(rawStatuses(response), [400], response);
  });
  row("a WebSocket to the proxy's own /_userland/ paths is refused with 404", async () => {
    const opened = await only([], () =>
      openWebSocket(proxy.port, { host: CODE, cookie: mallory, path: "/_userland/status" }),
    );
    assert.ok("status" in opened && opened.status === 404);
  });

  // --- The proxy's own Start form ------------------------------------------------------------------
  /** `origin` null: no Origin header; `extra` adds headers (Sec-Fetch-Site). */
  const startForm = (
    rd: string,
    origin: string | null = `https://${CODE}`,
    extra: Record<string, string> = {},
  ) =>
    send(proxy.port, {
      method: "POST",
      path: "/_userland/start",
      headers: {
        ...asMallory(),
        ...(origin === null ? {} : { origin }),
        "content-type": "application/x-www-form-urlencoded",
        ...extra,
      },
      body: new URLSearchParams({ rd }).toString(),
    });
  for (const rd of [
    "//evil.example/",
    "/\\evil.example/",
    "https://evil.example/",
    "/\t/evil.example",
    "javascript:alert(1)",
    "/caf\u00e9",
    "/\u20ac",
  ]) {
    row(`Start form with rd=${JSON.stringify(rd)} is refused with 400 (no redirect, no 500)`, async () => {
      const r = await only([], () => startForm(rd));
      assert.equal(r.status, 400, r.body.slice(0, 200));
      assert.equal(r.headers.location, undefined);
    });
  }
  row("Start form with a local rd returns to it (control)", async () => {
    const r = await only([], () => startForm("/lab?x=1"));
    assert.equal(r.status, 303);
    assert.equal(r.headers.location, "/lab?x=1");
  });
  row("Start form posted from a foreign Origin is refused with 403", async () => {
    const r = await only([], () => startForm("/", "https://evil.example"));
    assert.equal(r.status, 403);
  });
  // Browsers may leave Origin out of a POST, or send "null" (the stopped page's no-referrer
  // policy makes chromium send "Origin: null" on its own form); Sec-Fetch-Site then decides.
  const fetchSiteRows: [string, string | null, string, number][] = [
    ["no Origin, Sec-Fetch-Site: cross-site", null, "cross-site", 403],
    ["no Origin, Sec-Fetch-Site: same-site (another Template's environment)", null, "same-site", 403],
    ["Origin: null, Sec-Fetch-Site: cross-site (a sandboxed frame)", "null", "cross-site", 403],
    [
      "Origin: null, Sec-Fetch-Site: same-origin (the stopped page's own form in chromium)",
      "null",
      "same-origin",
      303,
    ],
  ];
  for (const [what, origin, site, status] of fetchSiteRows) {
    row(`Start form with ${what}: ${status}`, async () => {
      const r = await only([], () => startForm("/", origin, { "sec-fetch-site": site }));
      assert.equal(r.status, status, r.body.slice(0, 200));
    });
  }

  // --- Pages that link back to the request's path (issue 13 item 2) ----------------------------------
  for (const path of ["//evil.example/x", "/\\evil.example/x", "/%2F%2Fevil.example/x"]) {
    row(`the 502 page for ${JSON.stringify(path)} links only to a path on this site`, async () => {
      const service = services.get(`${MALLORY}/code`) ?? "";
      // Port 1 on loopback: nothing listens, the connection is refused.
      proxy.resolver.set(ns, service, "http://127.0.0.1:1");
      try {
        const r = await only([], () => get(asMallory({ accept: "text/html" }), path));
        assert.equal(r.status, 502, r.body.slice(0, 200));
        const links = [...r.body.matchAll(/href="([^"]*)"/g)].map((m) => m[1] ?? "");
        assert.ok(links.length > 0, "the page has its Try again link");
        for (const link of links) {
          const target = new URL(link, `https://${CODE}/`);
          assert.equal(target.origin, `https://${CODE}`, `link ${link} stays on this site`);
          assert.ok(link.startsWith("/") && !link.includes("\\"), `link ${link} is a plain path`);
        }
      } finally {
        proxy.resolver.set(ns, service, own().url);
      }
    });
  }

  // --- The path routed is the path forwarded (issue 13 item 5) ---------------------------------------
  for (const [path, upstreamPath] of [
    ["/\\foo/_userland/status", "//foo/_userland/status"],
    ["/\\x:99999", "//x:99999"],
    ["/\\evil.example/a?b=1", "//evil.example/a?b=1"],
  ] as const) {
    row(
      `path ${JSON.stringify(path)} reaches mallory's own environment as ${upstreamPath}, as routed`,
      async () => {
        const r = await only([`${MALLORY}/code`], () => get(asMallory(), path));
        assert.equal(r.status, 200, r.body.slice(0, 200));
        assert.equal(seenBy(r).url, upstreamPath);
      },
    );
  }

  // --- Hop-by-hop headers the client names (issue 13 item 7) ------------------------------------------
  row(
    "Connection: x-user, x-forwarded-for, cookie: the environment still gets X-User: mallory, last, and no such Connection",
    async () => {
      const r = await only([`${MALLORY}/code`], () =>
        get(asMallory({ connection: "x-user, x-forwarded-for, keep-alive", "keep-alive": "timeout=5" })),
      );
      assert.equal(r.status, 200, r.body);
      const seen = own().seen.at(-1);
      assert.ok(seen);
      assert.ok(
        !/x-user|x-forwarded/i.test(String(seen.headers.connection ?? "")),
        `connection: ${String(seen.headers.connection)}`,
      );
      assert.equal(seen.headers["keep-alive"], undefined);
      assert.equal(seen.headers["x-forwarded-for"], "127.0.0.1");
    },
  );
  row(
    "WebSocket with Connection: Upgrade, X-User: the handshake upstream says only Connection: upgrade",
    async () => {
      const opened = await only([`${MALLORY}/code`], () =>
        openWebSocket(proxy.port, {
          host: CODE,
          cookie: mallory,
          origin: `https://${CODE}`,
          headers: { Connection: "Upgrade, X-User" },
        }),
      );
      assert.ok("ws" in opened, JSON.stringify(opened));
      const seen = own().seen.at(-1);
      assert.equal(seen?.headers.connection?.toLowerCase(), "upgrade");
      assert.equal((await roundTrip(opened.ws, "x")).xUser, MALLORY);
      opened.ws.close();
    },
  );

  // --- Per-student limits (issue 13 item 6): PROXY_MAX_WEBSOCKETS_PER_USER=2, PROXY_MAX_REQUESTS_PER_USER=2
  row(
    "a student's third WebSocket is refused with 429; another student's opens; closing one frees a slot",
    async () => {
      const open = (cookie: string) =>
        openWebSocket(limited.port, { host: CODE, cookie, origin: `https://${CODE}` });
      const bob = await keys.cookie(BOB);
      const first = await open(mallory);
      const second = await open(mallory);
      assert.ok("ws" in first && "ws" in second, "two WebSockets open");
      const third = await open(mallory);
      assert.ok("status" in third && third.status === 429, JSON.stringify(third));
      assert.equal((JSON.parse(third.body) as { limit: number }).limit, 2);
      const bobs = await open(bob);
      assert.ok("ws" in bobs, "another student is not limited by mallory's sockets");
      assert.equal((await roundTrip(bobs.ws, "x")).xUser, BOB);
      bobs.ws.close();
      first.ws.close();
      await eventually(
        "a slot to be free again",
        async () => {
          const again = await open(mallory);
          if (!("ws" in again)) return false;
          again.ws.close();
          return true;
        },
        5000,
      );
      second.ws.close();
    },
  );
  row(
    "a student's third request in flight is refused with 429 (page and JSON); another student's is served",
    async () => {
      const slow = () => send(limited.port, { path: "/slow?ms=1500", headers: asMallory() });
      const inFlight = [slow(), slow()];
      await eventually(
        "two requests in flight",
        () => own().seen.filter((s) => s.url === "/slow?ms=1500").length >= 2,
        5000,
      );
      const json = await send(limited.port, { headers: asMallory({ accept: "application/json" }) });
      assert.equal(json.status, 429, json.body);
      assert.equal(json.json().limit, 2);
      assert.equal(json.headers["retry-after"], "5");
      const page = await send(limited.port, { headers: asMallory({ accept: "text/html" }) });
      assert.equal(page.status, 429);
      assert.match(page.body, /Too many connections/);
      const bob = await send(limited.port, { headers: { host: CODE, cookie: await keys.cookie(BOB) } });
      assert.equal(bob.status, 200);
      assert.equal(bob.json().xUser, BOB);
      for (const r of await Promise.all(inFlight)) assert.equal(r.status, 200);
      const after = await send(limited.port, { headers: asMallory() });
      assert.equal(after.status, 200, "the slots are given back when the requests end");
    },
  );

  // --- Run the table ------------------------------------------------------------------------------
  for (const r of rows) await t.test(r.name, r.run);

  await t.test(
    "afterwards: the victim's environments never saw a request, nor mallory's any other user",
    async () => {
      for (const [key, upstream] of upstreams) {
        const user = key.split("/")[0];
        for (const seen of upstream.seen)
          assert.equal(seen.headers["x-user"], user, `${key} saw ${String(seen.headers["x-user"])}`);
      }
      assert.equal(upstreams.get(`${VICTIM}/code`)?.seen.length, 0);
      assert.equal(upstreams.get(`${VICTIM}/jupyter`)?.seen.length, 0);
      await eventually("open WebSockets to close", () => proxy.app.proxy.inFlight().websockets === 0, 5000);
      assert.equal((await fetch(`${proxy.adminUrl}/healthz`)).status, 200);
    },
  );
});
