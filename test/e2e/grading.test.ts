/**
 * A grading cycle in a real browser (Debian chromium driven by playwright-core) through the whole
 * local platform (dev/platform.ts: real OpenID sign-in, the real user-manager console and proxy,
 * the chart's course-teacher role): the teacher writes a rubric, gives one student an extension
 * from the grade book, reviews a student's second version (the versions, every test with the
 * hidden one marked), applies a rubric item with a comment, changes the item's points and sees the
 * total follow, releases the grades and downloads the Canvas file; each student then sees their
 * own score, comment and visible tests on their home page, and nobody else's or the hidden test.
 *
 * The operator's grading is test/node/grading.test.ts's (real autograder, sealed pods, real node);
 * here the Submissions' statuses it would write (receipts, versions, grades) are written by the
 * test, and it says so. Screenshots: grading-*.png (test/support/screenshots.ts says where).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parse } from "csv-parse/sync";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { paths } from "../../api/kubePaths.ts";
import {
  assignmentsPath,
  templatesPath,
  userlandsPath,
  type Assignment,
  type Grade,
  type Receipt,
} from "../../api/v1alpha1/index.ts";
import { kubeTime } from "../../api/times.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, startPlatform, type Platform } from "../../dev/platform.ts";
import {
  courseworkTemplateSpec,
  createSubmission,
  reportSubmission,
} from "../../services/user-manager/test/courseworkSupport.ts";
import { screenshotsDir } from "../support/screenshots.ts";

let platform: Platform;
let browser: Browser;

before(async () => {
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `grading-e2e-${randomBytes(3).toString("hex")}`),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(screenshotsDir(), `grading-${name}.png`), fullPage: true });

const HOUR = 3_600_000;
const at = (ms: number) => kubeTime(new Date(Date.now() + ms));
/** A datetime-local value (UTC) `ms` from now. */
const localIn = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);

const TESTS = [
  { name: "test_add", maxScore: 2, visibility: "visible" },
  { name: "test_subtract", maxScore: 2, visibility: "visible" },
  { name: "test_hidden_multiply", maxScore: 1, visibility: "hidden" },
] as const;

/** A receipt as the operator writes it after a copy (the sha256 tells the versions apart). */
const receipt = (
  version: number,
  requestedAt: string,
  late = false,
  extra: Partial<Receipt> = {},
): Receipt => ({
  version,
  requestedAt,
  copyStartedAt: requestedAt,
  time: requestedAt,
  files: 1,
  bytes: 120,
  sha256: String(version).repeat(64),
  late,
  by: "student",
  ...extra,
});

/** The autograder's grade as the operator writes it: which tests passed, by name. */
function grade(of: Receipt, passed: readonly string[]): Grade {
  const tests = TESTS.map((t) => ({
    name: t.name,
    maxScore: t.maxScore,
    score: passed.includes(t.name) ? t.maxScore : 0,
    status: passed.includes(t.name) ? ("passed" as const) : ("failed" as const),
    visibility: t.visibility,
  }));
  return {
    score: tests.reduce((sum, t) => sum + t.score, 0),
    maxScore: 5,
    tests,
    testCount: tests.length,
    key: `k${of.version}${of.sha256.slice(0, 4)}`,
    receiptSha256: of.sha256,
    autograderRevision: "a".repeat(64),
    image: "jupyter:local",
    time: of.time,
    results: `grades/calc/x/k${of.version}`,
  };
}

async function signIn(context: BrowserContext, url: string, user: string): Promise<Page> {
  const page = await context.newPage();
  await gotoSignIn(page, url);
  await page.waitForSelector("input[name=name]");
  await page.fill("input[name=name]", user);
  await Promise.all([page.waitForURL((u) => u.toString() === url), page.click("button[type=submit]")]);
  return page;
}

