/**
 * Shared lab computers (issue 13 item 1), at the HTTP level: the real proxy (in-process, under its
 * own Role), the real operator and control plane, real session keys. The browser-level attack is
 * test/e2e/sharedComputer.test.ts; these rows pin each rule the proxy applies for it:
 *
 * - cookies carrying valid sessions of different users are no session, and the browser is told to
 *   drop its cookies (the first valid one used to win);
 * - on a shared origin a service worker's script (`Service-Worker: script`) is refused unless the
 *   Template opts in, and `Service-Worker-Allowed` from environments is dropped;
 * - with PROXY_ORIGINS=perUser each environment has its own host, which only its owner reaches;
 * - `/_userland/signed-out` clears the origin and walks every Template host, never off-site.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SERVICE_WORKERS_ANNOTATION, templatesPath } from "../../api/v1alpha1/index.ts";
import {
  send,
  startProxy,
  startUpstream,
  testKeys,
  type Upstream,
} from "../../services/proxy/test/support.ts";
import { testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  simpleTemplateSpec,
  waitForPhase,
} from "../support/resources.ts";

const CODE = "code.apps.example.test";
const NOTEBOOK = "notebook.apps.example.test";

test("shared lab computers: conflicting sessions, service workers, per-user hosts, the clearing chain", async (t) => {
  const ns = await testNamespace(t, "sec-origins");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1"));
  await createTemplate(ns, "notebook", simpleTemplateSpec("registry.invalid/notebook:1"));
  // The notebook Template opts in to service workers (read from the proxy's Template cache).
  await (
    await adminRest()
  ).patch(`${templatesPath(ns)}/notebook`, {
    metadata: { annotations: { [SERVICE_WORKERS_ANNOTATION]: "allowed" } },
  });

  const upstreams = new Map<string, Upstream>();
  for (const [user, template] of [
    ["mallory", "code"],
    ["victim", "code"],
    ["mallory", "notebook"],
  ] as const) {
    const name = `${template}-${user}`;
    upstreams.set(name, await startUpstream(t, name));
    await createUserland(ns, name, user, template);
  }
  const shared = await startProxy(t, ns, keys);
  const perUser = await startProxy(t, ns, keys, { PROXY_ORIGINS: "perUser" });
  for (const name of upstreams.keys()) {
    const service = (await waitForPhase(ns, name, "Ready")).status?.service;
    assert.ok(service, `${name} names its Service`);
    shared.resolver.set(ns, service.name, upstreams.get(name)?.url ?? "");
    perUser.resolver.set(ns, service.name, upstreams.get(name)?.url ?? "");
  }
  const mallory = (await keys.cookie("mallory")).slice("userland_session=".length);
  const victim = (await keys.cookie("victim")).slice("userland_session=".length);
  const seen = (name: string) => upstreams.get(name)?.seen.length ?? 0;
  const before = () => new Map([...upstreams.keys()].map((k) => [k, seen(k)]));
  const reachedNone = (counts: Map<string, number>) => {
    for (const [k, n] of counts) assert.equal(seen(k), n, `${k} was not reached`);
  };

  await t.test(
    "a planted path cookie with mallory's session before the victim's own: signed out (302 to login, Clear-Site-Data cookies), no environment reached",
    async () => {
      const counts = before();
      const cookie = `userland_session=${mallory}; userland_session=${victim}`;
      const page = await send(shared.port, {
        path: "/somewhere",
        headers: { host: CODE, cookie, accept: "text/html" },
      });
      assert.equal(page.status, 302);
      assert.match(page.headers.location ?? "", /^https:\/\/auth\.example\.test\/login\?rd=/);
      assert.equal(page.headers["clear-site-data"], '"cookies"');
      const api = await send(shared.port, { path: "/somewhere", headers: { host: CODE, cookie } });
      assert.equal(api.status, 401);
      assert.equal(api.headers["clear-site-data"], '"cookies"');
      reachedNone(counts);
    },
  );
  await t.test("the same conflict on a per-user host: signed out too", async () => {
    const counts = before();
    const r = await send(perUser.port, {
      headers: {
        host: "code-victim--code.apps.example.test",
        cookie: `userland_session=${mallory}; userland_session=${victim}`,
      },
    });
    assert.equal(r.status, 401);
    reachedNone(counts);
  });
  await t.test("four session cookies (the victim's pushed past the ones checked): signed out", async () => {
    const counts = before();
    const cookie = [mallory, mallory, mallory, victim].map((v) => `userland_session=${v}`).join("; ");
    const r = await send(shared.port, { headers: { host: CODE, cookie } });
    assert.equal(r.status, 401);
    reachedNone(counts);
  });
  await t.test("two sessions of the same user, and a forged one beside a valid one: that user", async () => {
    const again = (await keys.cookie("victim")).slice("userland_session=".length);
    const r = await send(shared.port, {
      headers: {
        host: CODE,
        cookie: `userland_session=x.y.z; userland_session=${victim}; userland_session=${again}`,
      },
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json().xUser, "victim");
  });

  await t.test("Service-Worker: script on a shared origin: 403, the environment is not asked", async () => {
    const counts = before();
    const r = await send(shared.port, {
      path: "/sw.js",
      headers: { host: CODE, cookie: `userland_session=${mallory}`, "service-worker": "script" },
    });
    assert.equal(r.status, 403);
    assert.match(r.body, /Service workers are not allowed/);
    reachedNone(counts);
  });
  await t.test("Service-Worker-Allowed from an environment on a shared origin is dropped", async () => {
    const r = await send(shared.port, {
      path: "/sw.js",
      headers: { host: CODE, cookie: `userland_session=${mallory}` },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers["service-worker-allowed"], undefined);
  });
  await t.test(
    "a Template with userland.dev/service-workers: allowed gets its service worker and header",
    async () => {
      const r = await send(shared.port, {
        path: "/sw.js",
        headers: { host: NOTEBOOK, cookie: `userland_session=${mallory}`, "service-worker": "script" },
      });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers["service-worker-allowed"], "/");
    },
  );
  await t.test("per-user origins: service workers are the student's own business", async () => {
    const r = await send(perUser.port, {
      path: "/sw.js",
      headers: {
        host: "code-mallory--code.apps.example.test",
        cookie: `userland_session=${mallory}`,
        "service-worker": "script",
      },
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json().upstream, "code-mallory");
    assert.equal(r.headers["service-worker-allowed"], "/");
  });

  await t.test("per-user origins: the owner reaches their environment at its own host", async () => {
    const r = await send(perUser.port, {
      path: "/lab?x=1",
      headers: { host: "code-mallory--code.apps.example.test:8443", cookie: `userland_session=${mallory}` },
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json().upstream, "code-mallory");
    assert.equal(r.json().xUser, "mallory");
    assert.equal(r.json().url, "/lab?x=1");
  });
  for (const [what, host] of [
    ["the victim's environment host", "code-victim--code.apps.example.test"],
    ["a host naming the victim's Userland with another Template", "code-victim--notebook.apps.example.test"],
    ["a host naming no Userland", "code-nobody--code.apps.example.test"],
    ["the victim's host with a trailing dot and upper case", "CODE-VICTIM--CODE.apps.example.test."],
  ] as const) {
    await t.test(`per-user origins: mallory at ${what} gets the same 404, nothing is forwarded`, async () => {
      const counts = before();
      const r = await send(perUser.port, {
        headers: { host, cookie: `userland_session=${mallory}`, accept: "application/json" },
      });
      assert.equal(r.status, 404, r.body);
      assert.equal(r.json().state, "unknown-host");
      reachedNone(counts);
    });
  }
  await t.test(
    "per-user origins: without a session a per-user host asks to sign in, naming nothing",
    async () => {
      const r = await send(perUser.port, { headers: { host: "code-victim--code.apps.example.test" } });
      assert.equal(r.status, 401);
    },
  );
  await t.test(
    "per-user origins: the Template's host sends each student to their own host, serving nothing itself",
    async () => {
      const counts = before();
      const r = await send(perUser.port, {
        path: "/tree?a=b",
        headers: { host: `${CODE}:8443`, cookie: `userland_session=${victim}`, accept: "text/html" },
      });
      assert.equal(r.status, 302);
      assert.equal(r.headers.location, "http://code-victim--code.apps.example.test:8443/tree?a=b");
      reachedNone(counts);
    },
  );

  await t.test(
    "/_userland/signed-out clears the origin and walks the Template hosts back to the auth service",
    async () => {
      const rd = "https://auth.example.test/signed-out?rd=%2F";
      const first = await send(shared.port, {
        path: `/_userland/signed-out?rd=${encodeURIComponent(rd)}`,
        headers: { host: "code.example.test", "sec-fetch-site": "same-site" },
      });
      assert.equal(first.status, 200);
      assert.equal(first.headers["clear-site-data"], '"cache", "cookies", "storage"');
      // Sorted: code.apps…, code.example.test, jupyter.example.test, notebook.apps… (+ other tests' Templates).
      const next = /url=([^"]+)"/.exec(first.body)?.[1]?.replaceAll("&amp;", "&") ?? "";
      assert.match(next, /^http:\/\/jupyter\.example\.test\/_userland\/signed-out\?rd=/);
      let hop = new URL(next);
      const visited: string[] = [];
      for (let i = 0; i < 50 && hop.pathname === "/_userland/signed-out"; i++) {
        visited.push(hop.host);
        const r = await send(shared.port, {
          path: `${hop.pathname}${hop.search}`,
          headers: { host: hop.host },
        });
        assert.equal(r.headers["clear-site-data"], '"cache", "cookies", "storage"');
        hop = new URL(/url=([^"]+)"/.exec(r.body)?.[1]?.replaceAll("&amp;", "&") ?? "");
      }
      assert.ok(visited.includes(NOTEBOOK), `visited ${visited.join(", ")}`);
      assert.equal(hop.href, rd, "the chain ends at the auth service");
    },
  );
  await t.test(
    "/_userland/signed-out never sends the browser off-site, nor starts from another site",
    async () => {
      const r = await send(shared.port, {
        path: `/_userland/signed-out?rd=${encodeURIComponent("https://evil.example/x")}`,
        headers: { host: "jupyter.example.test" },
      });
      const next = /url=([^"]+)"/.exec(r.body)?.[1] ?? "";
      assert.ok(!next.includes("evil.example"), next);
      const cross = await send(shared.port, {
        path: "/_userland/signed-out",
        headers: { host: CODE, "sec-fetch-site": "cross-site" },
      });
      assert.equal(cross.status, 403);
      assert.equal(cross.headers["clear-site-data"], undefined);
    },
  );
  await t.test(
    "/_userland/signed-out only as a top-level navigation: a same-site <img>, fetch or frame is refused (issue 29 item 6)",
    async () => {
      const subresources: Record<string, string>[] = [
        { "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" },
        { "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" },
        { "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe" },
      ];
      for (const fetchMetadata of subresources) {
        const r = await send(shared.port, {
          path: "/_userland/signed-out",
          headers: { host: CODE, "sec-fetch-site": "same-site", ...fetchMetadata },
        });
        assert.equal(r.status, 403, JSON.stringify(fetchMetadata));
        assert.equal(r.headers["clear-site-data"], undefined);
      }
      const navigation = await send(shared.port, {
        path: "/_userland/signed-out",
        headers: {
          host: CODE,
          "sec-fetch-site": "same-site",
          "sec-fetch-mode": "navigate",
          "sec-fetch-dest": "document",
        },
      });
      assert.equal(navigation.status, 200);
      assert.equal(navigation.headers["clear-site-data"], '"cache", "cookies", "storage"');
    },
  );
});
