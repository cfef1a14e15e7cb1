/**
 * The teachers' console and the API signed in with the auth service's session, against the real
 * control plane with real RBAC: only a RoleBinding to the prefixed session user or group gives
 * power, cookie-authenticated writes come only from the console's own pages, a teacher limited by
 * resourceNames cannot act on another class, and a roster changes nothing until confirmed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { UserlandAnnotations } from "../../../api/v1alpha1/index.ts";
import { CONSOLE_ORIGIN, LOGIN_URL, hiddenValue, startConsole } from "./consoleSupport.ts";
import { admin } from "./support.ts";

const api = async (base: string, method: string, path: string, headers: Record<string, string>) => {
  const r = await fetch(base + path, { method, headers });
  const text = await r.text();
  return { status: r.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
};

test("without a RoleBinding a signed-in user gets 403 from the console and the API; without a session, the login page", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "ada-code", "ada", "code");
  const cookie = await h.cookie("nobody@uni.example", ["students"]);

  const page = await h.page("/console/", cookie);
  assert.equal(page.status, 403);
  assert.match(page.text, /userland:nobody@uni\.example may not list userlands/);
  assert.match(
    page.text,
    /--clusterrole=userland-teacher --user=userland:nobody@uni\.example/,
    "says how an admin appoints a teacher",
  );
  // A class teacher without the course-teacher role is refused assignments: the page names the
  // role that grants them, not the one they hold (issue 44 item 2).
  await h.appoint({ user: "tess@uni.example" });
  const assignments = await h.page("/console/assignments?template=code", await h.cookie("tess@uni.example"));
  assert.equal(assignments.status, 403, assignments.text);
  assert.match(assignments.text, /--clusterrole=userland-course-teacher --user=userland:tess@uni\.example/);
  assert.match(page.text, /userland:group:students/);
  assert.equal((await h.page("/console/class?template=code", cookie)).status, 403);

  const list = await api(h.base, "GET", "/api/v1/userlands", { cookie });
  assert.equal(list.status, 403);
  assert.match(String(list.json.message), /^userland:nobody@uni\.example may not list/);
  const stop = await api(h.base, "POST", "/api/v1/userlands/ada-code/stop", {
    cookie,
    origin: CONSOLE_ORIGIN,
  });
  assert.equal(stop.status, 403);
  const viaConsole = await h.post("/console/class/actions", cookie, {
    template: "code",
    row: "stop:ada-code",
  });
  assert.equal(viaConsole.status, 403);
  assert.notEqual((await admin.getUserland(h.ns, "ada-code")).spec.enabled, false, "still running");

  // No session: browsers go to the auth service and come back; API clients get 401.
  const anonymous = await fetch(`${h.base}/console/class?template=code`, { redirect: "manual" });
  assert.equal(anonymous.status, 302);
  const login = new URL(anonymous.headers.get("location") ?? "");
  assert.equal(`${login.origin}${login.pathname}`, LOGIN_URL);
  assert.equal(login.searchParams.get("rd"), `${CONSOLE_ORIGIN}/console/class?template=code`);
  assert.equal((await api(h.base, "GET", "/api/v1/userlands", {})).status, 401);
  // A session signed by another key is no session.
  const forged = await api(h.base, "GET", "/api/v1/userlands", {
    cookie: "userland_session=eyJhbGciOiJFUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJ4In0.c2ln",
  });
  assert.equal(forged.status, 401);
});

test("a teacher bound by user sees the class and starts, stops and deletes, one by one and a selection", async (t) => {
  const h = await startConsole(t);
  for (const user of ["ada", "bob", "cy"]) await admin.createUserland(h.ns, `${user}-code`, user, "code");
  await admin.createUserland(h.ns, "dan-jupyter", "dan", "jupyter");
  await admin.patchUserland(h.ns, "ada-code", {
    metadata: {
      labels: { "userland.dev/class": "cs101" },
      annotations: {
        [UserlandAnnotations.lastActivity]: new Date(Date.now() - 600_000)
          .toISOString()
          .replace(/\.\d+Z$/, "Z"),
      },
    },
  });
  await h.appoint({ user: "alice@uni.example" });
  const cookie = await h.cookie("alice@uni.example");

  const index = await h.page("/console/", cookie);
  assert.equal(index.status, 200, index.text.slice(0, 500));
  assert.match(index.text, /href="\/console\/class\?template=code">code</);
  assert.match(index.text, /href="\/console\/class\?template=code&#38;class=cs101">cs101</);

  const klass = await h.page("/console/class?template=code", cookie);
  assert.equal(klass.status, 200);
  for (const user of ["ada", "bob", "cy"])
    assert.match(klass.text, new RegExp(`<span class="user">${user}</span>`));
  assert.doesNotMatch(
    klass.text,
    /<span class="user">dan</,
    "another Template's Userland is not in this class",
  );
  assert.match(klass.text, /10 min ago/, "last activity");
  const narrowed = await h.page("/console/class?template=code&class=cs101", cookie);
  assert.match(narrowed.text, /<span class="user">ada<\/span>/);
  assert.doesNotMatch(narrowed.text, /<span class="user">bob<\/span>/, "only the labelled class");

  const stop = await h.post("/console/class/actions", cookie, { template: "code", row: "stop:bob-code" });
  assert.equal(stop.status, 303);
  assert.equal(stop.headers.get("location"), "/console/class?template=code&done=stop&count=1");
  assert.equal((await admin.getUserland(h.ns, "bob-code")).spec.enabled, false);
  assert.notEqual((await admin.getUserland(h.ns, "ada-code")).spec.enabled, false, "only bob");
  assert.match((await h.page(stop.headers.get("location") ?? "", cookie)).text, /Stopped 1 environment\./);

  const stopAll = await h.post("/console/class/actions", cookie, {
    template: "code",
    action: "stop",
    name: ["ada-code", "cy-code"],
  });
  assert.equal(stopAll.status, 303);
  for (const n of ["ada-code", "cy-code"])
    assert.equal((await admin.getUserland(h.ns, n)).spec.enabled, false);
  const startAll = await h.post("/console/class/actions", cookie, {
    template: "code",
    action: "start",
    name: ["ada-code", "bob-code", "cy-code"],
  });
  assert.equal(startAll.status, 303);
  for (const n of ["ada-code", "bob-code", "cy-code"]) {
    const u = await admin.getUserland(h.ns, n);
    assert.equal(u.spec.enabled, true);
    assert.ok(
      u.metadata.annotations?.[UserlandAnnotations.lastActivity],
      "start counts as activity (the API's start)",
    );
  }

  // Delete asks first; nothing is deleted until confirmed.
  const ask = await h.post("/console/class/actions", cookie, { template: "code", row: "delete:cy-code" });
  assert.equal(ask.status, 200);
  const askPage = await ask.text();
  assert.match(askPage, /Delete 1 environment\?/);
  assert.ok(await admin.tryGetUserland(h.ns, "cy-code"), "not deleted before confirming");
  const confirmed = await h.post("/console/class/actions", cookie, {
    template: "code",
    action: "delete",
    name: "cy-code",
    confirm: "yes",
  });
  assert.equal(confirmed.status, 303);
  await assertGone(h.ns, "cy-code");

  // Each action is logged with the teacher's identity: the API's request line, and the console's.
  const stopLines = h.logs.filter((l) => l.route === "/api/v1/userlands/:name/stop");
  assert.ok(stopLines.length > 0, JSON.stringify(h.logs.slice(-5)));
  for (const line of stopLines) assert.equal(line.caller, "userland:alice@uni.example", JSON.stringify(line));
  assert.ok(
    h.logs.some(
      (l) => l.msg === "stopped Userland" && l.by === "userland:alice@uni.example" && l.name === "bob-code",
    ),
    "the API handler's own line",
  );
  assert.ok(
    h.logs.some(
      (l) =>
        l.msg === "console: class action" && l.by === "userland:alice@uni.example" && l.action === "stop",
    ),
  );

  // The API itself with the session, from the console's origin.
  const viaApi = await api(h.base, "POST", "/api/v1/userlands/bob-code/stop", {
    cookie,
    origin: CONSOLE_ORIGIN,
  });
  assert.equal(viaApi.status, 200);
  assert.equal((await admin.getUserland(h.ns, "bob-code")).spec.enabled, false);
  const listed = await api(h.base, "GET", "/api/v1/userlands?template=code", { cookie });
  assert.equal(listed.status, 200);
  assert.equal((listed.json.items as unknown[]).length, 2);

  // Console pages: no script, no framing, never cached.
  const headers = (await fetch(`${h.base}/console/`, { headers: { cookie } })).headers;
  assert.match(headers.get("content-security-policy") ?? "", /default-src 'none'/);
  assert.doesNotMatch(headers.get("content-security-policy") ?? "", /script-src/);
  assert.match(headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  assert.equal(headers.get("cache-control"), "no-store");
  assert.doesNotMatch(klass.text, /<script/);
});

/**
 * Posts `form` to the console's roster preview as the teacher with `cookie`; resolves with the
 * page (asserting a 200) and its sections' text by id.
 */
