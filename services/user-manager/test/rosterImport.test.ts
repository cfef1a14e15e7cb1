/** Roster imports against the real control plane: idempotent, per-line reports, pruning as a dry run first. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { userlandNameFor } from "../../../api/naming.ts";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { admin, metricValue, startUserManager, type Harness } from "./support.ts";

interface Report {
  created: { line: number; user: string; name: string; templateName: string }[];
  existing: { line: number; user: string; name: string; templateName: string }[];
  invalid: { line: number; user: string; reason: string }[];
  duplicates: { user: string; templateName: string; lines: number[] }[];
  failed: { user: string; reason: string }[];
  pruneTemplates?: string[];
  toDelete: { user: string; name: string; templateName: string }[];
  deleted: { user: string; name: string; templateName: string }[];
  dryRun: boolean;
  message?: string;
}

/** Stored Userlands by user; a user with several Templates' Userlands is listed as "user/template" for each but the first. */
async function stored(h: Harness): Promise<Map<string, Userland>> {
  const byUser = new Map<string, Userland>();
  const sorted = (await admin.listUserlands(h.ns)).sort((a, b) =>
    String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)),
  );
  for (const u of sorted)
    byUser.set(byUser.has(u.spec.user) ? `${u.spec.user}/${u.spec.templateName}` : u.spec.user, u);
  return byUser;
}

const users = (entries: { user: string }[]) => entries.map((e) => e.user).sort();

test("JSON roster: creates what is missing, reports the rest per line; a second run creates nothing", async (t) => {
  const h = await startUserManager(t);
  await admin.createUserland(h.ns, "early-bird", "erin", "jupyter");
  const roster = {
    templateName: "code",
    users: [
      "alice",
      "Alice",
      "alice",
      "bad\nuser",
      "",
      "erin",
      { user: "carol", templateName: "jupyter", enabled: false },
      { user: "dave", templateName: "nosuch" },
    ],
  };
  const importRoster = async () => {
    const r = await h.call("POST", "/api/v1/rosters/import", { token: h.teacher, body: roster });
    assert.equal(r.status, 200, r.text);
    return r.json as unknown as Report;
  };

  const first = await importRoster();
  assert.deepEqual(
    first.created.map((c) => [c.line, c.user, c.name, c.templateName]),
    [
      [1, "alice", userlandNameFor("alice", "code"), "code"],
      [2, "Alice", userlandNameFor("Alice", "code"), "code"],
      [6, "erin", userlandNameFor("erin", "code"), "code"],
      [7, "carol", userlandNameFor("carol", "jupyter"), "jupyter"],
    ],
    "erin has a jupyter Userland; the roster's code gives her a second environment",
  );
  assert.deepEqual(first.existing, []);
  assert.deepEqual(
    first.invalid.map((i) => [i.line, i.user, i.reason]),
    [
      [4, "bad\nuser", "user contains a line break"],
      [5, "", "user is empty"],
      [8, "dave", `Template "nosuch" does not exist in namespace "${h.ns}"`],
    ],
  );
  assert.deepEqual(first.duplicates, [{ user: "alice", templateName: "code", lines: [1, 3] }]);
  assert.deepEqual([first.failed, first.toDelete, first.deleted, first.dryRun], [[], [], [], false]);

  const after = await stored(h);
  assert.equal(after.size, 5);
  assert.equal(after.get("carol")?.spec.enabled, false);
  assert.equal(after.get("alice")?.spec.templateName, "code");
  assert.equal(after.get("erin")?.spec.templateName, "jupyter", "an existing Userland keeps its template");
  assert.equal(after.get("erin")?.metadata.name, "early-bird", "and its name");
  assert.equal(after.get("erin/code")?.spec.templateName, "code");

  const second = await importRoster();
  assert.deepEqual(second.created, []);
  assert.deepEqual(users(second.existing), ["Alice", "alice", "carol", "erin"]);
  assert.equal(second.invalid.length, 3);
  assert.equal((await stored(h)).size, 5, "nothing duplicated");
  assert.equal(
    metricValue(await h.metricsText(), "userland_user_manager_userlands_created_total", {
      source: "roster",
    }),
    4,
  );
});

