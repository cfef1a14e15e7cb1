/**
 * Teachers' visits (docs/decisions/0012-visits.md), against the real control plane with real RBAC:
 * the proxy in-process under the chart's proxy rights, the real user-manager in-process under its
 * own ServiceAccount (session keys shared with the proxy, as both share the auth service's), the
 * chart's userland-environment-visitor ClusterRole rendered by helm and bound to a session user.
 * No operator runs: the student's Userland is marked Ready by hand and served by a loopback stand-in.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { parseVisits, VISIT_CONSENT_ANNOTATION } from "../../../api/visits.ts";
import { renderChartRbac } from "../../../cluster/chartRbac.ts";
import { k8s } from "../../../lib/kube.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import { eventually, serviceAccountToken, testCluster } from "../../../test/support/cluster.ts";
import {
  adminRest,
  createUserland,
  markReady,
  templatesPath,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { isolatedValues } from "../../../test/chart/support.ts";
import {
  consoleConfig,
  startConsole,
  TEACHER_RULES,
  USER_PREFIX,
} from "../../user-manager/test/consoleSupport.ts";
import type { HomeView } from "../pages/homeView.ts";
import { visitCookieName } from "../route/visitTracker.ts";
import {
  openWebSocket,
  proxyKubeConfig,
  roundTrip,
  handOverVisit,
  send,
  startProxy,
  startUpstream,
  testKeys,
} from "./support.ts";

const CODE_HOST = "code.example.test";
const APEX = "apps.example.test";
/** bob's environment's own host: where a visit to it is served, and nothing of the visitor's own. */
const BOB_HOST = "bob-code--code.apps.example.test";
const VISIT_COOKIE = visitCookieName(false);
const html = { accept: "text/html" };

interface KubeEvent {
  reason: string;
  message: string;
  involvedObject: { name: string };
}