async function previewRoster(
  base: string,
  cookie: string,
  form: FormData,
): Promise<{ page: string; part: (id: string) => string }> {
  const response = await fetch(`${base}/console/roster/preview`, {
    method: "POST",
    headers: { cookie, origin: CONSOLE_ORIGIN },
    body: form,
  });
  const page = await response.text();
  assert.equal(response.status, 200, page.slice(0, 800));
  const part = (id: string) =>
    page.slice(page.indexOf(`id="${id}"`), page.indexOf("</section>", page.indexOf(`id="${id}"`)));
  return { page, part };
}

async function assertGone(ns: string, name: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const u = await admin.tryGetUserland(ns, name);
    if (!u || u.metadata.deletionTimestamp) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${name} was not deleted`);
}

test("a teacher appointed through an identity-provider group", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "ada-code", "ada", "code");
  await h.appoint({ group: "teachers" });

  const teacher = await h.cookie("carol@uni.example", ["staff", "teachers"]);
  const page = await h.page("/console/class?template=code", teacher);
  assert.equal(page.status, 200);
  assert.match(page.text, /<span class="user">ada<\/span>/);
  const stop = await h.post("/console/class/actions", teacher, { template: "code", row: "stop:ada-code" });
  assert.equal(stop.status, 303);
  assert.equal((await admin.getUserland(h.ns, "ada-code")).spec.enabled, false);

  // The same person without the group, and the group name as a user, have no power.
  assert.equal(
    (await h.page("/console/class?template=code", await h.cookie("carol@uni.example", ["staff"]))).status,
    403,
  );
  assert.equal((await h.page("/console/class?template=code", await h.cookie("group:teachers"))).status, 403);
  // A group named like a Kubernetes built-in gets the prefix too: no system:masters through a session.
  assert.equal((await h.page("/console/", await h.cookie("eve", ["system:masters"]))).status, 403);
});

test("a cookie-authenticated write from another origin is refused; a bearer token is not cookie-authenticated", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "ada-code", "ada", "code");
  await h.appoint({ user: "alice" });
  const cookie = await h.cookie("alice");
  const running = async () => (await admin.getUserland(h.ns, "ada-code")).spec.enabled !== false;

  // A student's environment on another Template's host is the same site: the cookie goes along.
  const foreign: Record<string, string>[] = [
    { origin: "https://code.example.test" },
    { origin: "null", "sec-fetch-site": "same-site" },
    { "sec-fetch-site": "cross-site" },
    { origin: "null" },
  ];
  for (const headers of foreign) {
    const r = await api(h.base, "POST", "/api/v1/userlands/ada-code/stop", { cookie, ...headers });
    assert.equal(r.status, 403, JSON.stringify(headers));
    assert.match(String(r.json.message), /cross-site request refused/);
    const form = await fetch(`${h.base}/console/class/actions`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
      body: "template=code&row=stop%3Aada-code",
    });
    assert.equal(form.status, 403, `console form with ${JSON.stringify(headers)}`);
    assert.ok(await running(), "nothing stopped");
  }
  const del = await api(h.base, "DELETE", "/api/v1/userlands/ada-code", {
    cookie,
    origin: "https://evil.example",
  });
  assert.equal(del.status, 403);
  assert.ok(await admin.tryGetUserland(h.ns, "ada-code"));

  // A no-referrer page of the console (an older one, still open): Origin "null" with Sec-Fetch-Site same-origin is ours.
  const own = await h.post(
    "/console/class/actions",
    cookie,
    { template: "code", row: "stop:ada-code" },
    "null",
  );
  assert.equal(own.status, 403, "Origin null without fetch metadata is an opaque origin");
  const ownWithMetadata = await fetch(`${h.base}/console/class/actions`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie,
      origin: "null",
      "sec-fetch-site": "same-origin",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "template=code&row=stop%3Aada-code",
  });
  assert.equal(ownWithMetadata.status, 303);
  assert.equal(await running(), false);

  // A bearer token is no ambient credential: another Origin does not matter (and wins over a cookie).
  const byToken = await api(h.base, "POST", "/api/v1/userlands/ada-code/start", {
    authorization: `Bearer ${h.teacher}`,
    origin: "https://evil.example",
    cookie,
  });
  assert.equal(byToken.status, 200);
});

test("a teacher limited by resourceNames sees and acts on their class only", async (t) => {
  const h = await startConsole(t);
  for (const user of ["ada", "bob"]) await admin.createUserland(h.ns, `${user}-code`, user, "code");
  for (const user of ["cy", "dan"]) await admin.createUserland(h.ns, `${user}-jupyter`, user, "jupyter");
  await h.appoint({ user: "alice" }, [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get", "patch", "delete"],
      resourceNames: ["ada-code", "bob-code"],
    },
    // The console's door for a teacher named by resourceNames (issue 29).
    { apiGroups: ["userland.dev"], resources: ["userlands/console"], verbs: ["get"] },
  ]);
  const cookie = await h.cookie("alice");

  const mine = await h.page("/console/class?template=code", cookie);
  assert.equal(mine.status, 200);
  assert.match(mine.text, /<span class="user">ada<\/span>/);
  assert.match(mine.text, /that you may see one by one/);
  const index = await h.page("/console/", cookie);
  assert.equal(index.status, 200);
  assert.doesNotMatch(index.text, /jupyter/, "the other class is not even listed");

  const other = await h.page("/console/class?template=jupyter", cookie);
  assert.equal(other.status, 403);
  const stopOther = await h.post("/console/class/actions", cookie, {
    template: "jupyter",
    action: "stop",
    name: ["cy-jupyter", "dan-jupyter"],
  });
  assert.equal(stopOther.status, 403);
  assert.match(await stopOther.text(), /may not patch userlands\.userland\.dev &#34;cy-jupyter&#34;/);
  // Naming another class's Userland under one's own class changes nothing either.
  const smuggled = await h.post("/console/class/actions", cookie, {
    template: "code",
    action: "delete",
    name: ["cy-jupyter"],
    confirm: "yes",
  });
  assert.equal(smuggled.status, 403);
  for (const n of ["cy-jupyter", "dan-jupyter"]) {
    const u = await admin.getUserland(h.ns, n);
    assert.notEqual(u.spec.enabled, false);
    assert.equal(u.metadata.deletionTimestamp, undefined);
  }
  assert.equal(
    (await api(h.base, "POST", "/api/v1/userlands/cy-jupyter/stop", { cookie, origin: CONSOLE_ORIGIN }))
      .status,
    403,
  );

  const stopMine = await h.post("/console/class/actions", cookie, {
    template: "code",
    action: "stop",
    name: ["ada-code", "bob-code"],
  });
  assert.equal(stopMine.status, 303);
  assert.equal((await admin.getUserland(h.ns, "ada-code")).spec.enabled, false);
  // A roster import needs create and list on the namespace: not for this teacher.
  assert.equal((await h.page("/console/roster?template=code", cookie)).status, 403);
});

test("a roster upload shows the changes first and changes nothing until confirmed", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "old-code", "old@uni.example", "code");
  await admin.createUserland(h.ns, "gone-code", "gone@uni.example", "code");
  await h.appoint({ user: "alice" });
  const cookie = await h.cookie("alice");

  const form = await h.page("/console/roster?template=code", cookie);
  assert.equal(form.status, 200);
  assert.match(form.text, /enctype="multipart\/form-data"/);

  const csv =
    'name,user\nNew One,new1@uni.example\nOld,old@uni.example\nBad,"bad\tname"\nNew Two,new2@uni.example\n';
  const upload = new FormData();
  upload.append("template", "code");
  upload.append("file", new Blob([csv], { type: "text/csv" }), "class.csv");
  upload.append("text", "");
  upload.append("prune", "true");
  const before = (await admin.listUserlands(h.ns)).map((u) => u.metadata.name).sort();
  const { page, part } = await previewRoster(h.base, cookie, upload);
  assert.match(part("to-add"), /To add \(2\)/);
  assert.match(part("to-add"), /<td>2<\/td>\s*<td>new1@uni\.example<\/td>/);
  assert.match(part("to-add"), /<td>5<\/td>\s*<td>new2@uni\.example<\/td>/);
  assert.match(part("unchanged"), /<td>3<\/td>\s*<td>old@uni\.example<\/td>/);
  assert.match(
    part("rejected"),
    /<td>4<\/td>\s*<td>bad\tname<\/td>\s*<td>user contains a control character<\/td>/,
  );
  assert.match(part("to-remove"), /gone@uni\.example/);
  assert.match(page, /nobody will be removed/, "a roster with rejected rows never removes anyone");
  assert.deepEqual(
    (await admin.listUserlands(h.ns)).map((u) => u.metadata.name).sort(),
    before,
    "nothing written",
  );

  // Confirming sends the same roster back through the import.
  const fields = {
    template: hiddenValue(page, "template") ?? "",
    format: hiddenValue(page, "format") ?? "",
    roster: hiddenValue(page, "roster") ?? "",
    prune: hiddenValue(page, "prune") ?? "",
  };
  assert.equal(fields.roster, csv);
  assert.equal(fields.format, "csv");
  const applied = await h.post("/console/roster/apply", cookie, fields);
  const result = await applied.text();
  assert.equal(applied.status, 200, result.slice(0, 800));
  assert.match(result, /Added 2, removed 0/);
  const users = (await admin.listUserlands(h.ns)).map((u) => u.spec.user).sort();
  assert.deepEqual(users, ["gone@uni.example", "new1@uni.example", "new2@uni.example", "old@uni.example"]);
  const created = (await admin.listUserlands(h.ns)).find((u) => u.spec.user === "new1@uni.example");
  assert.equal(
    created?.metadata.annotations?.[UserlandAnnotations.createdBy],
    "userland:alice",
    "created as the teacher",
  );

  // JSON pasted into the text box; the apply from another origin is refused.
  const json = new FormData();
  json.append("template", "code");
  json.append("text", JSON.stringify({ users: ["new3@uni.example"] }));
  const { page: jsonPage } = await previewRoster(h.base, cookie, json);
  assert.match(jsonPage, /To add \(1\)/);
  assert.equal(hiddenValue(jsonPage, "format"), "json");
  const crossSite = await h.post(
    "/console/roster/apply",
    cookie,
    { template: "code", format: "json", roster: JSON.stringify({ users: ["new3@uni.example"] }) },
    "https://code.example.test",
  );
  assert.equal(crossSite.status, 403);
  assert.equal((await admin.listUserlands(h.ns)).length, 4, "nothing created cross-site");
});

test("a roster naming two Templates: the preview and the result show each row's Template, and removal is the page's Template only", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "gone-code", "gone@uni.example", "code");
  await admin.createUserland(h.ns, "gone-jupyter", "gone@uni.example", "jupyter");
  await h.appoint({ user: "alice" });
  const cookie = await h.cookie("alice");

  const form = await h.page("/console/roster?template=code", cookie);
  assert.match(form.text, /a student in two classes\s+is\s+on\s+two\s+rows/);
  assert.match(form.text, /other Templates'\s+are\s+never\s+touched/);

  const csv = "user,template\nkim,\nkim,jupyter\nlee,\nkim,jupyter\n";
  const upload = new FormData();
  upload.append("template", "code");
  upload.append("text", csv);
  upload.append("prune", "true");
  const { page, part } = await previewRoster(h.base, cookie, upload);
  assert.match(part("to-add"), /To add \(3\)/);
  assert.match(part("to-add"), /<td>2<\/td>\s*<td>kim<\/td>\s*<td>code<\/td>/);
  assert.match(part("to-add"), /<td>3<\/td>\s*<td>kim<\/td>\s*<td>jupyter<\/td>/);
  assert.match(part("to-add"), /<td>4<\/td>\s*<td>lee<\/td>\s*<td>code<\/td>/);
  assert.match(part("duplicates"), /<td>kim<\/td>\s*<td>jupyter<\/td>\s*<td>3, 5<\/td>/);
  // gone@ is on no row: only their environment of the page's Template goes.
  assert.match(part("to-remove"), /To remove \(not on the roster\) \(1\)/);
  assert.match(
    part("to-remove"),
    /<td>gone@uni\.example<\/td>\s*<td>code<\/td>\s*<td class="mono">gone-code<\/td>/,
  );
  assert.match(page, /id="prune-scope"[^>]*>\s*Only environments of <code>code<\/code> are removed/);

  const applied = await h.post("/console/roster/apply", cookie, {
    template: hiddenValue(page, "template") ?? "",
    format: hiddenValue(page, "format") ?? "",
    roster: hiddenValue(page, "roster") ?? "",
    prune: hiddenValue(page, "prune") ?? "",
  });
  const result = await applied.text();
  assert.equal(applied.status, 200, result.slice(0, 800));
  assert.match(result, /Added 3, removed 1, 0 failed/);
  assert.match(result, /<td>3<\/td>\s*<td>kim<\/td>\s*<td>jupyter<\/td>\s*<td class="mono">kim-jupyter-/);
  assert.match(result, /<td>gone@uni\.example<\/td>\s*<td>code<\/td>\s*<td class="mono">gone-code<\/td>/);
  const left = (await admin.listUserlands(h.ns)).map((u) => `${u.spec.user}/${u.spec.templateName}`).sort();
  assert.deepEqual(left, ["gone@uni.example/jupyter", "kim/code", "kim/jupyter", "lee/code"]);
});

test("a large class reads in pages of 100, and a search or a state finds the students across them", async (t) => {
  const h = await startConsole(t);
  const ids = Array.from({ length: 130 }, (_, i) => `s${String(i).padStart(3, "0")}`);
  const users = ids.map((id) => `${id}@uni.example`);
  for (const id of ids) await admin.createUserland(h.ns, `${id}-code`, `${id}@uni.example`, "code");
  await admin.patchUserland(h.ns, "s007-code", { spec: { enabled: false } });
  await h.appoint({ user: "alice" });
  const cookie = await h.cookie("alice");
  const rowsOf = (text: string) => [...text.matchAll(/<span class="user">([^<]+)<\/span>/g)].map((m) => m[1]);

  const first = await h.page("/console/class?template=code", cookie);
  assert.equal(first.status, 200);
  assert.match(first.text, /130 environments of Template/);
  assert.deepEqual(rowsOf(first.text), users.slice(0, 100), "the first 100, in order");
  assert.match(first.text, /1–100 of 130/);
  assert.match(first.text, /href="\/console\/class\?template=code&#38;page=2" rel="next"/);

  const second = await h.page("/console/class?template=code&page=2", cookie);
  assert.deepEqual(rowsOf(second.text), users.slice(100), "the other 30");
  assert.match(second.text, /101–130 of 130/);
  // Past the last page: the last page.
  assert.deepEqual(
    rowsOf((await h.page("/console/class?template=code&page=99", cookie)).text),
    users.slice(100),
  );

  const found = await h.page("/console/class?template=code&q=S12", cookie);
  assert.deepEqual(
    rowsOf(found.text),
    users.filter((u) => u.startsWith("s12")),
    "by part of the id, any case",
  );
  assert.match(found.text, /10 match/);
  assert.doesNotMatch(found.text, /rel="next"/, "one page");
  const stopped = await h.page("/console/class?template=code&state=Stopped", cookie);
  assert.deepEqual(rowsOf(stopped.text), ["s007@uni.example"]);
  assert.match((await h.page("/console/class?template=code&q=nobody", cookie)).text, /No student matches/);
});