test("a grading cycle in the browser: rubric, an extension, a second version reviewed, an item's points changed, grades released, the Canvas file, each student's own view", async () => {
  const ns = platform.namespace;
  const rest = platform.rest;
  await rest.create(templatesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "lab" },
    spec: courseworkTemplateSpec(),
  });
  const students = ["ann", "ben", "cat", "dan"] as const;
  for (const user of students)
    await rest.create(userlandsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: `${user}-lab` },
      spec: { user, templateName: "lab", enabled: false },
    });
  // The console's teacher teaches lab as deploy/README.md says: the chart's course-teacher role
  // (the local platform made the chart's ClusterRoles).
  await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", ns), {
    metadata: { name: "lab-course-teacher" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "userland-course-teacher" },
    subjects: [{ kind: "User", name: `userland:${CONSOLE_TEACHER}`, apiGroup: "rbac.authorization.k8s.io" }],
  });
  // The deadline passed an hour ago; late hand-ins until tomorrow.
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "calc" },
    spec: {
      templateName: "lab",
      title: "Calculator",
      source: { folder: "course", path: "calc" },
      deadline: at(-HOUR),
      lateUntil: at(24 * HOUR),
      autograder: { folder: "course", path: "graders/calc" },
    },
  });

  // Stands in for the operator: a Submission each; ann right, ben half right then fixed (version
  // 2), cat's loop timed out (no grade), before the deadline.
  for (const user of students) await createSubmission(ns, "calc", user, rest);
  const ann1 = receipt(1, at(-3 * HOUR));
  await reportSubmission(
    ns,
    "calc",
    "ann",
    {
      receipt: ann1,
      grade: grade(
        ann1,
        TESTS.map((x) => x.name),
      ),
    },
    rest,
  );
  const ben1 = { ...receipt(1, at(-3 * HOUR)), score: 2 };
  const ben2 = receipt(2, at(-2 * HOUR));
  await reportSubmission(
    ns,
    "calc",
    "ben",
    { receipt: ben2, versions: [ben1, ben2], grade: grade(ben2, ["test_add", "test_subtract"]) },
    rest,
  );
  const cat1 = receipt(1, at(-2 * HOUR));
  await reportSubmission(
    ns,
    "calc",
    "cat",
    {
      receipt: cat1,
      gradeAttempt: {
        key: "kc",
        receiptSha256: cat1.sha256,
        autograderRevision: "a".repeat(64),
        image: "jupyter:local",
        time: cat1.time,
        ok: false,
        reason: "TimedOut",
        message: "timed out after 300 s: run_autograder was stopped",
      },
    },
    rest,
  );

  const teacherContext = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const teacher = await signIn(
    teacherContext,
    `${platform.consoleUrl}gradebook?template=lab`,
    CONSOLE_TEACHER,
  );
  const row = (user: string) =>
    teacher.locator("tbody tr", { has: teacher.locator(`th:text-is("${user}")`) });
  assert.equal((await row("ann").locator("td").first().textContent())?.trim(), "5");
  assert.match((await row("ben").locator("td").first().textContent()) ?? "", /4\s+version 2 of 2/);
  assert.match((await row("cat").locator("td").first().textContent()) ?? "", /not graded/);

  // The rubric, written on its page.
  await Promise.all([
    teacher.waitForURL(/\/console\/rubric\?/),
    teacher.getByRole("link", { name: "rubric" }).click(),
  ]);
  await teacher.fill(
    "#rubric-text",
    "style | 2 | Readable, well named\nno-tests | -1 | No tests of their own\n",
  );
  await Promise.all([
    teacher.waitForURL(/\/console\/rubric\?.*done=/),
    teacher.getByRole("button", { name: "Save the rubric" }).click(),
  ]);
  const withRubric = await rest.get<Assignment>(assignmentsPath(ns, "calc"));
  assert.deepEqual(
    withRubric.spec.rubric?.map((i) => [i.id, i.points]),
    [
      ["style", 2],
      ["no-tests", -1],
    ],
  );

  // dan's own deadline (an accommodation), given in the grade book's form: two hours from now.
  await teacher.goto(`${platform.consoleUrl}gradebook?template=lab`);
  await teacher.selectOption("#x-assignment", "calc");
  await teacher.fill("#x-user", "dan");
  await teacher.fill("#x-deadline", localIn(2 * HOUR));
  await teacher.fill("#x-note", "accommodation");
  await Promise.all([
    teacher.waitForURL(/done=extended/),
    teacher.getByRole("button", { name: "Give the extension" }).click(),
  ]);
  const extended = await rest.get<Assignment>(assignmentsPath(ns, "calc"));
  assert.deepEqual(
    extended.spec.extensions?.map((e) => [e.user, e.note]),
    [["dan", "accommodation"]],
  );
  // Stands in for the operator: dan hands in now, after the others' deadline, before his own.
  const dan1 = receipt(1, at(0), false, {
    deadline: extended.spec.extensions?.[0]?.deadline,
    extended: true,
  });
  await reportSubmission(
    ns,
    "calc",
    "dan",
    {
      receipt: dan1,
      grade: grade(
        dan1,
        TESTS.map((x) => x.name),
      ),
    },
    rest,
  );
  await teacher.reload();
  assert.match((await row("dan").locator("td").first().textContent()) ?? "", /5\s+extension/);
  assert.doesNotMatch((await row("dan").locator("td").first().textContent()) ?? "", /late/);

  // ben's hand-in, reviewed: both versions, every test (the hidden one marked), an item and a comment.
  await Promise.all([teacher.waitForURL(/\/console\/review\?/), row("ben").locator("td a").first().click()]);
  const review = (await teacher.textContent("main")) ?? "";
  assert.match(review, /version 2 of 2, the one that counts/);
  assert.match(review, /test_hidden_multiply/);
  assert.match(review, /never \(hidden\)/);
  await teacher.check("#i-style");
  await teacher.fill("#r-comment", "Good fix in version 2; the hidden case still fails.");
  await Promise.all([
    teacher.waitForURL(/\/console\/review\?.*done=saved/),
    teacher.getByRole("button", { name: "Save the review" }).click(),
  ]);
  await shot(teacher, "01-review");
  await teacher.goto(`${platform.consoleUrl}gradebook?template=lab`);
  assert.match((await row("ben").locator("td").first().textContent()) ?? "", /^\s*6\b/, "4 + 2 for style");

  // The item's points change: every hand-in it was applied to follows.
  await teacher.goto(`${platform.consoleUrl}rubric?template=lab&name=calc`);
  await teacher.fill(
    "#rubric-text",
    "style | 3 | Readable, well named\nno-tests | -1 | No tests of their own\n",
  );
  await Promise.all([
    teacher.waitForURL(/\/console\/rubric\?.*done=/),
    teacher.getByRole("button", { name: "Save the rubric" }).click(),
  ]);
  await teacher.goto(`${platform.consoleUrl}gradebook?template=lab`);
  assert.match((await row("ben").locator("td").first().textContent()) ?? "", /^\s*7\b/, "4 + 3 for style");

  // Released; the Canvas file has Canvas's columns and these numbers.
  await Promise.all([
    teacher.waitForURL(/\/console\/gradebook\?/),
    teacher.getByRole("button", { name: "Release the grades of Calculator" }).click(),
  ]);
  assert.equal((await rest.get<Assignment>(assignmentsPath(ns, "calc"))).spec.gradesReleased, true);
  await shot(teacher, "02-gradebook");
  const [download] = await Promise.all([
    teacher.waitForEvent("download"),
    teacher.getByRole("link", { name: "Canvas" }).click(),
  ]);
  const csvPath = await download.path();
  const rows: string[][] = parse(readFileSync(csvPath, "utf8"), { bom: true });
  assert.deepEqual(rows[0], ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Calculator (calc)"]);
  assert.equal(rows[1]?.[0], "Points Possible");
  const scoreIn = (user: string) => rows.find((r) => r[0] === user)?.[5];
  assert.deepEqual(
    students.map((u) => [u, scoreIn(u)]),
    [
      ["ann", "5"],
      ["ben", "7"],
      ["cat", ""],
      ["dan", "5"],
    ],
    "cat's timed-out run has no score: an empty cell, not 0",
  );

  // Each student's home: their own score, comment and visible tests; never the hidden test.
  const homeUrl = `${platform.url}_userland/home`;
  const home = async (user: string) => {
    const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
    const page = await signIn(context, homeUrl, user);
    const card = page.locator("#assignment-lab-calc");
    await card.locator(".grade").waitFor();
    return { page, text: (await card.textContent()) ?? "", html: await page.content() };
  };
  const ben = await home("ben");
  assert.match(ben.text, /Score: 7 of/);
  assert.match(ben.text, /Good fix in version 2/);
  assert.match(ben.text, /\+3 Readable, well named/);
  assert.match(ben.text, /test_add/);
  assert.doesNotMatch(ben.html, /test_hidden_multiply/, "the hidden test never reaches a student");
  assert.match(ben.text, /Also handed in:\s*version 1/);
  await shot(ben.page, "03-student");
  const ann = await home("ann");
  assert.match(ann.text, /Score: 5 of/);
  assert.doesNotMatch(
    ann.html,
    /Good fix|Readable, well named|test_hidden_multiply/,
    "nothing of ben's review",
  );
  const dan = await home("dan");
  assert.match(dan.text, /your extended deadline/);
  assert.match(dan.text, /Score: 5 of/);
  assert.doesNotMatch(dan.text, /\blate\b/);
});
