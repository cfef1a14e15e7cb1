/** Roster parsing, validation and planning, and the validation messages (no cluster needed). */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { bearerToken, reviewCache } from "../auth/caller.ts";
import { HttpError, describeValidation } from "../errors.ts";
import { csvRoster, jsonRoster, parseCsv, planImport, pruneScope, validateRoster } from "../roster.ts";

test("CSV: quotes, escaped quotes, line breaks in quotes, CRLF, BOM, blank lines, trimming", () => {
  const text =
    '\uFEFFuser,note\r\n"Doe, Jane",x\r\n\r\n  alice  , "two\nlines"\n"say ""hi""",\n  "  spaced  "  ,\nlast';
  assert.deepEqual(parseCsv(text), [
    { line: 1, fields: ["user", "note"] },
    { line: 2, fields: ["Doe, Jane", "x"] },
    { line: 4, fields: ["alice", "two\nlines"] },
    { line: 6, fields: ['say "hi"', ""] },
    { line: 7, fields: ["  spaced  ", ""] },
    { line: 8, fields: ["last"] },
  ]);
  assert.throws(
    () => parseCsv('user\n"open'),
    (e: unknown) =>
      e instanceof HttpError &&
      e.statusCode === 400 &&
      /line 2: a quoted field is not closed/.test(e.message),
  );
  assert.throws(() => parseCsv('user\n"a"b'), /unexpected text after a quoted field/);
});

test("CSV roster: columns by header (any order, any case, extra columns ignored), too many fields reported", () => {
  const rows = csvRoster(
    "Name,Enabled,USER,Template\nJane Doe,no,jane,code\nBob,,bob,\nToo,many,fields,code,here\n",
  );
  assert.deepEqual(rows, [
    { line: 2, user: "jane", template: "code", enabled: "no" },
    { line: 3, user: "bob", template: undefined, enabled: undefined },
    {
      line: 4,
      user: "fields",
      template: "code",
      enabled: "many",
      problem: "has 5 fields but the header has 4 (quote values that contain commas)",
    },
  ]);
  assert.deepEqual(csvRoster("user\n"), []);
  assert.throws(
    () => csvRoster("name,email\nx,y\n"),
    (e: unknown) => e instanceof HttpError && e.field === "user" && /no "user" column/.test(e.message),
  );
  assert.throws(() => csvRoster(""), /empty/);
  assert.throws(() => csvRoster("user,User\n"), /twice/);
  assert.deepEqual(
    csvRoster("user,templateName\nx,code\n")[0]?.template,
    "code",
    "templateName is an alias of template",
  );
});

test("validation: every line valid or reported with its reason; pairs listed twice reported once", () => {
  const rows = [
    ...jsonRoster([
      "alice",
      "Alice",
      "alice",
      "bad\nuser",
      "",
      " padded",
      "x".repeat(300),
      { user: "carol", templateName: "jupyter", enabled: false },
    ]),
    { line: 9, user: "dave", template: "Bad_Template" },
    { line: 10, user: "erin", enabled: "maybe" },
    { line: 11, user: "carol", template: "code" },
    { line: 12, user: "frank", enabled: "No" },
    { line: 13, user: "carol", template: "jupyter", enabled: "yes" },
    { line: 14, user: "carol", template: "code" },
  ];
  const v = validateRoster(rows, "code");
  assert.deepEqual(
    v.entries.map((e) => [e.line, e.user, e.templateName, e.enabled]),
    [
      [1, "alice", "code", undefined],
      [2, "Alice", "code", undefined],
      [8, "carol", "jupyter", false],
      [11, "carol", "code", undefined],
      [12, "frank", "code", false],
    ],
    "carol on a line of another template gets that environment too (one per Template)",
  );
  assert.deepEqual(
    v.invalid.map((i) => [i.line, i.reason]),
    [
      [4, "user contains a line break"],
      [5, "user is empty"],
      [6, "user has a leading or trailing space"],
      [7, "user is longer than 256 characters"],
      [
        9,
        `template "Bad_Template" must be lowercase letters, digits and '-', start with a letter and not end with '-'`,
      ],
      [10, 'enabled must be true or false, not "maybe"'],
      [
        13,
        'listed again for template "jupyter" with different settings (line 8: enabled false); the first line is used',
      ],
    ],
  );
  assert.deepEqual(v.duplicates, [
    { user: "alice", templateName: "code", lines: [1, 3] },
    { user: "carol", templateName: "jupyter", lines: [8, 13] },
    { user: "carol", templateName: "code", lines: [11, 14] },
  ]);
  const noTemplate = validateRoster(jsonRoster(["x"]), undefined);
  assert.match(noTemplate.invalid[0]?.reason ?? "", /no template/);
});

const userland = (name: string, user: string, templateName: string): Userland => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name, uid: `uid-${name}` },
  spec: { user, templateName },
});