test("a teacher with the visit right opens a student's environment as the student's X-User, visibly; one without gets 403", async (t) => {
  const keys = await testKeys(t);
  const um = await startConsole(t, { config: consoleConfig(keys.publicFile) });
  const ns = um.ns;
  const cluster = await testCluster();
  const admin = await adminRest();

  // The chart's visitor ClusterRole, as helm renders it, bound to the session user alice.
  const objects = await renderChartRbac({
    helm: join(cluster.info.binDir, "helm"),
    namespace: ns,
    release: "ul",
    values: isolatedValues(ns),
  });
  const visitorRole = objects.find(
    (o) => o.kind === "ClusterRole" && o.metadata.name === `${ns}-environment-visitor`,
  );
  assert.ok(visitorRole, "the chart renders the environment-visitor ClusterRole");
  const rbac = cluster.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await admin.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", visitorRole);
  t.after(() => rbac.deleteClusterRole({ name: `${ns}-environment-visitor` }).catch(() => undefined));
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: "visit-alice" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: `${ns}-environment-visitor`,
      },
      subjects: [{ kind: "User", name: `${USER_PREFIX}alice`, apiGroup: "rbac.authorization.k8s.io" }],
    },
  });
  // carol manages the class (every verb on userlands) but may not enter environments.
  await um.appoint({ user: "carol" }, TEACHER_RULES);
  const reviewer = new KubeRest(cluster.kc);
  t.after(() => reviewer.close());
  await eventually("alice's visit right to take effect", async () => {
    const review = await reviewer.create<{ status?: { allowed?: boolean } }>(
      `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "LocalSubjectAccessReview",
        spec: {
          user: `${USER_PREFIX}alice`,
          resourceAttributes: {
            namespace: ns,
            group: "userland.dev",
            resource: "userlands",
            subresource: "visit",
            verb: "create",
          },
        },
      },
    );
    return review.status?.allowed === true;
  });

  await createUserland(ns, "bob-code", "bob", "code");
  await markReady(ns, "bob-code", { name: "bob-code-svc", port: 80 });
  const upstream = await startUpstream(t, "bob");

  await proxyKubeConfig(ns);
  const tokenFile = join(keys.dir, "proxy-token");
  await writeFile(tokenFile, await serviceAccountToken(ns, "userland-proxy"));
  const proxy = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: um.base,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
    PROXY_VISIT_QUIET: "1s",
  });
  proxy.resolver.set(ns, "bob-code-svc", upstream.url);
  await eventually(
    "the proxy's cache to hold bob's Userland",
    () => proxy.app.cluster.getUserland?.("bob-code") !== undefined,
  );

  const visitPath = `/_userland/visit?namespace=${ns}&userland=bob-code`;
  const get = async (user: string, path: string, extra: Record<string, string> = {}, host = CODE_HOST) =>
    send(proxy.port, {
      path,
      headers: {
        host,
        ...html,
        "sec-fetch-site": "same-site",
        ...extra,
        cookie: [await keys.cookie(user), extra.cookie].filter(Boolean).join("; "),
      },
    });
  const userland = async () => await admin.get<Userland>(userlandsPath(ns, "bob-code"));
  const events = async () =>
    (await admin.list<KubeEvent>(`/api/v1/namespaces/${ns}/events`)).items.filter(
      (e) => e.involvedObject.name === "bob-code",
    );
  const home = async (user: string) => {
    const r = await get(user, "/_userland/home", { accept: "application/json" }, APEX);
    assert.equal(r.status, 200, r.body);
    return r.json<HomeView>();
  };

  const tokenOf = async (user: string) => (await keys.cookie(user)).split("=").slice(1).join("=");
  /** The hand-over the console's Open page posts to the environment's own host. */
  const enter = async (user: string, origin: string | undefined, host = BOB_HOST) =>
    handOverVisit(proxy.port, host, origin, await tokenOf(user));
  /** A request on bob's host with only the visit cookie, as a browser whose session is on another host sends it. */
  const onBobHost = (path: string, cookie: string, extra: Record<string, string> = {}) =>
    send(proxy.port, { path, headers: { host: BOB_HOST, ...html, ...extra, cookie } });

  let visitCookie = "";
  /** alice's WebSocket into bob's environment, on her visit. */
  const aliceVisitSocket = async () => {
    const opened = await openWebSocket(proxy.port, {
      host: BOB_HOST,
      origin: `http://${BOB_HOST}`,
      cookie: visitCookie,
    });
    assert.ok("ws" in opened, JSON.stringify(opened));
    return opened.ws;
  };

  await t.test(
    "the console's Open hands the visit over to the environment's own host, in a form post, never in an address",
    async () => {
      for (const host of [APEX, CODE_HOST]) {
        const r = await get("alice", visitPath, {}, host);
        assert.equal(r.status, 200, r.body);
        assert.match(r.body, new RegExp(`action="http://${BOB_HOST}/_userland/visit"`));
        assert.match(
          r.body,
          /name="session" value="[\w-]+\.[\w-]+\.[\w-]+"/,
          "the session in the form's body",
        );
        assert.match(
          String(r.headers["content-security-policy"]),
          new RegExp(`form-action 'self' http://${BOB_HOST}`),
        );
        assert.equal(r.headers["referrer-policy"], "strict-origin", "the post carries its Origin, no path");
        assert.equal(r.headers["set-cookie"], undefined, "nothing of the visit on the teacher's own origins");
      }
    },
  );

  await t.test(
    "alice enters bob's environment at its own host: X-User is bob's, X-Userland-Visitor names alice, forged copies and platform cookies are gone",
    async () => {
      // Only a page of the platform hands a visit over: not another environment's host, not a script without an Origin.
      for (const origin of [`http://carl-code--code.${APEX}`, "https://evil.example", undefined]) {
        const refused = await enter("alice", origin);
        assert.equal(refused.status, 403, `${origin}: ${refused.body}`);
        assert.equal(refused.headers["set-cookie"], undefined);
      }
      const r = await enter("alice", `http://${APEX}`);
      assert.equal(r.status, 303, r.body);
      assert.equal(r.headers.location, "/");
      const setCookie = String(r.headers["set-cookie"]);
      assert.match(setCookie, new RegExp(`^${VISIT_COOKIE}=[^;]+; Path=/; HttpOnly; SameSite=Lax$`));
      visitCookie = setCookie.split(";", 1)[0] ?? "";
      const page = await onBobHost("/work", `${visitCookie}; theme=dark; userland_login_x=1`, {
        "x-user": "mallory",
        "X-Userland-Visitor": "nobody",
      });
      assert.equal(page.status, 200, page.body);
      const seen = upstream.seen.at(-1);
      assert.equal(seen?.url, "/work");
      assert.equal(seen?.headers["x-user"], "bob");
      assert.equal(seen?.headers["x-userland-visitor"], "alice");
      assert.equal(seen?.headers.cookie, "theme=dark", "no platform cookie reaches the environment");
      // With the platform's session cookie on the base domain too (the chart's cookieDomain), the same.
      const both = await onBobHost("/work2", `${await keys.cookie("alice")}; ${visitCookie}`);
      assert.equal(both.status, 200, both.body);
      assert.equal(upstream.seen.at(-1)?.headers["x-userland-visitor"], "alice");
      assert.equal(upstream.seen.at(-1)?.headers.cookie, undefined);
    },
  );

  await t.test(
    "on the visit's host a student's page reaches nothing of the teacher's: no home, no forms, no visit without the console",
    async () => {
      const before = upstream.seen.length;
      // The teacher's home (its JSON and its forms) is not served where the student's code runs.
      const homeJson = await onBobHost("/_userland/home", visitCookie, { accept: "application/json" });
      assert.equal(homeJson.status, 404);
      assert.doesNotMatch(homeJson.body, /"visits"|"environments"/);
      const form = await send(proxy.port, {
        method: "POST",
        path: "/_userland/allow-visit",
        headers: {
          host: BOB_HOST,
          origin: `http://${BOB_HOST}`,
          "content-type": "application/x-www-form-urlencoded",
          cookie: visitCookie,
        },
        body: "userland=x&visitor=y",
      });
      assert.equal(form.status, 404);
      // The teacher's platform session alone begins no visit here: only the console's hand-over does.
      const sessionOnly = await onBobHost("/", await keys.cookie("alice"));
      assert.equal(sessionOnly.status, 404);
      // Two visit cookies that disagree (a script can add one with another path) name nobody.
      const planted = await onBobHost("/x", `${VISIT_COOKIE}=${await tokenOf("carol")}; ${visitCookie}`);
      assert.equal(planted.status, 403);
      assert.equal(upstream.seen.length, before, "none of it reached bob's environment");
      // The teacher's own environment's host never reaches bob's: alice has none there.
      const own = await get("alice", "/mine", { cookie: visitCookie }, CODE_HOST);
      assert.notEqual(own.status, 200);
      assert.equal(upstream.seen.length, before);
    },
  );

  await t.test(
    "Leave is a POST from the visit's host or the platform's pages; it drops the visit cookie",
    async () => {
      const leave = (origin: string | undefined, method = "POST") =>
        send(proxy.port, {
          method,
          path: "/_userland/leave",
          headers: { host: BOB_HOST, ...html, cookie: visitCookie, ...(origin ? { origin } : {}) },
        });
      const shown = await leave(undefined, "GET");
      assert.equal(shown.status, 404);
      assert.match(shown.body, /<form method="post" action="\/_userland\/leave">/);
      assert.equal(shown.headers["set-cookie"], undefined, "a GET leaves nothing");
      const foreign = await leave("https://evil.example");
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers["set-cookie"], undefined);
      const left = await leave(`http://${BOB_HOST}`);
      assert.equal(left.status, 200, left.body);
      assert.match(String(left.headers["set-cookie"]), new RegExp(`^${VISIT_COOKIE}=; .*Max-Age=0`));
      // Entered again for the subtests below.
      visitCookie =
        String((await enter("alice", `http://${CODE_HOST}`)).headers["set-cookie"]).split(";", 1)[0] ?? "";
    },
  );

  await t.test(
    "the visit is an Event on the Userland, a durable record and a log line; bob's home shows it live",
    async () => {
      // alice keeps a WebSocket open through the checks: the visit stays live however slow the
      // machine is (with only requests, a 1 s quiet period between two reads would end it).
      const opened = { ws: await aliceVisitSocket() };
      try {
        await eventually("the VisitStarted Event", async () =>
          (await events()).some(
            (e) => e.reason === "VisitStarted" && e.message === "alice opened bob's environment",
          ),
        );
        // alice's visits so far: one, or two when more than the 1 s quiet period passed between
        // the subtests (a quiet period ends a visit by design); the latest is going on.
        const visits = await eventually("alice's latest visit to be recorded as going on", async () => {
          const all = parseVisits((await userland()).metadata.annotations?.[UserlandAnnotations.visits]);
          return all.at(-1)?.ended === undefined ? all : undefined;
        });
        assert.deepEqual([...new Set(visits.map((v) => v.visitor))], ["alice"]);
        assert.ok(um.logs.some((l) => l.msg === "visit began" && l.visitor === "alice" && l.owner === "bob"));
        await eventually("bob's home to list the visit live", async () =>
          (await home("bob")).visits.some((v) => v.live),
        );
        const shown = (await home("bob")).visits.find((v) => v.live);
        assert.equal(shown?.visitor, "alice");
        assert.equal(shown?.live, true);
        assert.equal(shown?.environment, "Test IDE", "the Template's display name");
        const page = await get("bob", "/_userland/home", {}, APEX);
        assert.match(page.body, /Teacher alice is in your Test IDE now/);
        assert.equal((page.body.match(/class="visit visit-live"/g) ?? []).length, 1, "one live visit");
      } finally {
        opened.ws.close();
      }
      // Its end (a quiet period later) is recorded before the next subtests count VisitEnded Events.
      await eventually(
        "alice's visit to end a quiet period after the socket closed",
        async () =>
          parseVisits((await userland()).metadata.annotations?.[UserlandAnnotations.visits]).at(-1)?.ended ===
          true,
      );
    },
  );

  await t.test(
    "a student's forged visitor header is stripped; a visit cookie on their Template's host changes nothing",
    async () => {
      const r = await get("bob", "/mine", {
        cookie: `${VISIT_COOKIE}=${await tokenOf("alice")}`,
        "X-Userland-Visitor": "alice",
        x_userland_visitor: "alice",
      });
      assert.equal(r.status, 200, r.body);
      const seen = upstream.seen.at(-1);
      assert.equal(seen?.url, "/mine");
      assert.equal(seen?.headers["x-user"], "bob");
      assert.equal(seen?.headers["x-userland-visitor"], undefined);
      assert.equal(Object.keys(seen?.headers ?? {}).filter((h) => h.includes("visitor")).length, 0);
    },
  );

  await t.test(
    "carol, who manages the class but lacks the visit right, gets 403 and reaches nothing",
    async () => {
      const before = upstream.seen.length;
      const r = await get("carol", visitPath);
      assert.equal(r.status, 403);
      assert.match(r.body, /userlands\/visit/);
      assert.equal(r.headers["set-cookie"], undefined);
      // Her own session handed over by hand: the visit host asks RBAC and lets her in to nothing.
      const carolCookie =
        String((await enter("carol", `http://${APEX}`)).headers["set-cookie"]).split(";", 1)[0] ?? "";
      const forged = await onBobHost("/secret", carolCookie);
      assert.equal(forged.status, 403);
      assert.equal(upstream.seen.length, before, "carol's requests never reached bob's environment");
      // On the home host too (no redirect that would tell where it is served), and an environment
      // that does not exist is refused alike: a refusal names no one and tells nothing of what exists.
      const atHome = await get("carol", visitPath, {}, APEX);
      assert.equal(atHome.status, 403);
      assert.equal(atHome.body, r.body);
      assert.doesNotMatch(r.body, /bob/);
      const nobody = await get("carol", `/_userland/visit?namespace=${ns}&userland=nobody-code`);
      assert.equal(nobody.status, 403);
      assert.equal(nobody.body, r.body);
      const forgedNobody = await send(proxy.port, {
        path: "/",
        headers: { host: `nobody-code--code.${APEX}`, ...html, cookie: carolCookie },
      });
      assert.equal(forgedNobody.status, 403);
      const visits = parseVisits((await userland()).metadata.annotations?.[UserlandAnnotations.visits]);
      assert.deepEqual([...new Set(visits.map((v) => v.visitor))], ["alice"], "no visit of carol's recorded");
    },
  );

  await t.test(
    "an open WebSocket keeps the visit going past the quiet period; it ends a quiet period after it closes",
    async () => {
      const opened = { ws: await aliceVisitSocket() };
      assert.equal((await roundTrip(opened.ws, "hi")).xUser, "bob");
      const socketAt = Date.now();
      const latest = async () =>
        parseVisits((await userland()).metadata.annotations?.[UserlandAnnotations.visits]).at(-1);
      const endedEvents = async () => (await events()).filter((e) => e.reason === "VisitEnded").length;
      // Two quiet periods with only the socket open: still the same, live visit.
      await eventually("two quiet periods to pass with the socket open", async () => {
        const v = await latest();
        return Date.parse(v?.to ?? "") - socketAt >= 2000 && Date.parse(v?.from ?? "") <= socketAt;
      });
      const during = await latest();
      assert.equal(during?.ended, undefined, "no end while the WebSocket is open");
      const endedBefore = await endedEvents();
      const closedAt = Date.now();
      opened.ws.close();
      await eventually("the VisitEnded Event", async () => (await endedEvents()) > endedBefore);
      assert.ok(Date.now() - closedAt >= 1000, "not before a quiet period passed");
      const ended = await latest();
      assert.equal(ended?.from, during?.from, "one visit from before the socket to after it");
      assert.equal(ended?.ended, true);
      assert.ok(um.logs.some((l) => l.msg === "visit ended" && l.visitor === "alice"));
      // The proxy's cache follows the Userland a moment later.
      await eventually(
        "bob's home to show the visit over",
        async () => (await home("bob")).visits[0]?.live === false,
      );
      const page = await get("bob", "/_userland/home", {}, APEX);
      assert.match(
        page.body,
        /Teacher alice opened your Test IDE on\s+<time[^>]*>\d+ \w+, \d\d:\d\d UTC<\/time>, for 1 minute\./,
      );
    },
  );

  await t.test(
    "a Template that asks first: the teacher waits, the student's home shows the request, Allow lets the teacher in",
    async (st) => {
      await admin.patch(templatesPath(ns, "code"), {
        metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: "required" } },
      });
      // At this subtest's end, while the namespace is still there.
      st.after(() =>
        admin.patch(templatesPath(ns, "code"), {
          metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: null } },
        }),
      );
      const before = upstream.seen.length;
      const waiting = await get("alice", visitPath);
      assert.equal(waiting.status, 202, waiting.body);
      assert.match(waiting.body, /Waiting for bob to allow your visit/);
      assert.match(waiting.body, /http-equiv="refresh"/);
      assert.equal(waiting.headers["set-cookie"], undefined);
      assert.equal(upstream.seen.length, before, "nothing reached the environment");
      await eventually("bob's home to show the request", async () =>
        (await home("bob")).visitRequests.some((r) => r.name === "bob-code" && r.visitor === "alice"),
      );
      assert.match(
        (await get("bob", "/_userland/home", {}, APEX)).body,
        /Teacher alice asks to open your Test IDE/,
      );
      const allow = async (user: string, headers: Record<string, string>) =>
        send(proxy.port, {
          method: "POST",
          path: "/_userland/allow-visit",
          headers: {
            host: APEX,
            cookie: await keys.cookie(user),
            "content-type": "application/x-www-form-urlencoded",
            ...html,
            ...headers,
          },
          body: new URLSearchParams({
            userland: "bob-code",
            visitor: "alice",
            rd: "/_userland/home",
          }).toString(),
        });
      const sameOrigin = { "sec-fetch-site": "same-origin", origin: "null" };
      assert.equal(
        (await allow("bob", { "sec-fetch-site": "cross-site", origin: "https://evil.example" })).status,
        403,
      );
      assert.equal((await allow("carol", sameOrigin)).status, 404, "only the student allows");
      assert.equal((await get("alice", visitPath)).status, 202, "still waiting");
      // The waiting page's own refresh is a same-origin navigation: it waits too, it is not refused.
      const refresh = { "sec-fetch-site": "same-origin" };
      assert.equal((await get("alice", visitPath, refresh)).status, 202);
      const allowed = await allow("bob", sameOrigin);
      assert.equal(allowed.status, 303, allowed.body);
      assert.equal(allowed.headers.location, "/_userland/home");
      // Once the proxy's cache has the Allow, the refresh goes on into the environment.
      await eventually(
        "the waiting page's refresh to go on",
        async () => (await get("alice", visitPath, refresh)).status === 200,
      );
      const handOver = await get("alice", visitPath, refresh);
      assert.equal(handOver.status, 200, handOver.body);
      assert.match(handOver.body, new RegExp(`action="http://${BOB_HOST}/_userland/visit"`));
      await eventually("the VisitRequested and VisitAllowed Events", async () => {
        const reasons = (await events()).map((e) => e.reason);
        return reasons.includes("VisitRequested") && reasons.includes("VisitAllowed");
      });
      await eventually(
        "bob's home to drop the answered request",
        async () => (await home("bob")).visitRequests.length === 0,
      );
    },
  );

  await t.test(
    "per-user origins: the same hand-over to the environment's own host; without it the host looks like one naming nothing",
    async () => {
      const perUser = await startProxy(t, ns, keys, {
        PROXY_USER_MANAGER_URL: um.base,
        PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
        PROXY_VISIT_QUIET: "1s",
        PROXY_ORIGINS: "perUser",
      });
      perUser.resolver.set(ns, "bob-code-svc", upstream.url);
      await eventually(
        "the per-user proxy's cache to hold bob's Userland",
        () => perUser.app.cluster.getUserland?.("bob-code") !== undefined,
      );
      const at = async (user: string, host: string, path: string) =>
        send(perUser.port, { path, headers: { host, ...html, cookie: await keys.cookie(user) } });
      const open = await at("alice", APEX, visitPath);
      assert.equal(open.status, 200, open.body);
      assert.match(open.body, new RegExp(`action="http://${BOB_HOST}/_userland/visit"`));
      const entered = await handOverVisit(perUser.port, BOB_HOST, `http://${APEX}`, await tokenOf("alice"));
      assert.equal(entered.status, 303, entered.body);
      const cookie = String(entered.headers["set-cookie"]).split(";", 1)[0] ?? "";
      const page = await send(perUser.port, {
        path: "/per-user",
        headers: { host: BOB_HOST, ...html, cookie },
      });
      assert.equal(page.status, 200, page.body);
      const seen = upstream.seen.at(-1);
      assert.equal(seen?.url, "/per-user");
      assert.equal(seen?.headers["x-user"], "bob");
      assert.equal(seen?.headers["x-userland-visitor"], "alice");
      const carol = await at("carol", "bob-code--code.apps.example.test", "/");
      const nothing = await at("carol", "nobody-code--code.apps.example.test", "/");
      assert.equal(carol.status, 404);
      assert.equal(nothing.status, 404);
      assert.equal(carol.body.replace("bob-code--code", "X"), nothing.body.replace("nobody-code--code", "X"));
    },
  );
});
