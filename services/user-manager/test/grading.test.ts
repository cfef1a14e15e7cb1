/**
 * The grading routes against the real control plane with real RBAC (docs/decisions/0015-grading.md):
 * the grade book and its CSV files for the Template's teachers alone, and one student's extension
 * written into the Assignment without touching anyone else's. No operator runs: the test writes
 * the Submissions and their grades where its controllers would.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "csv-parse/sync";
import { adminRest, createTemplate } from "../../../test/support/resources.ts";
import { assignmentsPath, type Assignment } from "../../../api/v1alpha1/index.ts";
import { CONSOLE_ORIGIN, startConsole } from "./consoleSupport.ts";
import {
  courseTeacherRules,
  courseworkTemplateSpec,
  createSubmission,
  reportSubmission,
} from "./courseworkSupport.ts";

/** A CSV file's rows, as an importer reads them. */
const rowsOf = (text: string): string[][] => parse(text, {});

test("the grade book for the class's teachers alone, as JSON and as Canvas's and Moodle's CSV; an extension is one student's, given and taken back; released grades reach the student without the hidden tests", async (t) => {
  const h = await startConsole(t, { templates: [] });
  const ns = h.ns;
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await h.appoint({ user: "tina@uni.example" }, courseTeacherRules(["lab"]));
  await h.appoint({ user: "nora@uni.example" }, courseTeacherRules(["other"]));
  const as = async (user: string) => ({ headers: { cookie: await h.cookie(user), origin: CONSOLE_ORIGIN } });
  const tina = await as("tina@uni.example");
  const nora = await as("nora@uni.example");
  const ann = await as("ann@uni.example");

  const rest = await adminRest();
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "calc" },
    spec: {
      templateName: "lab",
      title: "Calculator",
      source: { folder: "course", path: "calc" },
      deadline: "2099-01-01T00:00:00Z",
      extensions: [{ user: "zed", deadline: "2099-02-01T00:00:00Z" }],
    },
  });
  for (const user of ["ann@uni.example", "ben@uni.example"]) await createSubmission(ns, "calc", user);
  await reportSubmission(ns, "calc", "ann@uni.example", {
    receipt: {
      version: 1,
      requestedAt: "2026-12-07T10:00:00Z",
      time: "2026-12-07T10:00:00Z",
      files: 1,
      bytes: 3,
      sha256: "a".repeat(64),
      late: false,
      by: "student",
    },
    grade: {
      score: 5,
      maxScore: 5,
      testCount: 3,
      tests: [
        { name: "test_add", score: 2, maxScore: 2, status: "passed", visibility: "visible" },
        { name: "test_secret", score: 3, maxScore: 3, status: "passed", visibility: "hidden" },
      ],
      key: "k1",
      receiptSha256: "a".repeat(64),
      autograderRevision: "b".repeat(64),
      image: "registry.invalid/jupyter:1",
      time: "2026-12-07T10:01:00Z",
      results: "grades/calc/ann/k1",
    },
  });

  const book = await h.call("GET", "/api/v1/templates/lab/gradebook", tina);
  assert.equal(book.status, 200, book.text);
  const rows = book.json.students as { user: string; cells: Record<string, { score: number | null }> }[];
  assert.deepEqual(
    rows.map((r) => [r.user, r.cells.calc?.score]),
    [
      ["ann@uni.example", 5],
      ["ben@uni.example", null],
    ],
  );
  const canvas = await h.call("GET", "/api/v1/templates/lab/gradebook.csv?format=canvas", tina);
  assert.equal(canvas.status, 200, canvas.text);
  assert.match(String(canvas.headers.get("content-type")), /^text\/csv/);
  assert.match(
    String(canvas.headers.get("content-disposition")),
    /attachment; filename="lab-grades-canvas.csv"/,
  );
  const csv = rowsOf(canvas.text);
  assert.deepEqual(csv[0], ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Calculator (calc)"]);
  assert.deepEqual(csv[2], ["ann@uni.example", "", "", "ann@uni.example", "", "5"]);
  const moodle = await h.call("GET", "/api/v1/templates/lab/gradebook.csv?format=moodle", tina);
  assert.deepEqual(rowsOf(moodle.text)[0], [
    "Email address",
    "ID number",
    "Calculator",
    "Calculator (feedback)",
  ]);
  assert.equal((await h.call("GET", "/api/v1/templates/lab/gradebook.csv?format=excel", tina)).status, 400);
  // Another Template's teacher and a student: refused, naming what is missing.
  for (const [who, caller] of [
    ["nora", nora],
    ["ann", ann],
  ] as const) {
    const refused = await h.call("GET", "/api/v1/templates/lab/gradebook", caller);
    assert.equal(refused.status, 403, `${who}: ${refused.text}`);
  }

  // tina gives ben his own deadline: zed's extension stays as it was.
  const path = "/api/v1/templates/lab/assignments/calc/extensions/ben%40uni.example";
  const given = await h.call("PUT", path, {
    ...tina,
    body: { deadline: "2099-01-08T00:00:00+01:00", note: "accommodation" },
  });
  assert.equal(given.status, 200, given.text);
  const stored = await rest.get<Assignment>(assignmentsPath(ns, "calc"));
  assert.deepEqual(stored.spec.extensions, [
    { user: "zed", deadline: "2099-02-01T00:00:00Z" },
    { user: "ben@uni.example", deadline: "2099-01-07T23:00:00Z", note: "accommodation" },
  ]);
  assert.equal(stored.spec.deadline, "2099-01-01T00:00:00Z", "everyone else's deadline unchanged");
  const bad = await h.call("PUT", path, {
    ...tina,
    body: { deadline: "2099-01-08T00:00:00Z", lateUntil: "2099-01-07T00:00:00Z" },
  });
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.text, /lateUntil must be after the deadline/);
  assert.equal(
    (await h.call("PUT", path, { ...nora, body: { deadline: "2099-01-08T00:00:00Z" } })).status,
    403,
  );
  const other = await h.call("PUT", "/api/v1/templates/other/assignments/calc/extensions/ben", {
    ...nora,
    body: { deadline: "2099-01-08T00:00:00Z" },
  });
  assert.equal(other.status, 404, "calc is lab's, not other's");

  // The console: the page, its CSV, the extension form (times in the teacher's zone).
  const tinaCookie = await h.cookie("tina@uni.example");
  const page = await h.page("/console/gradebook?template=lab&sort=calc&dir=desc", tinaCookie);
  assert.equal(page.status, 200, page.text);
  assert.match(page.text, /Grade book of lab/);
  assert.match(page.text, /Calculator/);
  assert.match(page.text, /<th scope="row">ann@uni\.example<\/th>\s*<td title="5\/5 by the autograder/);
  assert.match(page.text, /not graded/);
  assert.match(page.text, /ben@uni\.example[\s\S]*accommodation/, "the extension is listed with its note");
  const download = await h.page("/console/gradebook.csv?template=lab&format=canvas", tinaCookie);
  assert.equal(download.status, 200);
  assert.equal(download.text, canvas.text, "the console's file is the API's");
  const form = await h.post("/console/gradebook/extension", tinaCookie, {
    template: "lab",
    assignment: "calc",
    user: "ann@uni.example",
    deadline: "2099-03-01T09:00",
    zone: "Europe/Berlin",
  });
  assert.equal(form.status, 303, await form.text());
  assert.match(form.headers.get("location") ?? "", /done=extended/);
  assert.deepEqual(
    (await rest.get<Assignment>(assignmentsPath(ns, "calc"))).spec.extensions?.find(
      (e) => e.user === "ann@uni.example",
    ),
    { user: "ann@uni.example", deadline: "2099-03-01T08:00:00Z" },
  );
  const noPage = await h.page("/console/gradebook?template=lab", await h.cookie("nora@uni.example"));
  assert.equal(noPage.status, 403);

  // A rubric, a review of ann's hand-in; changing an item's points changes her total.
  const rubric = "/api/v1/templates/lab/assignments/calc/rubric";
  const items = [
    { id: "style", points: 1, description: "Readable names" },
    { id: "no-docs", points: -2, description: "No docstrings" },
  ];
  const set = await h.call("PUT", rubric, { ...tina, body: { items } });
  assert.equal(set.status, 200, set.text);
  const twice = await h.call("PUT", rubric, { ...tina, body: { items: [items[0], items[0]] } });
  assert.equal(twice.status, 400);
  const reviewPath = "/api/v1/templates/lab/assignments/calc/submissions/ann%40uni.example/review";
  const reviewed = await h.call("PUT", reviewPath, {
    ...tina,
    body: { items: ["style", "no-docs"], comment: "Tidy, but document it." },
  });
  assert.equal(reviewed.status, 200, reviewed.text);
  const scoreOfAnn = async () =>
    (
      (await h.call("GET", "/api/v1/templates/lab/gradebook", tina)).json.students as {
        user: string;
        cells: Record<string, { score: number | null }>;
      }[]
    ).find((r) => r.user === "ann@uni.example")?.cells.calc?.score;
  assert.equal(await scoreOfAnn(), 4, "5 by the autograder + 1 - 2");
  await h.call("PUT", rubric, { ...tina, body: { items: [items[0], { ...items[1], points: -1 }] } });
  assert.equal(await scoreOfAnn(), 5, "the deduction is 1 now, for every hand-in it was applied to");
  assert.equal(
    (await h.call("PUT", reviewPath, { ...tina, body: { items: ["nope"] } })).status,
    400,
    "an item the rubric lacks",
  );
  for (const [who, caller] of [
    ["nora", nora],
    ["ann", ann],
  ] as const)
    assert.equal((await h.call("PUT", reviewPath, { ...caller, body: { items: [] } })).status, 403, who);

  // The console: the review page shows every test (hidden ones too) and saves a review; the
  // rubric page reads "id | points | description" lines and names a bad one.
  const reviewPage = await h.page(
    "/console/review?template=lab&name=calc&user=ann%40uni.example",
    tinaCookie,
  );
  assert.equal(reviewPage.status, 200, reviewPage.text);
  assert.match(reviewPage.text, /<code>test_secret<\/code>[\s\S]*never \(hidden\)/);
  assert.match(reviewPage.text, /id="i-style"\s+name="item"\s+value="style"\s+checked/);
  const saved = await h.post("/console/review", tinaCookie, {
    template: "lab",
    name: "calc",
    user: "ann@uni.example",
    item: ["style", "no-docs"],
    comment: "Tidy, but document it.",
    autograderScore: "",
  });
  assert.equal(saved.status, 303, await saved.text());
  const badRubric = await h.post("/console/rubric", tinaCookie, {
    template: "lab",
    name: "calc",
    items: "style | 1 | Readable names\nno docs | minus one | No docstrings",
  });
  assert.equal(badRubric.status, 400);
  assert.match(
    await badRubric.text(),
    /line 2: expected &#34;id \| points \| description&#34;|line 2: expected "id \| points \| description"/,
  );
  const goodRubric = await h.post("/console/rubric", tinaCookie, {
    template: "lab",
    name: "calc",
    items: "style | 1 | Readable names\nno-docs | -1 | No docstrings\n",
  });
  assert.equal(goodRubric.status, 303, await goodRubric.text());
  assert.deepEqual(
    (await rest.get<Assignment>(assignmentsPath(ns, "calc"))).spec.rubric?.map((i) => [i.id, i.points]),
    [
      ["style", 1],
      ["no-docs", -1],
    ],
  );

  // The student's view (through the proxy's right): nothing until released, then the score and
  // the visible test; the hidden one never.
  const proxy = await h.callerWith("proxy", [
    { apiGroups: ["userland.dev"], resources: ["submissions/handin"], verbs: ["get", "update"] },
  ]);
  const own = () =>
    h.call("GET", "/api/v1/templates/lab/assignments/calc/submissions/ann%40uni.example", { token: proxy });
  const hiddenYet = await own();
  assert.equal(hiddenYet.status, 200, hiddenYet.text);
  assert.equal(hiddenYet.json.grade, null, "not released: no grade for the student");
  const release = await h.post("/console/gradebook/release", tinaCookie, {
    template: "lab",
    assignment: "calc",
    released: "true",
  });
  assert.equal(release.status, 303, await release.text());
  assert.equal((await rest.get<Assignment>(assignmentsPath(ns, "calc"))).spec.gradesReleased, true);
  const shown = await own();
  assert.deepEqual(shown.json.grade, {
    released: true,
    score: 5,
    maxScore: 6,
    latePenaltyPercent: 0,
    rubric: [
      { points: 1, description: "Readable names" },
      { points: -1, description: "No docstrings" },
    ],
    comment: "Tidy, but document it.",
    tests: [{ name: "test_add", score: 2, maxScore: 2, passed: true }],
  });
  assert.doesNotMatch(shown.text, /test_secret/);
  assert.equal(
    (
      await h.call("PUT", "/api/v1/templates/lab/assignments/calc/grades-released", {
        ...ann,
        body: { released: false },
      })
    ).status,
    403,
    "a student cannot release or hide grades",
  );

  const taken = await h.call("DELETE", path, tina);
  assert.equal(taken.status, 200, taken.text);
  assert.deepEqual(
    (await rest.get<Assignment>(assignmentsPath(ns, "calc"))).spec.extensions?.map((e) => e.user),
    ["zed", "ann@uni.example"],
    "ben's taken back, the others' kept",
  );
});
