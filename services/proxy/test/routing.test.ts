/**
 * The proxy against the real control plane, the real operator and real sessions: two users with
 * two Templates each, every one reaching only their own loopback upstream, whatever they send.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { UserlandAnnotations } from "../../../api/v1alpha1/index.ts";
import { eventually, testNamespace } from "../../../test/support/cluster.ts";
import { startOperator } from "../../../test/support/operator.ts";
import {
  createTemplate,
  createUserland,
  getUserland,
  simpleTemplateSpec,
  waitForPhase,
} from "../../../test/support/resources.ts";
import {
  forgeToken,
  openWebSocket,
  roundTrip,
  send,
  startProxy,
  startUpstream,
  testKeys,
  type Response,
  type Upstream,
  SPOOFED_IDENTITY_HEADERS,
} from "./support.ts";

// Two identities that a case-folding or slugging scheme would merge.
const USERS = ["Koba1t", "koba1t"] as const;
const TEMPLATES = ["code", "jupyter"] as const;
const HOSTS: Record<(typeof TEMPLATES)[number], string> = {
  code: "code.example.test",
  jupyter: "jupyter.example.test",
};

test("two users × two Templates: each reaches only their own environment; spoofing and cross-user tricks fail", async (t) => {
  const ns = await testNamespace(t, "proxy");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1", { displayName: "VS Code" }));
  await createTemplate(
    ns,
    "jupyter",
    simpleTemplateSpec("registry.invalid/jupyter:1", { displayName: "Jupyter" }),
  );

  const upstreams = new Map<string, Upstream>();
  const names = new Map<string, string>();
  for (const [i, user] of USERS.entries()) {
    for (const template of TEMPLATES) {
      const name = `${template}-u${i}`;
      names.set(`${user}/${template}`, name);
      upstreams.set(`${user}/${template}`, await startUpstream(t, `${user}/${template}`));
      await createUserland(ns, name, user, template);
    }
  }
  const proxy = await startProxy(t, ns, keys, { PROXY_DEFAULT_TEMPLATE: "code" });
  for (const [key, name] of names) {
    const ready = await waitForPhase(ns, name, "Ready");
    const service = ready.status?.service;
    assert.ok(service, "a Ready Userland names its Service");
    proxy.resolver.set(ns, service.name, upstreams.get(key)?.url ?? "");
  }
  const cookies = new Map<string, string>();
  for (const user of USERS) cookies.set(user, await keys.cookie(user));
  const cookieOf = (user: string) => cookies.get(user) ?? "";
  const get = (host: string, user: string | undefined, extra: Record<string, string> = {}, path = "/") =>
    send(proxy.port, { path, headers: { host, ...(user ? { cookie: cookieOf(user) } : {}), ...extra } });
  const seenBy = (r: Response) =>
    r.json<{ upstream: string; xUser: string; url: string; headers: Record<string, string> }>();

  await t.test("HTTP: every user and Template reaches its own upstream with X-User", async () => {
    for (const user of USERS) {
      for (const template of TEMPLATES) {
        const r = await get(HOSTS[template], user, {}, "/some/path?q=1");
        assert.equal(r.status, 200, r.body);
        const body = seenBy(r);
        assert.equal(body.upstream, `${user}/${template}`);
        assert.equal(body.xUser, user);
        assert.equal(body.url, "/some/path?q=1", "the path reaches the application unmodified");
        assert.equal(body.headers.host, HOSTS[template], "the application sees the Host the browser used");
      }
    }
    // <template>.<base domain> and the default Template route too.
    assert.equal(seenBy(await get("jupyter.apps.example.test", "koba1t")).upstream, "koba1t/jupyter");
    assert.equal(seenBy(await get("other.example.test:8443", "Koba1t")).upstream, "Koba1t/code");
  });

  await t.test("WebSocket: every user and Template reaches its own upstream with X-User", async () => {
    for (const user of USERS) {
      for (const template of TEMPLATES) {
        const opened = await openWebSocket(proxy.port, {
          host: HOSTS[template],
          cookie: cookieOf(user),
          origin: `https://${HOSTS[template]}`,
        });
        assert.ok("ws" in opened, `WebSocket refused: ${JSON.stringify(opened)}`);
        const echo = await roundTrip(opened.ws, `hello from ${user}`);
        assert.deepEqual(echo, { upstream: `${user}/${template}`, xUser: user, echo: `hello from ${user}` });
        opened.ws.close();
      }
    }
    await eventually("WebSockets to be closed", () => proxy.app.proxy.inFlight().websockets === 0, 5000);
  });

  await t.test("identity headers in every spelling are stripped and replaced", async () => {
    const spoofed = SPOOFED_IDENTITY_HEADERS;
    const raw: string[] = ["Host", HOSTS.code, "Cookie", cookieOf("koba1t")];
    for (const name of spoofed) raw.push(name, "Koba1t");
    raw.push("X-User", "Koba1t", "X-User", "admin"); // duplicates
    const r = await send(proxy.port, { path: "/", headers: raw });
    assert.equal(r.status, 200, r.body);
    const body = seenBy(r);
    assert.equal(body.upstream, "koba1t/code", "spoofed headers never change the upstream");
    assert.equal(body.xUser, "koba1t");
    const upstream = upstreams.get("koba1t/code");
    const last = upstream?.seen.at(-1);
    assert.ok(last);
    const identityLike = (n: string) => /user|email|remote|auth/i.test(n);
    const sent = last.rawHeaders.filter((_, i) => i % 2 === 0).filter(identityLike);
    assert.deepEqual(sent, ["x-user"], `only the proxy's own X-User arrives, got ${sent.join(", ")}`);
    assert.deepEqual(
      last.rawHeaders.filter((_, i) => i % 2 === 1 && last.rawHeaders[i - 1] === "x-user"),
      ["koba1t"],
      "exactly one X-User value",
    );

    // The same over a WebSocket handshake.
    const opened = await openWebSocket(proxy.port, {
      host: HOSTS.jupyter,
      cookie: cookieOf("Koba1t"),
      headers: {
        "X-User": "koba1t",
        X_User: "koba1t",
        "X-Forwarded-User": "koba1t",
        "x-auth-request-user": "koba1t",
      },
    });
    assert.ok("ws" in opened);
    assert.deepEqual(await roundTrip(opened.ws, "x"), {
      upstream: "Koba1t/jupyter",
      xUser: "Koba1t",
      echo: "x",
    });
    opened.ws.close();
    const handshake = upstreams.get("Koba1t/jupyter")?.seen.at(-1);
    assert.equal(handshake?.method, "UPGRADE");
    assert.deepEqual(handshake?.rawHeaders.filter((_, i) => i % 2 === 0).filter(identityLike), ["x-user"]);
  });

  await t.test("X-Forwarded-* from an untrusted client are replaced", async () => {
    const r = await get(HOSTS.code, "Koba1t", {
      "X-Forwarded-For": "10.9.9.9",
      "X-Forwarded-Host": "jupyter.example.test",
      "X-Forwarded-Proto": "https",
      Forwarded: "for=10.9.9.9;host=jupyter.example.test",
      "X-Real-IP": "10.9.9.9",
    });
    const body = seenBy(r);
    assert.equal(
      body.upstream,
      "Koba1t/code",
      "X-Forwarded-Host from an untrusted client does not pick the Template",
    );
    assert.equal(body.headers["x-forwarded-for"], "127.0.0.1");
    assert.equal(body.headers["x-forwarded-proto"], "http");
    assert.equal(body.headers["x-forwarded-host"], HOSTS.code);
    assert.equal(body.headers.forwarded, undefined);
    assert.equal(body.headers["x-real-ip"], undefined);
  });

  await t.test(
    "the session cookie is not forwarded; other cookies are; environments cannot set it",
    async () => {
      const session = cookieOf("koba1t");
      const r = await get(HOSTS.code, undefined, {
        cookie: `theme=dark; ${session}; jupyter-xsrf=abc; USERLAND_SESSION=x`,
      });
      assert.equal(r.status, 200);
      assert.equal(seenBy(r).headers.cookie, "theme=dark; jupyter-xsrf=abc");
      const onlySession = await get(HOSTS.code, "koba1t");
      assert.equal(
        seenBy(onlySession).headers.cookie,
        undefined,
        "no Cookie header when only the session was sent",
      );
      assert.deepEqual(
        r.headers["set-cookie"],
        ["app=1; Path=/"],
        "an environment's Set-Cookie for the session cookie is dropped",
      );
    },
  );

  await t.test(
    "environments cannot set a platform cookie in a WebSocket's 101 nor in a refused upgrade (issue 41 item 1)",
    async () => {
      const opened = await openWebSocket(proxy.port, {
        host: HOSTS.code,
        cookie: cookieOf("koba1t"),
        origin: `https://${HOSTS.code}`,
      });
      assert.ok("ws" in opened, `WebSocket refused: ${JSON.stringify(opened)}`);
      opened.ws.close();
      assert.deepEqual(
        opened.headers["set-cookie"],
        ["app=1; Path=/"],
        "the 101 keeps only the app's cookie",
      );
      const refused = await openWebSocket(proxy.port, {
        host: HOSTS.code,
        cookie: cookieOf("koba1t"),
        origin: `https://${HOSTS.code}`,
        path: "/refused-socket",
      });
      assert.ok("status" in refused, "the environment refused this upgrade");
      assert.equal(refused.status, 403);
      assert.deepEqual(
        refused.headers["set-cookie"],
        ["app=1; Path=/"],
        "the refusal keeps only the app's cookie",
      );
    },
  );

  await t.test(
    "forged, tampered, expired and foreign sessions: browsers go to login, others get 401",
    async () => {
      const valid = (await keys.signer.sign("koba1t", 3600)).split(".");
      const [h = "", p = "", s = ""] = valid;
      const payload = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
      const otherKeys = await testKeys(t);
      const bad = {
        tamperedPayload: `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: "Koba1t" })).toString("base64url")}.${s}`,
        tamperedSignature: `${h}.${p}.${s.slice(0, -4)}AAAA`,
        otherKey: await otherKeys.signer.sign("Koba1t", 3600),
        expired: await forgeToken(keys.keys, { sub: "Koba1t", exp: Math.floor(Date.now() / 1000) - 60 }),
        wrongAudience: await forgeToken(keys.keys, {
          sub: "Koba1t",
          exp: Math.floor(Date.now() / 1000) + 600,
          aud: "someone-else",
        }),
        algNone: `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${p}.`,
        garbage: "not-a-token",
      };
      // The forging helper itself makes tokens the proxy accepts when nothing is wrong with them.
      const control = await forgeToken(keys.keys, {
        sub: "Koba1t",
        exp: Math.floor(Date.now() / 1000) + 600,
      });
      assert.equal((await get(HOSTS.code, undefined, { cookie: `userland_session=${control}` })).status, 200);
      for (const [what, token] of Object.entries(bad)) {
        const browser = await get(
          HOSTS.code,
          undefined,
          { cookie: `userland_session=${token}`, accept: "text/html,application/xhtml+xml" },
          "/edit?file=a.py",
        );
        assert.equal(browser.status, 302, `${what}: browsers are sent to log in`);
        const location = new URL(browser.headers.location ?? "");
        assert.equal(location.origin + location.pathname, "https://auth.example.test/login");
        assert.equal(
          location.searchParams.get("rd"),
          "http://code.example.test/edit?file=a.py",
          "login returns to the same URL",
        );
        const api = await get(HOSTS.code, undefined, {
          cookie: `userland_session=${token}`,
          accept: "application/json",
        });
        assert.equal(api.status, 401, `${what}: API clients get 401`);
        const ws = await openWebSocket(proxy.port, { host: HOSTS.code, cookie: `userland_session=${token}` });
        assert.ok("status" in ws && ws.status === 401, `${what}: WebSockets get 401`);
      }
      const none = await get(HOSTS.code, undefined, { accept: "text/html" });
      assert.equal(none.status, 302);
      for (const upstream of upstreams.values()) {
        assert.ok(
          upstream.seen.every((s) => s.headers["x-user"] === s.upstream.split("/")[0]),
          `${upstream.name} only ever saw its own user`,
        );
      }
    },
  );

  await t.test("cross-user attempts never reach another user's upstream", async () => {
    const before = new Map([...upstreams].map(([k, u]) => [k, u.seen.length]));
    // Another Template's host: the same user's environment for that Template.
    assert.equal(seenBy(await get(HOSTS.jupyter, "koba1t")).upstream, "koba1t/jupyter");
    // Path tricks stay paths of the same upstream.
    for (const path of [
      "/../Koba1t/",
      "/%2e%2e/%2e%2e/",
      "//code.example.test/",
      "/..%2f..%2f",
      "/_userland/../x",
    ]) {
      const r = await get(HOSTS.code, "koba1t", {}, path);
      assert.equal(r.status, 200, `${path}: ${r.body}`);
      assert.equal(seenBy(r).upstream, "koba1t/code", path);
    }
    // Absolute-form targets naming another host are refused outright.
    const absolute = await get(HOSTS.code, "koba1t", {}, "http://jupyter.example.test/");
    assert.equal(absolute.status, 400);
    // A Host of a Template the user has no environment for: the "no environment" page, no upstream.
    const unknownTemplate = await get("rstudio.apps.example.test", "Koba1t", { accept: "text/html" });
    assert.equal(unknownTemplate.status, 404);
    assert.match(unknownTemplate.body, /You have no rstudio environment/);
    const delta = [...upstreams].filter(([k, u]) => u.seen.length !== before.get(k)).map(([k]) => k);
    assert.deepEqual(
      delta.sort(),
      ["koba1t/code", "koba1t/jupyter"],
      "only koba1t's own upstreams were reached",
    );
    for (const [key, upstream] of upstreams) {
      const user = key.split("/")[0];
      assert.ok(
        upstream.seen.every((s) => s.headers["x-user"] === user),
        `${key} only ever saw ${user}`,
      );
    }
  });

  await t.test("a WebSocket from a foreign Origin is refused with 403", async () => {
    const foreign = await openWebSocket(proxy.port, {
      host: HOSTS.code,
      cookie: cookieOf("koba1t"),
      origin: "https://evil.example",
    });
    assert.ok("status" in foreign && foreign.status === 403, JSON.stringify(foreign));
    const sibling = await openWebSocket(proxy.port, {
      host: HOSTS.code,
      cookie: cookieOf("koba1t"),
      origin: `https://${HOSTS.jupyter}`,
    });
    assert.ok("status" in sibling && sibling.status === 403, "another Template's host is another origin");
    const own = await openWebSocket(proxy.port, {
      host: HOSTS.code,
      cookie: cookieOf("koba1t"),
      origin: "https://code.example.test",
    });
    assert.ok("ws" in own);
    own.ws.close();
  });

  await t.test("the proxy's own endpoints live under /_userland/ and are never forwarded", async () => {
    const status = await get(HOSTS.jupyter, "Koba1t", { accept: "application/json" }, "/_userland/status");
    assert.equal(status.status, 200);
    assert.deepEqual(status.json(), {
      state: "ready",
      template: "jupyter",
      user: "Koba1t",
      phase: "Ready",
      message: status.json().message,
      progress: status.json().progress,
      stalled: false,
      detail: "",
    });
    assert.match(String(status.json().progress), /^placed on a node \d+ s, .*answering \d+ s$/);
    const other = await get(HOSTS.jupyter, "Koba1t", {}, "/_userland/anything");
    assert.equal(other.status, 404);
    const admin = await send(proxy.port, {
      path: "/metrics",
      headers: { host: HOSTS.code, cookie: cookieOf("Koba1t") },
    });
    assert.doesNotMatch(admin.body, /userland_proxy_requests_total/, "metrics are not on the student port");
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /userland_proxy_requests_total\{kind="http",status_class="2xx"\} \d+/);
    assert.match(metrics, /userland_proxy_route_outcomes_total\{kind="http",outcome="no_session"\} \d+/);
    assert.match(metrics, /userland_proxy_upstream_response_seconds_bucket/);
    assert.equal((await fetch(`${proxy.adminUrl}/readyz`)).status, 200);
    assert.equal((await fetch(`${proxy.adminUrl}/healthz`)).status, 200);
  });

  await t.test("activity is published as the last-activity annotation", async () => {
    const before = Date.now() - 1000;
    await get(HOSTS.code, "Koba1t");
    const name = names.get("Koba1t/code") ?? "";
    const stamp = await eventually(
      "the last-activity annotation",
      async () => {
        const value = (await getUserland(ns, name)).metadata.annotations?.[UserlandAnnotations.lastActivity];
        return value && Date.parse(value) >= before ? value : undefined;
      },
      10_000,
    );
    assert.match(stamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, "RFC 3339");
    // WebSocket traffic counts too.
    const wsName = names.get("koba1t/jupyter") ?? "";
    const opened = await openWebSocket(proxy.port, { host: HOSTS.jupyter, cookie: cookieOf("koba1t") });
    assert.ok("ws" in opened);
    // Past the handshake's own activity (whole seconds), so only frames can explain a later stamp.
    await new Promise((r) => setTimeout(r, 2000));
    const framesFrom = Math.floor(Date.now() / 1000) * 1000;
    await roundTrip(opened.ws, "keep me alive");
    await eventually(
      "activity from WebSocket traffic",
      async () => {
        const value = (await getUserland(ns, wsName)).metadata.annotations?.[
          UserlandAnnotations.lastActivity
        ];
        return value !== undefined && Date.parse(value) >= framesFrom;
      },
      10_000,
    );
    opened.ws.close();
  });
});
