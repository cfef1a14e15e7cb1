/**
 * The proxy during an exam (docs/decisions/0013-exams.md), against the real control plane with
 * real RBAC and the real user-manager, as visits.test.ts: the test stands in for the operator by
 * writing the exam's marks on the Userlands. Inside the exam only the student (signed in since its
 * start) and its proctors (who also hold the visit right) reach the environment; once the marks
 * are gone, the same requests pass again.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { examHoldValue, ExamMarks, type ExamNotice } from "../../../api/v1alpha1/index.ts";
import { renderChartRbac } from "../../../cluster/chartRbac.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import { SESSION_COOKIE } from "../../../lib/session.ts";
import { eventually, serviceAccountToken, testCluster } from "../../../test/support/cluster.ts";
import { adminRest, createUserland, markReady, userlandsPath } from "../../../test/support/resources.ts";
import { isolatedValues } from "../../../test/chart/support.ts";
import { consoleConfig, startConsole, USER_PREFIX } from "../../user-manager/test/consoleSupport.ts";
import type { HomeView } from "../pages/homeView.ts";
import {
  forgeToken,
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
const BOB_HOST = "bob-code--code.apps.example.test";
const html = { accept: "text/html" };

test("during an exam: the student with a session from after the start and the proctors get in; an older session and other teachers with the visit right get 403; a held environment is paused", async (t) => {
  const keys = await testKeys(t);
  const um = await startConsole(t, { config: consoleConfig(keys.publicFile) });
  const ns = um.ns;
  const cluster = await testCluster();
  const admin = await adminRest();

  // The chart's visitor ClusterRole bound to prof (the proctor), dave (another teacher) and erin
  // (a proctor by group): all three hold the visit right.
  const objects = await renderChartRbac({
    helm: join(cluster.info.binDir, "helm"),
    namespace: ns,
    release: "ul",
    values: isolatedValues(ns),
  });
  const role = `${ns}-environment-visitor`;
  const visitorRole = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === role);
  assert.ok(visitorRole);
  await admin.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", visitorRole);
  t.after(() =>
    admin.delete(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}`).catch(() => undefined),
  );
  await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    metadata: { name: "visitors" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: ["prof", "dave", "erin"].map((u) => ({
      kind: "User",
      name: `${USER_PREFIX}${u}`,
      apiGroup: "rbac.authorization.k8s.io",
    })),
  });
  const reviewer = new KubeRest(cluster.kc);
  t.after(() => reviewer.close());
  await eventually("the visit rights to take effect", async () => {
    const review = await reviewer.create<{ status?: { allowed?: boolean } }>(
      `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "LocalSubjectAccessReview",
        spec: {
          user: `${USER_PREFIX}erin`,
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
  });
  proxy.resolver.set(ns, "bob-code-svc", upstream.url);

  // The exam started a minute ago; the operator's marks, written here by hand.
  const nowS = Math.floor(Date.now() / 1000);
  const notice: ExamNotice = {
    exam: "midterm",
    title: "Midterm",
    start: new Date((nowS - 60) * 1000).toISOString(),
    end: new Date((nowS + 3600) * 1000).toISOString(),
    proctors: { users: ["prof"], groups: ["exam-proctors"] },
  };
  const setMarks = (on: boolean) =>
    admin.patch(userlandsPath(ns, "bob-code"), {
      metadata: {
        labels: { [ExamMarks.examLabel]: on ? "midterm" : null },
        annotations: { [ExamMarks.examAnnotation]: on ? JSON.stringify(notice) : null },
      },
    });
  // The exam's NetworkPolicy, as the operator writes it (operator/exams/policy.ts): the proxy serves
  // the exam's environments only while it sees it (issue 41 item 8).
  const policiesPath = `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`;
  const examPolicy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "userland-exam-midterm", labels: { [ExamMarks.examLabel]: "midterm" } },
    spec: {
      podSelector: { matchLabels: { [ExamMarks.examLabel]: "midterm" } },
      policyTypes: ["Ingress", "Egress"],
    },
  };
  await admin.create(policiesPath, examPolicy);
  await eventually("the exam's policy in the proxy's cache", () =>
    proxy.app.cluster.examIsolated?.(ns, "midterm"),
  );
  await setMarks(true);
  await eventually(
    "the proxy's cache to hold bob's exam",
    () => proxy.app.cluster.getUserland?.("bob-code")?.metadata.labels?.[ExamMarks.examLabel] === "midterm",
  );

  const fresh = async (user: string, groups: string[] = []) =>
    `${SESSION_COOKIE}=${await keys.signer.sign(user, 3600, groups)}`;
  // Signed with the real key two minutes ago: a session from before the start.
  const old = async (user: string) =>
    `${SESSION_COOKIE}=${await forgeToken(keys.keys, { sub: user, iat: nowS - 120, exp: nowS + 3600 })}`;
  const get = (cookie: string, path: string, extra: Record<string, string> = {}) =>
    send(proxy.port, {
      path,
      headers: { host: CODE_HOST, ...html, "sec-fetch-site": "same-site", ...extra, cookie },
    });
  const visitPath = `/_userland/visit?namespace=${ns}&userland=bob-code`;
  /** The hand-over to bob's environment's own host (the visit's origin): its visit cookie. */
  const handOver = async (cookie: string) => {
    const token = cookie.slice(`${SESSION_COOKIE}=`.length);
    const entered = await handOverVisit(proxy.port, BOB_HOST, `http://${CODE_HOST}`, token);
    assert.equal(entered.status, 303, entered.body);
    return String(entered.headers["set-cookie"]).split(";", 1)[0] ?? "";
  };
  const onBobHost = (visitCookie: string, path: string) =>
    send(proxy.port, { path, headers: { host: BOB_HOST, ...html, cookie: visitCookie } });
  /** A visit as the console's Open begins it: the hand-over page, its post, then the environment. */
  const visit = async (cookie: string) => {
    const begin = await get(cookie, visitPath);
    if (begin.status !== 200) return begin;
    return onBobHost(await handOver(cookie), "/work");
  };

  await t.test("bob, signed in after the start, works in his environment", async () => {
    const r = await get(await fresh("bob"), "/exam");
    assert.equal(r.status, 200, r.body);
    assert.equal(upstream.seen.at(-1)?.headers["x-user"], "bob");
  });

  await t.test(
    "while the exam restarts bob's environment, its starting page says why and what was lost (issue 44 item 4)",
    async () => {
      await admin.patch(userlandsPath(ns, "bob-code", "status"), { status: { phase: "Starting" } });
      await eventually(
        "the proxy's cache to see bob's environment starting",
        () => proxy.app.cluster.getUserland?.("bob-code")?.status?.phase === "Starting",
      );
      const r = await get(await fresh("bob"), "/exam");
      assert.equal(r.status, 503, r.body);
      assert.match(r.body, /id="exam-restart">Restarting for the exam Midterm \(until [0-9-]+ [0-9:]+ UTC\)/);
      assert.match(r.body, /notebook kernels and terminals, were stopped; your saved files are all here/);
      await markReady(ns, "bob-code", { name: "bob-code-svc", port: 80 });
      await eventually(
        "the proxy's cache to see bob's environment ready again",
        () => proxy.app.cluster.getUserland?.("bob-code")?.status?.phase === "Ready",
      );
    },
  );

  await t.test("bob's session from before the start is refused: sign in again on this machine", async () => {
    const before = upstream.seen.length;
    const r = await get(await old("bob"), "/exam");
    assert.equal(r.status, 403);
    assert.match(r.body, /Sign in again on this machine/);
    assert.match(r.body, /logout\?rd=http%3A%2F%2Fcode\.example\.test%2Fexam/);
    assert.equal(upstream.seen.length, before, "nothing reached the environment");
  });

  await t.test("the proctor prof opens it as a visit; erin, a proctor by group, too", async () => {
    const r = await visit(await fresh("prof"));
    assert.equal(r.status, 200, r.body);
    assert.equal(upstream.seen.at(-1)?.headers["x-user"], "bob");
    assert.equal(upstream.seen.at(-1)?.headers["x-userland-visitor"], "prof");
    const e = await visit(await fresh("erin", ["exam-proctors"]));
    assert.equal(e.status, 200, e.body);
    assert.equal(upstream.seen.at(-1)?.headers["x-userland-visitor"], "erin");
  });

  await t.test("dave holds the visit right but is no proctor: 403, and nothing reaches bob", async () => {
    const before = upstream.seen.length;
    const begin = await get(await fresh("dave"), visitPath);
    assert.equal(begin.status, 403);
    assert.match(begin.body, /You may not open this environment/);
    // Nor with his session handed over by hand.
    const forged = await onBobHost(await handOver(await fresh("dave")), "/work");
    assert.equal(forged.status, 403);
    assert.equal(upstream.seen.length, before);
  });

  await t.test("the proctor's own session from before the start is refused too", async () => {
    const r = await onBobHost(await handOver(await old("prof")), "/work");
    assert.equal(r.status, 403);
    assert.match(r.body, /Sign in again on this machine/);
  });

  await t.test("a student's other environment held for the exam is paused: no page, no start", async () => {
    await createUserland(ns, "bob-lab", "bob", "code", false);
    await admin.patch(userlandsPath(ns, "bob-code"), { spec: { enabled: true } });
    // bob-lab is on another Template in real life; here its hold label alone is what is checked.
    // It is held by the exam of another course's namespace: the pages name that one.
    const held: ExamNotice = { ...notice, namespace: "course-b" };
    await admin.patch(userlandsPath(ns, "bob-lab"), {
      metadata: {
        labels: { [ExamMarks.holdLabel]: examHoldValue("course-b", "midterm") },
        annotations: { [ExamMarks.holdAnnotation]: JSON.stringify(held) },
      },
    });
    await eventually("the hold in the proxy's cache", () =>
      Boolean(proxy.app.cluster.getUserland?.("bob-lab")?.metadata.labels?.[ExamMarks.holdLabel]),
    );
    const start = await send(proxy.port, {
      method: "POST",
      path: "/_userland/start",
      headers: {
        host: CODE_HOST,
        origin: `http://${CODE_HOST}`,
        "sec-fetch-site": "same-origin",
        "content-type": "application/x-www-form-urlencoded",
        cookie: await fresh("bob"),
      },
      body: "userland=bob-lab",
    });
    assert.equal(start.status, 403, start.body);
    assert.match(start.body, /Paused for an exam/);
    assert.match(start.body, /during the exam Midterm \(course-b\/midterm\), until /);
    const lab = await admin.get<{ spec: { enabled?: boolean } }>(userlandsPath(ns, "bob-lab"));
    assert.equal(lab.spec.enabled, false, "not started");
  });

  await t.test(
    "bob's home says which environment is in the exam and which is paused, without a Start for it",
    async () => {
      const cookie = await fresh("bob");
      const json = await get(cookie, "/_userland/home", { accept: "application/json" });
      assert.equal(json.status, 200, json.body);
      const envs = json.json<HomeView>().environments;
      const code = envs.find((e) => e.name === "bob-code");
      const lab = envs.find((e) => e.name === "bob-lab");
      assert.match(code?.detail ?? "", /^In the exam Midterm until \d{4}-\d\d-\d\d \d\d:\d\d UTC: only you/);
      assert.equal(lab?.held, true);
      assert.match(lab?.detail ?? "", /^Paused for the exam Midterm \(course-b\/midterm\) until /);
      const [running, ...rest] = json.json<HomeView>().exams;
      assert.deepEqual(rest, [], "the exam once, not again for the held environment");
      assert.equal(running?.state, "running");
      assert.match(
        running?.text ?? "",
        /^Exam Midterm in progress until \d{4}-\d\d-\d\d \d\d:\d\d UTC, in your /,
      );
      const page = await get(cookie, "/_userland/home");
      assert.equal(page.status, 200);
      assert.match(
        page.body,
        /<li class="exam exam-running" role="status">\s*<strong>Exam in progress:<\/strong> Exam Midterm in progress until /,
      );
      assert.doesNotMatch(page.body, /aria-label="Start [^"]*"/, "no Start button for the held environment");
    },
  );

  await t.test(
    "the exam's NetworkPolicy deleted: bob's open WebSocket closes and he gets 503 until it is back",
    async () => {
      const opened = await openWebSocket(proxy.port, { host: CODE_HOST, cookie: await fresh("bob") });
      assert.ok("ws" in opened, `the WebSocket opens: ${JSON.stringify(opened)}`);
      t.after(() => opened.ws.terminate());
      const closed = new Promise<void>((resolve) => opened.ws.once("close", () => resolve()));
      await admin.delete(`${policiesPath}/userland-exam-midterm`);
      await closed;
      const seen = upstream.seen.length;
      await eventually(
        "the policy gone from the proxy's cache",
        () => !proxy.app.cluster.examIsolated?.(ns, "midterm"),
      );
      const r = await get(await fresh("bob"), "/exam");
      assert.equal(r.status, 503, r.body);
      assert.match(r.body, /isolation is not in force right now/);
      const p = await visit(await fresh("prof"));
      assert.equal(p.status, 503, p.body);
      assert.equal(upstream.seen.length, seen, "nothing reached bob's environment");
      await admin.create(policiesPath, examPolicy);
      await eventually("the policy back in the proxy's cache", () =>
        proxy.app.cluster.examIsolated?.(ns, "midterm"),
      );
      assert.equal((await get(await fresh("bob"), "/exam")).status, 200);
    },
  );

  /** The operator's notice, with another end, in the proxy's cache. */
  const setNotice = async (changed: ExamNotice) => {
    await admin.patch(userlandsPath(ns, "bob-code"), {
      metadata: { annotations: { [ExamMarks.examAnnotation]: JSON.stringify(changed) } },
    });
    await eventually(
      "the proxy's cache to hold the changed notice",
      () =>
        proxy.app.cluster.getUserland?.("bob-code")?.metadata.annotations?.[ExamMarks.examAnnotation] ===
        JSON.stringify(changed),
    );
  };

  await t.test("a WebSocket bob opened during the exam closes at its end", async () => {
    const endMs = Date.now() + 3000;
    await setNotice({ ...notice, end: new Date(endMs).toISOString() });
    const opened = await openWebSocket(proxy.port, { host: CODE_HOST, cookie: await fresh("bob") });
    assert.ok("ws" in opened, `the WebSocket opens: ${JSON.stringify(opened)}`);
    t.after(() => opened.ws.terminate());
    const closed = new Promise<number>((resolve) => opened.ws.once("close", () => resolve(Date.now())));
    assert.equal((await roundTrip(opened.ws, "answer 42")).echo, "answer 42", "it works during the exam");
    const closedAt = await closed;
    assert.ok(closedAt >= endMs - 50, `closed ${endMs - closedAt} ms before the end`);
    assert.ok(closedAt < endMs + 2000, `closed ${closedAt - endMs} ms after the end`);
  });

  await t.test(
    "past the end, while the marks are on (collecting): neither bob nor the proctor gets in",
    async () => {
      const ended = { ...notice, end: new Date((nowS - 1) * 1000).toISOString() };
      await setNotice(ended);
      const seen = upstream.seen.length;
      const r = await get(await fresh("bob"), "/after-the-end");
      assert.equal(r.status, 403, r.body);
      assert.match(r.body, /The exam is over/);
      assert.match(r.body, /Your work is being collected/);
      const p = await visit(await fresh("prof"));
      assert.equal(p.status, 403, p.body);
      assert.match(p.body, /The exam is over/);
      assert.equal(upstream.seen.length, seen, "nothing reached bob's environment");
    },
  );

  await t.test("after the exam (marks gone) the same old session and dave get in again", async () => {
    await setMarks(false);
    await eventually(
      "the proxy's cache to drop the exam",
      () => proxy.app.cluster.getUserland?.("bob-code")?.metadata.labels?.[ExamMarks.examLabel] === undefined,
    );
    const r = await get(await old("bob"), "/after");
    assert.equal(r.status, 200, r.body);
    const d = await visit(await fresh("dave"));
    assert.equal(d.status, 200, d.body);
    assert.equal(upstream.seen.at(-1)?.headers["x-userland-visitor"], "dave");
  });

  await t.test(
    "the day before the next exam, bob's home announces it; once its start has passed, no more",
    async () => {
      // The operator's notice for the day before (operator/exams/syncExam.ts), written here by hand.
      const at = (s: number) => new Date(s * 1000).toISOString();
      const upcoming = (startS: number): ExamNotice => ({
        exam: "final",
        namespace: ns,
        title: "Final",
        class: "c1",
        start: at(startS),
        end: at(startS + 7200),
        proctors: { users: ["prof"], groups: [] },
      });
      const announce = async (startS: number) => {
        await admin.patch(userlandsPath(ns, "bob-code"), {
          metadata: { annotations: { [ExamMarks.upcomingAnnotation]: JSON.stringify(upcoming(startS)) } },
        });
        await eventually("the notice in the proxy's cache", () =>
          proxy.app.cluster
            .getUserland?.("bob-code")
            ?.metadata.annotations?.[ExamMarks.upcomingAnnotation]?.includes(at(startS)),
        );
      };
      const startS = Math.floor(Date.now() / 1000) + 2 * 3600;
      await announce(startS);
      const cookie = await fresh("bob");
      const json = await get(cookie, "/_userland/home", { accept: "application/json" });
      assert.equal(json.status, 200, json.body);
      const [final, ...others] = json.json<HomeView>().exams;
      assert.deepEqual(others, []);
      const when = `${at(startS).slice(0, 16).replace("T", " ")} UTC`;
      assert.deepEqual(
        { ...final, environment: undefined },
        {
          exam: "final",
          namespace: ns,
          title: "Final",
          class: "c1",
          state: "upcoming",
          start: at(startS),
          end: at(startS + 7200),
          environment: undefined,
          text: `Exam Final for c1 starts at ${when}: your ${final?.environment ?? "?"} will restart, and you will sign in again on the exam machine.`,
        },
      );
      const page = await get(cookie, "/_userland/home");
      assert.equal(page.status, 200);
      assert.match(page.body, /<strong>Exam ahead:<\/strong> Exam Final for c1 starts at /);
      assert.ok(page.body.includes(when), "the start, in UTC");

      // A notice whose start has passed (the operator not yet past it) says nothing that is not so.
      await announce(Math.floor(Date.now() / 1000) - 1);
      const later = await get(cookie, "/_userland/home", { accept: "application/json" });
      assert.deepEqual(later.json<HomeView>().exams, []);
    },
  );
});
