/** The REST API against the real control plane, with real ServiceAccount tokens for every caller. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { userlandNameFor } from "../../../api/naming.ts";
import { UserlandAnnotations } from "../../../api/v1alpha1/index.ts";
import { admin, metricValue, startUserManager, type Harness } from "./support.ts";

const view = (r: { json: Record<string, unknown> }) =>
  r.json as {
    name: string;
    user: string;
    templateName: string;
    enabled: boolean;
    phase: unknown;
    stoppedReason: unknown;
    createdAt: string;
  };
const items = (r: { json: Record<string, unknown> }) =>
  (r.json.items as ReturnType<typeof view>[]).map((i) => i.user).sort();

test("every caller is authenticated by TokenReview and authorized by RBAC", async (t) => {
  const h = await startUserManager(t);

  const anonymous = await h.call("GET", "/api/v1/userlands");
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.json.error, "Unauthorized");
  assert.match(anonymous.headers.get("www-authenticate") ?? "", /^Bearer/);
  assert.equal((await h.call("GET", "/api/v1/userlands", { token: "garbage" })).status, 401);
  assert.equal(
    (await h.call("GET", "/api/v1/userlands", { token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" })).status,
    401,
    "a forged JWT",
  );
  assert.equal(
    (await h.call("GET", "/api/v1/userlands", { headers: { authorization: "Basic dTpw" } })).status,
    401,
  );
  assert.equal(
    (await h.call("GET", "/api/v1/nothing-here")).status,
    401,
    "unknown routes are not public either",
  );
  assert.equal(
    (await h.call("POST", "/api/v1/userlands", { body: { user: "x", templateName: "code" } })).status,
    401,
  );

  const forbidden = await h.call("GET", "/api/v1/userlands", { token: h.student });
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.json.error, "Forbidden");
  assert.match(
    String(forbidden.json.message),
    new RegExp(`system:serviceaccount:${h.ns}:student may not list userlands\\.userland\\.dev`),
  );
  assert.match(
    String(forbidden.json.message),
    /verb "list" on resource "userlands" in API group "userland\.dev"/,
  );
  const denied = await h.call("POST", "/api/v1/userlands", {
    token: h.student,
    body: { user: "student", templateName: "code" },
  });
  assert.equal(denied.status, 403);
  assert.match(String(denied.json.message), /may not create/);
  assert.equal((await admin.listUserlands(h.ns)).length, 0, "nothing was created");

  assert.equal((await h.call("GET", "/api/v1/userlands", { token: h.teacher })).status, 200);

  // A Role with resourceNames: the name in the path is part of the access review.
  await admin.createUserland(h.ns, "alice-own", "alice", "code");
  await admin.createUserland(h.ns, "bob-own", "bob", "code");
  const alice = await h.callerWith("alice-viewer", [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["get"], resourceNames: ["alice-own"] },
  ]);
  assert.equal((await h.call("GET", "/api/v1/userlands/alice-own", { token: alice })).status, 200);
  const other = await h.call("GET", "/api/v1/userlands/bob-own", { token: alice });
  assert.equal(other.status, 403);
  assert.match(String(other.json.message), /may not get userlands\.userland\.dev "bob-own"/);

  // Probes and the API description are public; nothing else.
  for (const path of ["/healthz", "/readyz", "/openapi.json"])
    assert.equal((await h.call("GET", path)).status, 200, path);
  // The counters are not on the API's port (routed from the internet): main.ts serves them on its
  // admin port (main.test.ts). Anonymous callers get the 401 of every non-public path.
  for (const [token, status] of [
    [undefined, 401],
    [h.teacher, 404],
  ] as const) {
    const metrics = await h.call("GET", "/metrics", { token });
    assert.equal(metrics.status, status, `/metrics ${token ? "with" : "without"} a token`);
    assert.doesNotMatch(metrics.text, /userland_user_manager_/);
  }

  // Tokens are reviewed once and then cached (by hash): the teacher's many calls above cost one TokenReview.
  const before = metricValue(await h.metricsText(), "userland_user_manager_token_reviews_total", {
    result: "authenticated",
  });
  for (let i = 0; i < 3; i++) await h.call("GET", "/api/v1/userlands", { token: h.teacher });
  const after = metricValue(await h.metricsText(), "userland_user_manager_token_reviews_total", {
    result: "authenticated",
  });
  assert.equal(after, before, "no TokenReview for a cached token");
  assert.ok(before >= 2, "teacher, student and alice were each reviewed");
});

test("create, conflicts, unknown template and input validation", async (t) => {
  const h = await startUserManager(t);
  const post = (body: unknown, token = h.teacher) => h.call("POST", "/api/v1/userlands", { token, body });

  const created = await post({ user: "a.b@uni.ac.jp", templateName: "code" });
  assert.equal(created.status, 201, created.text);
  const name = userlandNameFor("a.b@uni.ac.jp", "code");
  assert.deepEqual(
    { ...view(created), createdAt: undefined },
    {
      name,
      user: "a.b@uni.ac.jp",
      templateName: "code",
      enabled: true,
      phase: null,
      message: null,
      service: null,
      stoppedReason: null,
      createdAt: undefined,
    },
  );
  assert.ok(!Number.isNaN(Date.parse(view(created).createdAt)));
  assert.equal(created.headers.get("location"), `/api/v1/userlands/${name}`);
  const stored = await admin.getUserland(h.ns, name);
  assert.deepEqual(stored.spec, { user: "a.b@uni.ac.jp", templateName: "code", enabled: true });
  assert.equal(
    stored.metadata.annotations?.[UserlandAnnotations.createdBy],
    `system:serviceaccount:${h.ns}:teacher`,
  );

  // Another Template is another environment: one Userland per (user, Template).
  const second = await post({ user: "a.b@uni.ac.jp", templateName: "jupyter" });
  assert.equal(second.status, 201, second.text);
  assert.equal(view(second).name, userlandNameFor("a.b@uni.ac.jp", "jupyter"));
  assert.notEqual(view(second).name, name);
  assert.equal((await admin.getUserland(h.ns, name)).spec.templateName, "code", "the first is untouched");

  const duplicate = await post({ user: "a.b@uni.ac.jp", templateName: "code" });
  assert.equal(duplicate.status, 409);
  assert.equal(duplicate.json.error, "Conflict");
  assert.match(
    String(duplicate.json.message),
    new RegExp(`already has Userland "${name}" \\(template "code"\\)`),
  );
  assert.equal((duplicate.json.userland as { name: string }).name, name);

  // A hand-made Userland under another name still counts: the lookup is by spec.user and spec.templateName.
  await admin.createUserland(h.ns, "handmade", "carol", "code");
  const handmade = await post({ user: "carol", templateName: "code" });
  assert.equal(handmade.status, 409);
  assert.match(String(handmade.json.message), /Userland "handmade"/);

  const missing = await post({ user: "dave", templateName: "nosuch" });
  assert.equal(missing.status, 404);
  assert.deepEqual(
    { error: missing.json.error, field: missing.json.field },
    { error: "NotFound", field: "templateName" },
  );
  assert.match(
    String(missing.json.message),
    new RegExp(`Template "nosuch" does not exist in namespace "${h.ns}"`),
  );

  const stopped = await post({ user: "erin", templateName: "code", enabled: false });
  assert.equal(stopped.status, 201);
  assert.equal(view(stopped).enabled, false);

  const bad: [unknown, string, RegExp][] = [
    [{ user: "new\nline", templateName: "code" }, "user", /line break/],
    [{ user: "", templateName: "code" }, "user", /empty/],
    [{ user: " padded", templateName: "code" }, "user", /leading or trailing space/],
    [{ user: "ünïcode", templateName: "code" }, "user", /printable ASCII/],
    [{ user: "x".repeat(257), templateName: "code" }, "user", /longer than 256/],
    [{ user: 42, templateName: "code" }, "user", /string/],
    [{ user: "ok", templateName: "Bad_Name" }, "templateName", /lowercase/],
    [{ user: "ok", templateName: "code", extra: 1 }, "extra", /unknown field "extra"/],
    [{ user: "ok", templateName: "code", enabled: "yes" }, "enabled", /boolean/],
    [{ templateName: "code" }, "user", /user is required/],
    [["user"], "", /object/],
  ];
  for (const [body, field, message] of bad) {
    const r = await post(body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.error, "BadRequest");
    if (field) assert.equal(r.json.field, field, JSON.stringify(body));
    assert.match(String(r.json.message), message, JSON.stringify(body));
  }
  const notJson = await h.call("POST", "/api/v1/userlands", {
    token: h.teacher,
    raw: { contentType: "application/json", text: "{user:" },
  });
  assert.equal(notJson.status, 400);
  const plain = await h.call("POST", "/api/v1/userlands", {
    token: h.teacher,
    raw: { contentType: "text/plain", text: "alice" },
  });
  assert.equal(plain.status, 415);
  const csv = await h.call("POST", "/api/v1/userlands", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\nalice\n" },
  });
  assert.equal(csv.status, 415, "CSV only on the roster route");
  const huge = await h.call("POST", "/api/v1/userlands", {
    token: h.teacher,
    raw: {
      contentType: "application/json",
      text: JSON.stringify({ user: "x", templateName: "code", pad: "x".repeat(100_000) }),
    },
  });
  assert.equal(huge.status, 413);

  // Nothing was created by any of the refused requests.
  const all = await h.call("GET", "/api/v1/userlands", { token: h.teacher });
  assert.deepEqual(items(all), ["a.b@uni.ac.jp", "a.b@uni.ac.jp", "carol", "erin"]);
  const text = await h.metricsText();
  assert.equal(metricValue(text, "userland_user_manager_userlands_created_total", { source: "api" }), 3);
  assert.ok(
    metricValue(text, "userland_user_manager_http_requests_total", {
      route: "/api/v1/userlands",
      status: "400",
      method: "POST",
    }) >= bad.length,
  );
});

test("identities that differ only in case or punctuation get their own Userlands", async (t) => {
  const h = await startUserManager(t);
  const users = ["Koba1t", "koba1t", "koba.1t", "koba-1t", "github:123", "a/b?c#d%e"];
  for (const user of users) {
    const r = await h.call("POST", "/api/v1/userlands", {
      token: h.teacher,
      body: { user, templateName: "code" },
    });
    assert.equal(r.status, 201, `${user}: ${r.text}`);
  }
  const names = new Set(users.map((user) => userlandNameFor(user, "code")));
  assert.equal(names.size, users.length, "all names differ");
  for (const user of users) {
    const r = await h.call("GET", `/api/v1/users/${encodeURIComponent(user)}/userland`, { token: h.teacher });
    assert.equal(r.status, 200, `${user}: ${r.text}`);
    assert.equal(view(r).user, user);
    assert.equal(view(r).name, userlandNameFor(user, "code"));
    const filtered = await h.call("GET", `/api/v1/userlands?user=${encodeURIComponent(user)}`, {
      token: h.teacher,
    });
    assert.deepEqual(items(filtered), [user]);
  }
  const none = await h.call("GET", `/api/v1/users/${encodeURIComponent("KOBA1T")}/userland`, {
    token: h.teacher,
  });
  assert.equal(none.status, 404);
  assert.match(String(none.json.message), /user "KOBA1T" has no Userland/);
  const invalid = await h.call("GET", `/api/v1/users/${encodeURIComponent("bad\nuser")}/userland`, {
    token: h.teacher,
  });
  assert.equal(invalid.status, 400);
  assert.equal(invalid.json.field, "user");
  assert.equal(invalid.json.in, "params");
});

test("list with filters, get, start, stop and delete", async (t) => {
  const h = await startUserManager(t);
  const create = async (user: string, templateName: string) => {
    const r = await h.call("POST", "/api/v1/userlands", { token: h.teacher, body: { user, templateName } });
    assert.equal(r.status, 201, r.text);
    return view(r).name;
  };
  const alice = await create("alice", "code");
  await create("bob", "code");
  await create("carol", "jupyter");

  const list = async (query: string) => {
    const r = await h.call("GET", `/api/v1/userlands${query}`, { token: h.teacher });
    assert.equal(r.status, 200, r.text);
    return items(r);
  };
  assert.deepEqual(await list(""), ["alice", "bob", "carol"]);
  assert.deepEqual(await list("?template=code"), ["alice", "bob"]);
  assert.deepEqual(await list("?template=jupyter&user=carol"), ["carol"]);
  assert.deepEqual(await list("?template=jupyter&user=alice"), []);
  assert.deepEqual(await list("?phase=Ready"), [], "no operator here: nothing is Ready");
  await admin.patchStatus(h.ns, alice, { phase: "Ready", service: { name: "svc", port: 80 } });
  assert.deepEqual(await list("?phase=Ready"), ["alice"]);
  const badPhase = await h.call("GET", "/api/v1/userlands?phase=Sleeping", { token: h.teacher });
  assert.equal(badPhase.status, 400);
  assert.deepEqual({ field: badPhase.json.field, in: badPhase.json.in }, { field: "phase", in: "query" });
  const unknownFilter = await h.call("GET", "/api/v1/userlands?owner=x", { token: h.teacher });
  assert.equal(unknownFilter.status, 400);
  assert.equal(unknownFilter.json.field, "owner");

  const got = await h.call("GET", `/api/v1/userlands/${alice}`, { token: h.teacher });
  assert.equal(got.status, 200);
  assert.equal(view(got).phase, "Ready");
  assert.deepEqual(got.json.service, { name: "svc", port: 80 });
  assert.equal((await h.call("GET", "/api/v1/userlands/nobody", { token: h.teacher })).status, 404);
  assert.equal((await h.call("GET", "/api/v1/userlands/Not_A_Name", { token: h.teacher })).status, 400);
  // The CRD refuses dotted names, so no Userland can have one: a clear 400, not a 404 from Kubernetes.
  for (const method of ["GET", "DELETE"]) {
    const dotted = await h.call(method, "/api/v1/userlands/a.b", { token: h.teacher });
    assert.equal(dotted.status, 400, method);
    assert.equal(dotted.json.field, "name");
    assert.equal(dotted.json.in, "params");
    assert.match(String(dotted.json.message), /must not contain '\.'/);
  }
  assert.equal((await h.call("POST", "/api/v1/userlands/a.b/start", { token: h.teacher })).status, 400);

  // Stopped by the idle culler long ago, then started by a teacher: the culler must not stop it again at once.
  await admin.patchUserland(h.ns, alice, {
    metadata: {
      annotations: {
        "userland.dev/stopped-reason": "IdleTimeout",
        "userland.dev/last-activity": "2020-01-01T00:00:00Z",
      },
    },
    spec: { enabled: false },
  });
  assert.equal(
    view(await h.call("GET", `/api/v1/userlands/${alice}`, { token: h.teacher })).stoppedReason,
    "IdleTimeout",
  );
  const startedAt = Date.now();
  const started = await h.call("POST", `/api/v1/userlands/${alice}/start`, { token: h.teacher });
  assert.equal(started.status, 200, started.text);
  assert.equal(view(started).enabled, true);
  assert.equal(view(started).stoppedReason, null);
  let stored = await admin.getUserland(h.ns, alice);
  assert.equal(stored.spec.enabled, true);
  assert.equal(stored.metadata.annotations?.["userland.dev/stopped-reason"], undefined);
  const activity = Date.parse(stored.metadata.annotations?.["userland.dev/last-activity"] ?? "");
  assert.ok(activity >= startedAt - 1000 && activity <= Date.now() + 1000, "last-activity is now");

  const stopped = await h.call("POST", `/api/v1/userlands/${alice}/stop`, { token: h.teacher });
  assert.equal(stopped.status, 200);
  assert.equal(view(stopped).enabled, false);
  stored = await admin.getUserland(h.ns, alice);
  assert.equal(stored.spec.enabled, false);
  assert.equal((await h.call("POST", "/api/v1/userlands/nobody/start", { token: h.teacher })).status, 404);
  assert.equal((await h.call("POST", "/api/v1/userlands/nobody/stop", { token: h.teacher })).status, 404);
  assert.equal(await admin.tryGetUserland(h.ns, "nobody"), undefined, "a 404 start creates nothing");

  // A caller who may read but not patch cannot start.
  const reader = await h.callerWith("reader", [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["get", "list"] },
  ]);
  const refused = await h.call("POST", `/api/v1/userlands/${alice}/start`, { token: reader });
  assert.equal(refused.status, 403);
  assert.match(String(refused.json.message), /may not patch/);
  assert.equal((await admin.getUserland(h.ns, alice)).spec.enabled, false);

  const deleted = await h.call("DELETE", `/api/v1/userlands/${alice}`, { token: h.teacher });
  assert.equal(deleted.status, 204);
  assert.equal(deleted.text, "");
  assert.equal((await h.call("GET", `/api/v1/userlands/${alice}`, { token: h.teacher })).status, 404);
  assert.equal((await h.call("DELETE", `/api/v1/userlands/${alice}`, { token: h.teacher })).status, 404);
  assert.deepEqual(await list(""), ["bob", "carol"]);
  assert.equal(
    metricValue(await h.metricsText(), "userland_user_manager_userlands_deleted_total", {
      source: "api",
    }),
    1,
  );
});

test("the OpenAPI document describes every endpoint", async (t) => {
  const h: Harness = await startUserManager(t, { templates: [] });
  const r = await h.call("GET", "/openapi.json");
  assert.equal(r.status, 200);
  const doc = r.json as {
    openapi: string;
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
    components: { securitySchemes: Record<string, unknown> };
  };
  assert.match(doc.openapi, /^3\./);
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    "/api/v1/rosters/import",
    "/api/v1/sessions/end",
    "/api/v1/sessions/seen",
    "/api/v1/templates/{template}/assignments",
    "/api/v1/templates/{template}/assignments/{name}",
    "/api/v1/templates/{template}/assignments/{name}/archive",
    "/api/v1/templates/{template}/assignments/{name}/extensions/{user}",
    "/api/v1/templates/{template}/assignments/{name}/feedback",
    "/api/v1/templates/{template}/assignments/{name}/feedback/files",
    "/api/v1/templates/{template}/assignments/{name}/grades-released",
    "/api/v1/templates/{template}/assignments/{name}/publish",
    "/api/v1/templates/{template}/assignments/{name}/rubric",
    "/api/v1/templates/{template}/assignments/{name}/submissions/{user}",
    "/api/v1/templates/{template}/assignments/{name}/submissions/{user}/handin",
    "/api/v1/templates/{template}/assignments/{name}/submissions/{user}/review",
    "/api/v1/templates/{template}/classarchives",
    "/api/v1/templates/{template}/classarchives/{name}",
    "/api/v1/templates/{template}/classarchives/{name}/archive",
    "/api/v1/templates/{template}/classarchives/{name}/cancel",
    "/api/v1/templates/{template}/classarchives/{name}/end",
    "/api/v1/templates/{template}/classarchives/{name}/stop",
    "/api/v1/templates/{template}/exams",
    "/api/v1/templates/{template}/exams/{name}",
    "/api/v1/templates/{template}/exams/{name}/end",
    "/api/v1/templates/{template}/folders/{folder}/files",
    "/api/v1/templates/{template}/gradebook",
    "/api/v1/templates/{template}/gradebook.csv",
    "/api/v1/userlands",
    "/api/v1/userlands/{name}",
    "/api/v1/userlands/{name}/end-sessions",
    "/api/v1/userlands/{name}/start",
    "/api/v1/userlands/{name}/stop",
    "/api/v1/userlands/{name}/visit-consents",
    "/api/v1/userlands/{name}/visits",
    "/api/v1/users/{user}/archive",
    "/api/v1/users/{user}/assignments",
    "/api/v1/users/{user}/userland",
    "/api/v1/users/{user}/userlands",
  ]);
  assert.deepEqual(Object.keys(doc.paths["/api/v1/templates/{template}/assignments"] ?? {}).sort(), [
    "get",
    "post",
  ]);
  assert.deepEqual(Object.keys(doc.paths["/api/v1/userlands"] ?? {}).sort(), ["get", "post"]);
  assert.deepEqual(Object.keys(doc.paths["/api/v1/userlands/{name}"] ?? {}).sort(), ["delete", "get"]);
  assert.deepEqual(
    Object.keys(doc.paths["/api/v1/rosters/import"]?.post?.requestBody?.content ?? {}).sort(),
    ["application/json", "text/csv"],
  );
  for (const upload of [
    "/api/v1/templates/{template}/folders/{folder}/files",
    "/api/v1/templates/{template}/assignments/{name}/feedback/files",
  ])
    assert.deepEqual(Object.keys(doc.paths[upload]?.post?.requestBody?.content ?? {}), [
      "multipart/form-data",
    ]);
  assert.ok(doc.components.securitySchemes.kubernetesToken);
  assert.match(r.text, /\^\[!-~\]/, "the identity rule is the CRD's");
});
