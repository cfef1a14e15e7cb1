/**
 * `POST /api/v1/userlands/{name}/visits` against the real control plane with real RBAC: who may
 * report (the caller's `patch`), who may visit (the visitor's own session, `create` on
 * `userlands/visit`, granted to a group here), what is written, and what an end needs.
 * The proxy's side, end to end: services/proxy/test/visits.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { parseVisits, VISIT_CONSENT_ANNOTATION } from "../../../api/visits.ts";
import { SessionRecordAnnotations } from "../../../api/sessions.ts";
import { eventually } from "../../../test/support/cluster.ts";
import {
  adminRest,
  createUserland,
  getSessionRecord,
  templatesPath,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { startConsole } from "./consoleSupport.ts";
import { startUserManager } from "./support.ts";

const VISIT_RULES = [{ apiGroups: ["userland.dev"], resources: ["userlands/visit"], verbs: ["create"] }];

test("visit reports: the caller needs patch, the visitor's own session needs create on userlands/visit", async (t) => {
  const um = await startConsole(t);
  await createUserland(um.ns, "bob-code", "bob", "code");
  // Everyone in the identity provider's group "tas" may visit; nobody else.
  await um.appoint({ group: "tas" }, VISIT_RULES);
  const token = (cookie: string) => cookie.slice(cookie.indexOf("=") + 1);
  const now = new Date();
  const body = async (user: string, phase = "begin", groups: string[] = ["tas"]) => ({
    session: token(await um.cookie(user, groups)),
    phase,
    firstSeen: now.toISOString(),
    lastSeen: now.toISOString(),
    quietSeconds: 300,
  });
  const report = async (b: Record<string, unknown>, caller = um.teacher) =>
    um.call("POST", "/api/v1/userlands/bob-code/visits", { token: caller, body: b });
  const visits = async () =>
    parseVisits(
      (await (await adminRest()).get<Userland>(userlandsPath(um.ns, "bob-code"))).metadata.annotations?.[
        UserlandAnnotations.visits
      ],
    );

  await t.test("a caller without patch on the Userland may not report", async () => {
    const reader = await um.callerWith("reader", [
      { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["get"] },
    ]);
    const r = await report(await body("alice"), reader);
    assert.equal(r.status, 403, r.text);
    assert.deepEqual(await visits(), []);
  });

  await t.test("a session the auth service did not sign is no visitor", async () => {
    const r = await report({ ...(await body("alice")), session: "not.a.session" });
    assert.equal(r.status, 401, r.text);
  });

  await t.test("the owner is no visitor of their own environment", async () => {
    const r = await report(await body("bob"));
    assert.equal(r.status, 400, r.text);
  });

  await t.test("a person outside the group gets 403 naming the right; nothing is written", async () => {
    const r = await report(await body("mallory", "begin", ["students"]));
    assert.equal(r.status, 403, r.text);
    assert.match(r.text, /userland:mallory may not open the environment of Userland \\"bob-code\\"/);
    assert.match(r.text, /userlands\/visit/);
    assert.deepEqual(await visits(), []);
  });

  await t.test("a member of the group may: the visit is recorded, an end needs no right", async () => {
    const r = await report(await body("alice"));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.owner, "bob");
    assert.equal(r.json.visitor, "alice");
    assert.deepEqual(
      (await visits()).map((v) => [v.visitor, v.ended]),
      [["alice", undefined]],
    );
    // Left the group since: a visit that happened is still ended and kept.
    const end = await report(await body("alice", "end", []));
    assert.equal(end.status, 200, end.text);
    assert.deepEqual(
      (await visits()).map((v) => [v.visitor, v.ended]),
      [["alice", true]],
    );
    // But a new visit without the group is refused.
    assert.equal((await report(await body("alice", "begin", []))).status, 403);
  });
});

test("a teacher's environment is no student's: the visitor role does not open it, userlands/visit-teacher does (issue 41 item 7)", async (t) => {
  const um = await startConsole(t);
  await createUserland(um.ns, "tess-code", "tess", "code");
  await createUserland(um.ns, "bob-code", "bob", "code");
  // tess teaches the Template (the course teacher's right, as the operator decides it).
  await um.appoint({ user: "tess" }, [
    { apiGroups: ["userland.dev"], resources: ["templates/coursework"], verbs: ["update"] },
  ]);
  // The TA may visit students; the head teacher may visit teachers too (the chart's two roles).
  await um.appoint({ user: "ta" }, VISIT_RULES);
  await um.appoint({ user: "head" }, [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands/visit", "userlands/visit-teacher"],
      verbs: ["create"],
    },
  ]);
  const begin = async (visitor: string, userland: string) => {
    const cookie = await um.cookie(visitor);
    const now = new Date().toISOString();
    return um.call("POST", `/api/v1/userlands/${userland}/visits`, {
      token: um.teacher,
      body: {
        session: cookie.slice(cookie.indexOf("=") + 1),
        phase: "begin",
        firstSeen: now,
        lastSeen: now,
        quietSeconds: 300,
      },
    });
  };
  const visitors = async (userland: string) =>
    parseVisits(
      (await (await adminRest()).get<Userland>(userlandsPath(um.ns, userland))).metadata.annotations?.[
        UserlandAnnotations.visits
      ],
    ).map((v) => v.visitor);

  const student = await begin("ta", "bob-code");
  assert.equal(student.status, 200, student.text);
  const refused = await begin("ta", "tess-code");
  assert.equal(refused.status, 403, refused.text);
  assert.match(refused.text, /tess teaches Template \\"code\\"/);
  assert.match(refused.text, /userlands\/visit-teacher/);
  assert.deepEqual(await visitors("tess-code"), [], "nothing recorded");
  const head = await begin("head", "tess-code");
  assert.equal(head.status, 200, head.text);
  assert.deepEqual(await visitors("tess-code"), ["head"]);
});

test("a teacher appointed by an identity-provider group is no student either, once a sign-in recorded the groups (issue 41 item 7)", async (t) => {
  const um = await startConsole(t);
  await createUserland(um.ns, "gina-code", "gina", "code");
  // Everyone in the identity provider's group "staff" teaches the Template; the TA may visit students.
  await um.appoint({ group: "staff" }, [
    { apiGroups: ["userland.dev"], resources: ["templates/coursework"], verbs: ["update"] },
  ]);
  await um.appoint({ user: "ta" }, VISIT_RULES);
  const token = (cookie: string) => cookie.slice(cookie.indexOf("=") + 1);
  const begin = async () => {
    const now = new Date().toISOString();
    return um.call("POST", "/api/v1/userlands/gina-code/visits", {
      token: um.teacher,
      body: {
        session: token(await um.cookie("ta")),
        phase: "begin",
        firstSeen: now,
        lastSeen: now,
        quietSeconds: 300,
      },
    });
  };
  // Without her groups, nothing says gina teaches: the TA's visit is let in (what the fix changes).
  assert.equal((await begin()).status, 200);

  // gina signs in: the auth service relays her new session, whose token carries her groups.
  const gina = token(await um.cookie("gina", ["staff", "all-staff"]));
  const seen = (caller: string) =>
    um.call("POST", "/api/v1/sessions/seen", { token: caller, body: { session: gina } });
  const auth = await um.callerWith("userland-auth", [
    { apiGroups: ["userland.dev"], resources: ["userlands/sessions"], verbs: ["delete"] },
  ]);
  for (const caller of [um.teacher, um.student])
    assert.equal((await seen(caller)).status, 403, "only the auth service's right");
  assert.equal(
    (await um.call("POST", "/api/v1/sessions/seen", { token: auth, body: { session: "not.a.session" } }))
      .status,
    401,
  );
  const recorded = await seen(auth);
  assert.equal(recorded.status, 200, recorded.text);
  assert.deepEqual(recorded.json, { user: "gina", groups: ["staff", "all-staff"] });
  assert.equal(
    (await getSessionRecord(um.ns, "gina"))?.metadata.annotations?.[SessionRecordAnnotations.groups],
    JSON.stringify(["all-staff", "staff"]),
  );
  const refused = await eventually(
    "the TA to be refused gina's environment",
    async () => {
      const r = await begin();
      return r.status === 403 && r;
    },
    5000,
    50,
  );
  assert.match(refused.text, /gina teaches Template \\"code\\"/);
  assert.match(refused.text, /userlands\/visit-teacher/);
});

test("a Template that asks first: 409 until the student's own session allows; nobody else can allow", async (t) => {
  const um = await startConsole(t);
  await createUserland(um.ns, "bob-code", "bob", "code");
  await (
    await adminRest()
  ).patch(templatesPath(um.ns, "code"), {
    metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: "required" } },
  });
  await um.appoint({ user: "alice" }, VISIT_RULES);
  const token = async (user: string) => {
    const cookie = await um.cookie(user);
    return cookie.slice(cookie.indexOf("=") + 1);
  };
  const begin = async () =>
    um.call("POST", "/api/v1/userlands/bob-code/visits", {
      token: um.teacher,
      body: {
        session: await token("alice"),
        phase: "begin",
        firstSeen: new Date().toISOString(),
        lastSeen: new Date().toISOString(),
        quietSeconds: 300,
      },
    });
  const allow = async (user: string) =>
    um.call("POST", "/api/v1/userlands/bob-code/visit-consents", {
      token: um.teacher,
      body: { session: await token(user), visitor: "alice" },
    });
  const first = await begin();
  assert.equal(first.status, 409, first.text);
  assert.equal(first.json.error, "ConsentRequired");
  assert.equal((await begin()).status, 409, "still waiting");
  assert.equal((await allow("alice")).status, 403, "the visitor cannot allow themselves");
  assert.equal((await allow("carol")).status, 403, "nor anyone but the student");
  const allowed = await allow("bob");
  assert.equal(allowed.status, 200, allowed.text);
  const entered = await begin();
  assert.equal(entered.status, 200, entered.text);
  assert.equal(entered.json.owner, "bob");
});

test("without the console's session keys, visits are not available (501)", async (t) => {
  const um = await startUserManager(t);
  await createUserland(um.ns, "bob-code", "bob", "code");
  const r = await um.call("POST", "/api/v1/userlands/bob-code/visits", {
    token: um.teacher,
    body: {
      session: "x.y.z",
      phase: "begin",
      firstSeen: new Date().toISOString(),
      lastSeen: new Date().toISOString(),
      quietSeconds: 300,
    },
  });
  assert.equal(r.status, 501, r.text);
  assert.match(r.text, /USER_MANAGER_SESSION_JWKS_URL/);
});