test("CSV roster with ?template=, garbage lines reported, idempotent", async (t) => {
  const h = await startUserManager(t);
  const csv = [
    "Student name,user,template,enabled",
    '"Doe, Jane",jane@uni.example,,',
    "Koba,Koba1t,,",
    "koba,koba1t,jupyter,false",
    "",
    "Twice,jane@uni.example,,",
    "garbage,, ,",
    "Shifted,Doe, John,x@uni.example,,",
    "Bad,tab\there,,",
    "Bad enabled,frank,,perhaps",
  ].join("\r\n");
  const importCsv = async (token = h.teacher) =>
    h.call("POST", "/api/v1/rosters/import?template=code", {
      token,
      raw: { contentType: "text/csv; charset=utf-8", text: csv },
    });

  const r1 = await importCsv();
  assert.equal(r1.status, 200, r1.text);
  const first = r1.json as unknown as Report;
  assert.deepEqual(
    first.created.map((c) => [c.line, c.user, c.templateName]),
    [
      [2, "jane@uni.example", "code"],
      [3, "Koba1t", "code"],
      [4, "koba1t", "jupyter"],
    ],
  );
  assert.deepEqual(first.duplicates, [{ user: "jane@uni.example", templateName: "code", lines: [2, 6] }]);
  assert.deepEqual(
    first.invalid.map((i) => [i.line, i.reason]),
    [
      [7, "user is empty"],
      [8, "has 6 fields but the header has 4 (quote values that contain commas)"],
      [9, "user contains a control character"],
      [10, 'enabled must be true or false, not "perhaps"'],
    ],
  );
  const all = await stored(h);
  assert.equal(all.size, 3);
  assert.notEqual(
    all.get("Koba1t")?.metadata.name,
    all.get("koba1t")?.metadata.name,
    "case-folded twins get their own Userlands",
  );
  assert.equal(all.get("koba1t")?.spec.enabled, false);

  const second = (await importCsv()).json as unknown as Report;
  assert.deepEqual(second.created, []);
  assert.deepEqual(users(second.existing), ["Koba1t", "jane@uni.example", "koba1t"]);
  assert.equal((await stored(h)).size, 3);

  // The roster route refuses what it cannot read, before doing anything.
  const noUser = await h.call("POST", "/api/v1/rosters/import?template=code", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "name,email\nx,y\n" },
  });
  assert.equal(noUser.status, 400);
  assert.equal(noUser.json.field, "user");
  const unknownTemplate = await h.call("POST", "/api/v1/rosters/import?template=nosuch", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\nnew-person\n" },
  });
  assert.equal(unknownTemplate.status, 404);
  assert.deepEqual([unknownTemplate.json.field, unknownTemplate.json.in], ["template", "query"]);
  const badTemplate = await h.call("POST", "/api/v1/rosters/import?template=Code", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\nnew-person\n" },
  });
  assert.equal(badTemplate.status, 400);
  assert.equal(badTemplate.json.field, "template");
  const badJson = await h.call("POST", "/api/v1/rosters/import", {
    token: h.teacher,
    body: { templateName: "code", users: [1, 2] },
  });
  assert.equal(badJson.status, 400);
  assert.match(String(badJson.json.field), /^users\.0/);
  const extra = await h.call("POST", "/api/v1/rosters/import", {
    token: h.teacher,
    body: { templateName: "code", users: [], prune: true },
  });
  assert.equal(extra.status, 400);
  assert.equal(extra.json.field, "prune");
  const student = await importCsv(h.student);
  assert.equal(student.status, 403);
  assert.equal((await stored(h)).size, 3, "none of the refused imports created anything");
});

