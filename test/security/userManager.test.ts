/**
 * Hostile input against the user-manager (in-process, under a ServiceAccount with exactly its
 * documented rights, against the real control plane, real TokenReview and access reviews): roster
 * files with duplicates, garbage, wrong columns and huge sizes, oversized requests, path tricks and
 * racing imports. Each row states what the service answers and checks what is stored afterwards:
 * nothing half-created, nothing duplicated. Also a flood of unknown bearer tokens, which must not
 * become a flood of TokenReviews.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { test } from "node:test";
import { userlandNameFor } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { TokenAuthenticator } from "../../services/user-manager/auth/tokenReview.ts";
import { HttpError } from "../../services/user-manager/errors.ts";
import { createMetrics } from "../../services/user-manager/metrics.ts";
import {
  admin,
  metricValue,
  startUserManager,
  type ApiResponse,
} from "../../services/user-manager/test/support.ts";

interface Report {
  created: { line: number; user: string; name: string }[];
  existing: { line: number; user: string; name: string }[];
  invalid: { line: number; user: string; reason: string }[];
  duplicates: { user: string; templateName: string; lines: number[] }[];
  failed: { user: string; reason: string }[];
  toDelete: { user: string }[];
  deleted: { user: string }[];
  dryRun: boolean;
  message?: string;
}

interface Row {
  name: string;
  run: () => Promise<void>;
}

test("hostile rosters and requests against the user-manager", async (t) => {
  const h = await startUserManager(t);
  const stored = async (): Promise<Userland[]> => admin.listUserlands(h.ns);
  const users = async () => (await stored()).map((u) => u.spec.user).sort();
  /** `token` null: no Authorization header. */
  const csv = (text: string, query = "?template=code", token: string | null = h.teacher) =>
    h.call("POST", `/api/v1/rosters/import${query}`, {
      token: token ?? undefined,
      raw: { contentType: "text/csv", text },
    });
  const json = (body: unknown, query = "") =>
    h.call("POST", `/api/v1/rosters/import${query}`, { token: h.teacher, body });
  const rawJson = (text: string) =>
    h.call("POST", "/api/v1/rosters/import", {
      token: h.teacher,
      raw: { contentType: "application/json", text },
    });
  const report = (r: ApiResponse) => r.json as unknown as Report;
  /** A request with the path exactly as given (no URL normalisation), as the teacher. */
  const verbatim = (method: string, path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const base = new URL(h.base);
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          method,
          path,
          headers: { authorization: `Bearer ${h.teacher}`, ...headers },
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
        },
      );
      req.on("error", reject);
      req.end();
    });

  /** Runs `act` and checks that the set of stored identities did not change. */
  async function nothingStored(act: () => Promise<ApiResponse>, status: number, field?: string) {
    const before = await users();
    const r = await act();
    assert.equal(r.status, status, r.text.slice(0, 500));
    assert.equal(typeof r.json.message, "string", "the error says why");
    if (field !== undefined) assert.equal(r.json.field, field, r.text.slice(0, 500));
    assert.deepEqual(await users(), before, "nothing was created or deleted");
    return r;
  }

  const rows: Row[] = [];
  const row = (name: string, run: () => Promise<void>) => rows.push({ name, run });

  // --- Duplicates ---------------------------------------------------------------------------------
  row("JSON roster listing one user three times: one Userland, reported once as a duplicate", async () => {
    const r = await json({ templateName: "code", users: ["dup1", "dup1", { user: "dup1" }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      report(r).created.map((c) => c.user),
      ["dup1"],
    );
    assert.deepEqual(report(r).duplicates, [{ user: "dup1", templateName: "code", lines: [1, 2, 3] }]);
    assert.equal((await stored()).filter((u) => u.spec.user === "dup1").length, 1);
  });
  row(
    "CSV listing a user with two templates: one environment each; the same template again with other settings: the first line wins, the later one is invalid",
    async () => {
      const r = await csv("user,template,enabled\ndup2,code,\ndup2,jupyter,\ndup2,code,false\n");
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        report(r).created.map((c) => [c.line, c.user]),
        [
          [2, "dup2"],
          [3, "dup2"],
        ],
      );
      assert.deepEqual(
        report(r).invalid.map((i) => i.line),
        [4],
      );
      const mine = (await stored()).filter((u) => u.spec.user === "dup2");
      assert.deepEqual(mine.map((u) => u.spec.templateName).sort(), ["code", "jupyter"]);
      assert.ok(
        mine.every((u) => u.spec.enabled !== false),
        "the first code line (enabled) is used",
      );
    },
  );
  row("the same roster imported again creates nothing", async () => {
    const r = await json({ templateName: "code", users: ["dup1", "dup2"] });
    assert.equal(r.status, 200);
    assert.deepEqual(report(r).created, []);
    assert.deepEqual(
      report(r)
        .existing.map((e) => e.user)
        .sort(),
      ["dup1", "dup2"],
    );
  });
  row("three identical rosters imported at the same moment: every user exactly once", async () => {
    const roster = { templateName: "code", users: Array.from({ length: 15 }, (_, i) => `race${i}`) };
    const results = await Promise.all([json(roster), json(roster), json(roster)]);
    for (const r of results) assert.equal(r.status, 200, r.text);
    const created = results.flatMap((r) => report(r).created.map((c) => c.user));
    assert.equal(created.length, 15, `created once each, got ${created.length}`);
    assert.equal(new Set(created).size, 15);
    for (const r of results) assert.deepEqual(report(r).failed, [], "a lost race is not a failure");
    const race = (await stored()).filter((u) => u.spec.user.startsWith("race"));
    assert.equal(race.length, 15);
  });
  // --- What a 409 tells (issue 13 item 7) --------------------------------------------------------------
  row(
    "a caller with only create (the auth service's provisioning token) learns nothing of another user's Userland from a 409",
    async () => {
      const provisioner = await h.callerWith("provisioner", [
        { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["create"] },
      ]);
      const first = await h.call("POST", "/api/v1/userlands", {
        token: h.teacher,
        body: { user: "secret-owner", templateName: "jupyter", enabled: false },
      });
      assert.equal(first.status, 201, first.text);
      const name = userlandNameFor("secret-owner", "jupyter");
      // Auto-provisioning's request: the default Template, only if the user has no environment yet.
      const r = await h.call("POST", "/api/v1/userlands", {
        token: provisioner,
        body: { user: "secret-owner", templateName: "code", ifUserHasNone: true },
      });
      assert.equal(r.status, 409, r.text);
      assert.equal(r.json.userland, undefined, r.text);
      assert.equal(r.json.names, undefined, r.text);
      assert.ok(!r.text.includes(name) && !r.text.includes("jupyter"), r.text);
      // The same pair again: the 409 says no more than the request did (no name, state or view).
      const pair = await h.call("POST", "/api/v1/userlands", {
        token: provisioner,
        body: { user: "secret-owner", templateName: "jupyter" },
      });
      assert.equal(pair.status, 409, pair.text);
      assert.equal(pair.json.userland, undefined, pair.text);
      assert.equal(pair.json.names, undefined, pair.text);
      assert.ok(!pair.text.includes(name) && !pair.text.includes("enabled"), pair.text);
      // A caller who may get it sees which Userland it is (control).
      for (const body of [
        { user: "secret-owner", templateName: "code", ifUserHasNone: true },
        { user: "secret-owner", templateName: "jupyter" },
      ]) {
        const teacher = await h.call("POST", "/api/v1/userlands", { token: h.teacher, body });
        assert.equal(teacher.status, 409, teacher.text);
        assert.equal((teacher.json.userland as { name?: string } | undefined)?.name, name);
      }
    },
  );
  row("five concurrent creates of one user: one 201, four 409, one Userland", async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        h.call("POST", "/api/v1/userlands", {
          token: h.teacher,
          body: { user: "racer", templateName: "code" },
        }),
      ),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
    assert.equal((await stored()).filter((u) => u.spec.user === "racer").length, 1);
  });
  row("identities differing only in case or punctuation are different students", async () => {
    const list = ["Case", "case", "CASE", "c.ase", "c-ase", "c_ase"];
    const r = await json({ templateName: "code", users: list });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(report(r).duplicates, []);
    assert.equal(report(r).created.length, list.length);
    assert.equal(new Set(report(r).created.map((c) => c.name)).size, list.length, "distinct names");
  });

  // --- Garbage and wrong columns ---------------------------------------------------------------------
  row("CSV without a user column: 400 naming the column, nothing created", async () => {
    const r = await nothingStored(() => csv("name,email\nMallory,m@example.org\n"), 400, "user");
    assert.match(String(r.json.message), /user/);
  });
  row("CSV with only a header: nothing to do, nothing created", async () => {
    const before = await users();
    const r = await csv("user,template\n");
    assert.ok(r.status === 200 || r.status === 400, r.text);
    if (r.status === 200) assert.deepEqual(report(r).created, []);
    assert.deepEqual(await users(), before);
  });
  row("an empty CSV body: 400, nothing created", async () => {
    await nothingStored(() => csv(""), 400);
  });
  row("64 KiB of random bytes as CSV: 400, nothing created", async () => {
    await nothingStored(() => csv(randomBytes(64 * 1024).toString("latin1")), 400);
  });
  row("a CSV quoted field that never closes: 400 naming the line, nothing created", async () => {
    const r = await nothingStored(() => csv('user\nok1\n"unclosed\nok2\n'), 400);
    assert.match(String(r.json.message), /line 3/);
  });
  row("text after a closing quote: 400 naming the line, nothing created", async () => {
    await nothingStored(() => csv('user\n"a"b\n'), 400);
  });
  row("CSV with an unquoted comma (shifted columns): that line is invalid, not read shifted", async () => {
    const r = await csv("name,user,template\nDoe, Jane,jane,code\nshift-ok,shift-ok,code\n");
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      report(r).invalid.map((i) => i.line),
      [2],
    );
    const all = await users();
    assert.ok(!all.includes("Jane") && !all.includes("jane"), "no user read from a shifted column");
    assert.ok(all.includes("shift-ok"));
  });
  const badIdentities: [string, string][] = [
    ['"bad\nline"', "a line break inside quotes"],
    ['"tab\there"', "a tab"],
    ['" padded"', "a quoted leading space"],
    ["ünïcode", "non-ASCII"],
    ["\u0430lice", "a Cyrillic look-alike of alice"],
    ["zero\u200bwidth", "a zero-width space"],
    ["x".repeat(257), "257 characters"],
    ["nul\u0000byte", "a NUL byte"],
  ];
  for (const [value, what] of badIdentities) {
    row(`a roster line with ${what} is reported invalid and nothing is created for it`, async () => {
      const before = await users();
      const r = await csv(`user\n${value}\n`);
      assert.equal(r.status, 200, r.text);
      assert.equal(report(r).invalid.length, 1, r.text);
      assert.deepEqual(report(r).created, []);
      assert.deepEqual(await users(), before, "nothing created, not even a rewritten identity");
    });
  }
  row("JSON roster whose users is a string: 400 naming users", async () => {
    await nothingStored(() => json({ templateName: "code", users: "mallory" }), 400, "users");
  });
  row("JSON roster with numbers and null as users: 400 naming the entry", async () => {
    const r = await nothingStored(() => json({ templateName: "code", users: [1, null] }), 400);
    assert.match(String(r.json.field), /^users\.0/);
  });
  row("JSON roster with an unknown field: 400 naming it", async () => {
    await nothingStored(() => json({ templateName: "code", users: ["x1"], admin: true }), 400, "admin");
  });
  row("JSON roster entry with an unknown field: 400", async () => {
    await nothingStored(
      () => json({ templateName: "code", users: [{ user: "x2", namespace: "kube-system" }] }),
      400,
    );
  });
  row("JSON with __proto__: 400, nothing created", async () => {
    await nothingStored(
      () => rawJson('{"templateName":"code","users":["proto1"],"__proto__":{"isAdmin":true}}'),
      400,
    );
  });
  row("JSON with constructor.prototype: 400, nothing created", async () => {
    await nothingStored(
      () => rawJson('{"templateName":"code","users":["proto2"],"constructor":{"prototype":{"x":1}}}'),
      400,
    );
  });
  row("JSON nested 100,000 levels deep: a 4xx, the service stays up", async () => {
    const deep = `{"templateName":"code","users":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const before = await users();
    const r = await rawJson(deep);
    assert.ok(r.status >= 400 && r.status < 500, `${r.status} ${r.text.slice(0, 200)}`);
    assert.deepEqual(await users(), before);
    assert.equal((await h.call("GET", "/healthz")).status, 200);
  });
  row("not JSON at all: 400, nothing created", async () => {
    await nothingStored(() => rawJson("{templateName: code, users: [mallory]"), 400);
  });
  for (const contentType of ["application/xml", "multipart/form-data; boundary=x", "text/plain"]) {
    row(`a roster sent as ${contentType}: 415, nothing created`, async () => {
      await nothingStored(
        () =>
          h.call("POST", "/api/v1/rosters/import?template=code", {
            token: h.teacher,
            raw: { contentType, text: "user\nct-user\n" },
          }),
        415,
      );
    });
  }
  row("a roster with an invalid line never prunes, even with dryRun=false", async () => {
    const before = await users();
    const r = await json({ templateName: "code", users: ["dup1", " spaced "] }, "?prune=true&dryRun=false");
    assert.equal(r.status, 200, r.text);
    assert.equal(report(r).dryRun, true);
    assert.deepEqual(report(r).deleted, []);
    assert.match(report(r).message ?? "", /nothing was deleted/);
    assert.deepEqual(await users(), before);
  });
  row("an unknown template in ?template=: 404, nothing created", async () => {
    await nothingStored(() => csv("user\nnew-person\n", "?template=nosuch"), 404, "template");
  });

  // --- Huge input ---------------------------------------------------------------------------------------
  row("a roster of 5,001 users (limit 5,000): 413, nothing created", async () => {
    const lines = Array.from({ length: 5001 }, (_, i) => `bulk${i}`);
    const r = await nothingStored(() => csv(["user", ...lines].join("\n")), 413);
    assert.match(String(r.json.message), /5001 users; at most 5000/);
  });
  row("a 2 MiB + 1 byte roster (limit 2 MiB): 413, nothing created", async () => {
    const text = `user\nbig\n${" ".repeat(2 * 1024 * 1024 - 8)}`;
    await nothingStored(() => csv(text), 413);
  });
  row("an unauthenticated 3 MiB roster is refused with 401 before it is read", async () => {
    await nothingStored(() => csv(`user\n${"x\n".repeat(1_500_000)}`, "?template=code", null), 401);
  });
  row("an unauthenticated small roster is refused with 401", async () => {
    await nothingStored(() => csv("user\nanon-made\n", "?template=code", null), 401);
  });
  row("a student (no Role) importing a roster: 403, nothing created", async () => {
    await nothingStored(() => csv("user\nstudent-made\n", "?template=code", h.student), 403);
  });
  row("a 100 KiB body on POST /userlands (limit 64 KiB): 413, nothing created", async () => {
    await nothingStored(
      () =>
        h.call("POST", "/api/v1/userlands", {
          token: h.teacher,
          body: { user: "padded-user", templateName: "code", pad: "p".repeat(100 * 1024) },
        }),
      413,
    );
  });
  row("a 20 KB header: 431; the service stays up", async () => {
    const { status } = await verbatim("GET", "/api/v1/userlands", { "x-pad": "a".repeat(20_000) });
    assert.equal(status, 431);
    assert.equal((await h.call("GET", "/api/v1/userlands", { token: h.teacher })).status, 200);
  });

  // --- Path and parameter tricks ------------------------------------------------------------------------
  // Sent verbatim (fetch would resolve "%2e%2e" itself). Only names the CRD accepts are looked up
  // ("a.b" is a valid object name elsewhere, but the Userland CRD refuses dots); anything else is
  // refused before Kubernetes is asked.
  const nameRows: [string, number][] = [
    ["..%2F..%2Fsecrets", 400],
    ["a%2Fb", 400],
    ["%2e%2e", 400],
    ["..", 400],
    ["Alice", 400],
    ["a%00b", 400],
    ["a.b", 400],
    ["no-such-userland", 404],
    ["n".repeat(300), 400],
  ];
  for (const [name, status] of nameRows) {
    row(`GET /api/v1/userlands/${name.slice(0, 40)}: ${status}, no other object read`, async () => {
      const r = await verbatim("GET", `/api/v1/userlands/${name}`);
      assert.equal(r.status, status, r.body);
      if (status === 400) assert.equal((JSON.parse(r.body) as { field?: string }).field, "name", r.body);
    });
  }
  row("DELETE /api/v1/userlands/..%2F..: 400, nothing deleted", async () => {
    const before = await users();
    assert.equal((await verbatim("DELETE", "/api/v1/userlands/..%2F..")).status, 400);
    assert.deepEqual(await users(), before);
  });
  row("a repeated query parameter (?user=a&user=b): 400 or an exact filter, never a wider list", async () => {
    const r = await h.call("GET", "/api/v1/userlands?user=dup1&user=dup2", { token: h.teacher });
    if (r.status === 200) {
      const listed = (r.json.items as { user: string }[]).map((i) => i.user);
      assert.ok(listed.length <= 1, `at most one exact match, got ${listed.join(", ")}`);
    } else assert.equal(r.status, 400, r.text);
  });
  row("the identity lookup is exact: /users/DUP1/userland does not find dup1", async () => {
    const r = await h.call("GET", `/api/v1/users/DUP1/userland`, { token: h.teacher });
    assert.equal(r.status, 404);
    const own = await h.call("GET", `/api/v1/users/dup1/userland`, { token: h.teacher });
    assert.equal(own.status, 200);
    assert.equal((own.json as { name: string }).name, userlandNameFor("dup1", "code"));
  });

  for (const r of rows) await t.test(r.name, r.run);

  await t.test(
    "afterwards: every stored Userland has a distinct (user, Template) pair and the name derived from it",
    async () => {
      const all = await stored();
      const pairs = new Set(all.map((u) => JSON.stringify([u.spec.user, u.spec.templateName])));
      assert.equal(pairs.size, all.length, "no pair twice");
      for (const u of all)
        assert.equal(u.metadata.name, userlandNameFor(u.spec.user, u.spec.templateName), u.spec.user);
    },
  );
});

test("a flood of unknown bearer tokens: a bounded number reach a TokenReview, the rest get 429 at once, a known token is still served", async (t) => {
  const h = await startUserManager(t);
  const metrics = createMetrics();
  const reviews = async (result: string) =>
    metricValue(await metrics.registry.metrics(), "userland_user_manager_token_reviews_total", { result });
  // The service's own authenticator, on its own ServiceAccount, against the real TokenReview API.
  const backlog = 4;
  const authenticator = new TokenAuthenticator({
    rest: h.rest,
    ttlMs: 30_000,
    audiences: [],
    backlog,
    metrics,
  });
  // The teacher's token is reviewed once here, then served from the cache.
  const teacher = await authenticator.authenticate(h.teacher);
  assert.ok(teacher, "a real ServiceAccount token is accepted");
  // Shaped like ServiceAccount tokens (three base64url parts), each never seen before, all asked in
  // one tick: more than the backlog wait at once, whatever the machine's speed.
  const token = () => [16, 64, 43].map((n) => randomBytes(n).toString("base64url")).join(".");
  const flood = Array.from({ length: 16 * backlog }, () => authenticator.authenticate(token()));
  const known = authenticator.authenticate(h.teacher);
  const outcomes = await Promise.allSettled(flood);
  const refused = outcomes.filter(
    (o) => o.status === "rejected" && o.reason instanceof HttpError && o.reason.statusCode === 429,
  ).length;
  const reviewed = outcomes.filter((o) => o.status === "fulfilled" && o.value === undefined).length;
  assert.equal(reviewed, backlog, "exactly the backlog was reviewed (and rejected by Kubernetes)");
  assert.equal(refused, 16 * backlog - backlog, "every other unknown token was refused with 429");
  assert.equal(await reviews("rejected"), backlog, "a 429 costs the API server nothing");
  assert.equal(await reviews("refused_busy"), refused);
  assert.equal((await known)?.username, teacher.username, "the cached token was served during the flood");
  // Once the backlog has drained, an unknown token is reviewed again.
  assert.equal(await authenticator.authenticate(token()), undefined);
  assert.equal(await reviews("rejected"), backlog + 1);

  // The service's own authenticator (its backlog a setting) still reviews a lone unknown token.
  const response = await h.call("GET", "/api/v1/userlands", { token: token() });
  assert.equal(response.status, 401, "a single unknown token is reviewed and refused by Kubernetes");
});
