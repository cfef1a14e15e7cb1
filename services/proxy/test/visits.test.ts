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
import { VISIT_COOKIE } from "../route/visitTracker.ts";
import {
  openWebSocket,
  proxyKubeConfig,
  roundTrip,
  send,
  startProxy,
  startUpstream,
  testKeys,
} from "./support.ts";

const CODE_HOST = "code.example.test";
const APEX = "apps.example.test";
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

  let visitCookie = "";
  /** alice's WebSocket into bob's environment, on her visit. */
  const aliceVisitSocket = async () => {
    const opened = await openWebSocket(proxy.port, {
      host: CODE_HOST,
      origin: `http://${CODE_HOST}`,
      cookie: `${await keys.cookie("alice")}; ${visitCookie}`,
    });
    assert.ok("ws" in opened, JSON.stringify(opened));
    return opened.ws;
  };

  await t.test("the console's Open on the home host goes on to the Template's host", async () => {
    const r = await get("alice", visitPath, {}, APEX);
    assert.equal(r.status, 303);
    assert.equal(r.headers.location, `http://${CODE_HOST}${visitPath}`);
  });

  await t.test(
    "alice enters bob's environment: X-User is bob's, X-Userland-Visitor names alice, forged copies are gone",
    async () => {
      // A page of the environment's own origin cannot begin a visit there (a student's script).
      const scripted = await get("alice", visitPath, { "sec-fetch-site": "same-origin" });
      assert.equal(scripted.status, 403);
      assert.equal(scripted.headers["set-cookie"], undefined);
      const r = await get("alice", visitPath);
      assert.equal(r.status, 303, r.body);
      assert.equal(r.headers.location, "/");
      const setCookie = String(r.headers["set-cookie"]);
      assert.match(setCookie, new RegExp(`^${VISIT_COOKIE}=${ns}/bob-code; Path=/; HttpOnly; SameSite=Lax`));
      visitCookie = setCookie.split(";", 1)[0] ?? "";
      const page = await get("alice", "/work", {
        cookie: `${visitCookie}; theme=dark`,
        "x-user": "mallory",
        "X-Userland-Visitor": "nobody",
      });
      assert.equal(page.status, 200, page.body);
      const seen = upstream.seen.at(-1);
      assert.equal(seen?.url, "/work");
      assert.equal(seen?.headers["x-user"], "bob");
      assert.equal(seen?.headers["x-userland-visitor"], "alice");
      assert.equal(
        seen?.headers.cookie,
        "theme=dark",
        "neither the session nor the visit cookie reaches the environment",
      );
      // A second visit cookie of another path (a script of this origin can set one) names nothing.
      const planted = await get("alice", "/x", {
        cookie: `${VISIT_COOKIE}=${ns}/other-code; ${visitCookie}`,
      });
      assert.equal(planted.status, 403);
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
    "a student's forged visitor header is stripped; a visit cookie naming their own environment changes nothing",
    async () => {
      const r = await get("bob", "/mine", {
        cookie: `${VISIT_COOKIE}=${ns}/bob-code`,
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
      const forged = await get("carol", "/secret", { cookie: `${VISIT_COOKIE}=${ns}/bob-code` });
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
      const forgedNobody = await get("carol", "/", { cookie: `${VISIT_COOKIE}=${ns}/nobody-code` });
      assert.equal(forgedNobody.status, 403);
      assert.equal(forgedNobody.body, forged.body);
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
        async () => (await get("alice", visitPath, refresh)).status === 303,
      );
      const enter = await get("alice", visitPath, refresh);
      assert.equal(enter.status, 303, enter.body);
      assert.match(String(enter.headers["set-cookie"]), new RegExp(`^${VISIT_COOKIE}=${ns}/bob-code;`));
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
    "per-user origins: Open goes to the environment's own host, which names it; a refusal there looks like a host naming nothing",
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
      assert.equal(open.status, 303, open.body);
      assert.equal(open.headers.location, "http://bob-code--code.apps.example.test/");
      assert.equal(open.headers["set-cookie"], undefined, "the host names the environment: no cookie");
      const page = await at("alice", "bob-code--code.apps.example.test", "/per-user");
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