test("prune: a dry run lists absentees; dryRun=false deletes them; invalid lines block deletion", async (t) => {
  const h = await startUserManager(t);
  for (const [name, user, template] of [
    ["zed-x", "zed", "code"],
    ["yan-x", "yan", "code"],
    ["other-x", "other", "jupyter"],
  ] as const) {
    await admin.createUserland(h.ns, name, user, template);
  }
  const roster = { templateName: "code", users: ["alice", "yan"] };
  const url = (query: string) => `/api/v1/rosters/import?prune=true${query}`;

  const dry = await h.call("POST", url(""), { token: h.teacher, body: roster });
  assert.equal(dry.status, 200, dry.text);
  const dryReport = dry.json as unknown as Report;
  assert.equal(dryReport.dryRun, true);
  assert.deepEqual(dryReport.pruneTemplates, ["code"], "the roster's template only");
  assert.deepEqual(dryReport.toDelete, [{ user: "zed", name: "zed-x", templateName: "code" }]);
  assert.deepEqual(dryReport.deleted, []);
  assert.deepEqual(users(dryReport.created), ["alice"], "creating is never a dry run");
  assert.ok((await stored(h)).has("zed"), "a dry run deletes nothing");

  // Pruning needs the delete right, checked before anything is written.
  const importer = await h.callerWith("importer", [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["create", "list"] },
  ]);
  const noDelete = await h.call("POST", url("&dryRun=false"), {
    token: importer,
    body: { templateName: "code", users: ["alice", "yan", "newcomer"] },
  });
  assert.equal(noDelete.status, 403);
  assert.match(String(noDelete.json.message), /may not delete/);
  assert.ok(!(await stored(h)).has("newcomer"), "a refused prune creates nothing either");
  const importerDry = await h.call("POST", url(""), { token: importer, body: roster });
  assert.equal(importerDry.status, 200, "a dry run needs no delete right");

  // A roster with an invalid line never deletes: the mangled line may be a student on the list.
  const blocked = await h.call("POST", url("&dryRun=false"), {
    token: h.teacher,
    body: { templateName: "code", users: ["alice", "yan", "z ed "] },
  });
  const blockedReport = blocked.json as unknown as Report;
  assert.equal(blocked.status, 200);
  assert.equal(blockedReport.dryRun, true);
  assert.deepEqual(blockedReport.deleted, []);
  assert.match(blockedReport.message ?? "", /nothing was deleted: the roster has 1 invalid line/);
  assert.ok((await stored(h)).has("zed"));

  const real = await h.call("POST", url("&dryRun=false"), { token: h.teacher, body: roster });
  assert.equal(real.status, 200, real.text);
  const realReport = real.json as unknown as Report;
  assert.equal(realReport.dryRun, false);
  assert.deepEqual(realReport.deleted, [{ user: "zed", name: "zed-x", templateName: "code" }]);
  const left = await stored(h);
  assert.deepEqual(
    [...left.keys()].sort(),
    ["alice", "other", "yan"],
    "other templates' Userlands are untouched",
  );
  assert.ok(!left.get("zed") || left.get("zed")?.metadata.deletionTimestamp);
  assert.equal(
    metricValue(await h.metricsText(), "userland_user_manager_userlands_deleted_total", {
      source: "roster",
    }),
    1,
  );

  const again = (await h.call("POST", url("&dryRun=false"), { token: h.teacher, body: roster }))
    .json as unknown as Report;
  assert.deepEqual(
    [again.created, again.toDelete, again.deleted],
    [[], [], []],
    "a settled roster changes nothing",
  );

  const noTemplate = await h.call("POST", "/api/v1/rosters/import?prune=true", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\nalice\n" },
  });
  assert.equal(noTemplate.status, 400);
  assert.equal(noTemplate.json.field, "template");
});

test("roster limits: too many users or bytes is 413, nothing created", async (t) => {
  const h = await startUserManager(t, { config: { rosterMaxRows: 10, rosterMaxBytes: 2048 } });
  const many = Array.from({ length: 11 }, (_, i) => `student${i}`);
  const json = await h.call("POST", "/api/v1/rosters/import", {
    token: h.teacher,
    body: { templateName: "code", users: many },
  });
  assert.equal(json.status, 413, json.text);
  assert.match(String(json.json.message), /11 users; at most 10/);
  const csv = await h.call("POST", "/api/v1/rosters/import?template=code", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: ["user", ...many].join("\n") },
  });
  assert.equal(csv.status, 413);
  const big = await h.call("POST", "/api/v1/rosters/import?template=code", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\n" + "x".repeat(3000) },
  });
  assert.equal(big.status, 413);
  assert.equal(big.json.error, "PayloadTooLarge");
  assert.equal((await stored(h)).size, 0);
  const ok = await h.call("POST", "/api/v1/rosters/import", {
    token: h.teacher,
    body: { templateName: "code", users: many.slice(0, 10) },
  });
  assert.equal(ok.status, 200);
  assert.equal((ok.json as unknown as Report).created.length, 10);
});