test("plan: create the missing pairs, report the existing under any name, prune only the covered templates' absentees", () => {
  const rows = jsonRoster(["alice", "bob", { user: "carol", templateName: "jupyter" }, "koba"]);
  const { entries } = validateRoster(rows, "code");
  const existing = [
    userland("bob-x", "bob", "code"),
    userland("carol-x", "carol", "code"),
    userland("zed-x", "zed", "code"),
    userland("yan-x", "yan", "jupyter"),
    userland("q-x", "Bad line", "code"),
    // Named by the one-per-user rule (or by hand): found by its pair, whatever its name.
    userland("koba-legacy", "koba", "code"),
  ];
  const scope = pruneScope(
    [...rows, { line: 5, user: "Bad line", template: "code", problem: "has 3 fields but the header has 2" }],
    entries,
    "code",
  );
  assert.deepEqual([...scope.templates], ["code"], "the request's template only");
  const plan = planImport(entries, existing, scope);
  assert.deepEqual(
    plan.create.map((e) => [e.user, e.templateName]),
    [
      ["alice", "code"],
      ["carol", "jupyter"],
    ],
    "carol has a code Userland; the roster gives her a jupyter one too",
  );
  assert.deepEqual(plan.existing, [
    { line: 2, user: "bob", name: "bob-x", templateName: "code" },
    { line: 4, user: "koba", name: "koba-legacy", templateName: "code" },
  ]);
  assert.deepEqual(
    plan.toDelete.map((u) => u.metadata.name),
    ["carol-x", "zed-x"],
    "carol is on the roster for jupyter only; other templates and users on any roster line are kept",
  );
  assert.deepEqual(planImport(entries, existing, undefined).toDelete, []);

  // Without a request template, the lines' templates are covered; an unreadable line protects its user everywhere.
  const perLine = jsonRoster([
    { user: "yan", templateName: "code" },
    { user: "carol", templateName: "jupyter" },
  ]);
  const lineScope = pruneScope(
    [
      ...perLine,
      { line: 3, user: "zed", problem: "has 3 fields but the header has 2" },
      { line: 4, user: "koba", template: "no-such-template" },
    ],
    validateRoster(perLine, undefined).entries,
    undefined,
  );
  assert.deepEqual([...lineScope.templates].sort(), ["code", "jupyter"]);
  assert.deepEqual(
    planImport([], existing, lineScope).toDelete.map((u) => u.metadata.name),
    ["bob-x", "carol-x", "yan-x", "q-x"],
    "yan is on it for code only, carol for jupyter only; zed's unreadable line and koba's line with an unknown template keep theirs",
  );
  assert.deepEqual(
    [...pruneScope(jsonRoster(["x"]), [], undefined).templates],
    [],
    "nothing covered: the route refuses to prune",
  );
});

test("validation errors name the field and say what is wrong", () => {
  const body = { user: "a\tb", templateName: "code" };
  const e = describeValidation([{ keyword: "pattern", instancePath: "/user", params: {} }], "body", body);
  assert.deepEqual(e.body(), {
    error: "BadRequest",
    message: "user contains a control character",
    field: "user",
    in: "body",
  });
  const extra = describeValidation(
    [
      { keyword: "boolean", instancePath: "/users/0/x", params: {} },
      { keyword: "additionalProperties", instancePath: "/users/0", params: { additionalProperties: ["x"] } },
    ],
    "body",
    {},
  );
  assert.equal(extra.field, "users.0.x");
  const q = describeValidation(
    [{ keyword: "enum", instancePath: "/phase", params: { allowedValues: ["Ready", "Failed"] } }],
    "querystring",
    {},
  );
  assert.deepEqual(q.body(), {
    error: "BadRequest",
    message: "phase must be one of Ready, Failed (query)",
    field: "phase",
    in: "query",
  });
});

test("bearer tokens and the TTL cache", () => {
  assert.equal(bearerToken(undefined), undefined);
  assert.equal(bearerToken("Bearer abc.def-_~+/="), "abc.def-_~+/=");
  assert.equal(bearerToken("bearer  xyz"), "xyz");
  for (const bad of ["Basic dTpw", "Bearer", "Bearer a b", "Bearer " + "x".repeat(20_000)]) {
    assert.throws(
      () => bearerToken(bad),
      (e: unknown) => e instanceof HttpError && e.statusCode === 401,
      bad,
    );
  }
  let now = 1000;
  const cache = reviewCache<number>(2, { now: () => now });
  cache.set("a", 1, { ttl: 1000 });
  now = 1999;
  assert.equal(cache.get("a"), 1);
  now = 2001;
  assert.equal(cache.get("a"), undefined, "expired");
  cache.set("a", 1, { ttl: 5000 });
  cache.set("b", 2, { ttl: 5000 });
  cache.set("c", 3, { ttl: 5000 });
  assert.equal(cache.size, 2, "bounded");
  assert.equal(cache.get("a"), undefined, "the oldest went first");
});
