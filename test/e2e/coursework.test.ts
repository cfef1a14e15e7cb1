/**
 * Coursework in a real browser (Debian chromium driven by playwright-core) through the whole local
 * platform (dev/platform.ts: real OpenID sign-in, the real user-manager and proxy under the
 * chart's RBAC): a teacher creates an assignment in the console, a student hands in from the home
 * page (with the confirm step) and sees the receipt, and the teacher sees the hand-in table,
 * publishes again and returns feedback. The operator's Assignment and Submission controllers are
 * not part of this test: where they would create a Submission or write its status, the test does,
 * and says so. Screenshots: coursework-*.png (test/support/screenshots.ts says where).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { templatesPath, userlandsPath } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, startPlatform, type Platform } from "../../dev/platform.ts";
import { paths } from "../../api/kubePaths.ts";
import { assignmentsPath, type Assignment } from "../../api/v1alpha1/index.ts";
import {
  courseworkTemplateSpec,
  createSubmission,
  reportSubmission,
} from "../../services/user-manager/test/courseworkSupport.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { screenshotsDir } from "../support/screenshots.ts";

let platform: Platform;
let browser: Browser;

before(async () => {
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `coursework-e2e-${randomBytes(3).toString("hex")}`),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(screenshotsDir(), `coursework-${name}.png`), fullPage: true });

/** A datetime-local value (UTC) `ms` from now. */
const localIn = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);

/** The console's local teacher also teaches "lab": assignments, hand-ins, and its coursework. */
async function appointCourseTeacher(ns: string): Promise<void> {
  const rbac = (kind: string, name?: string) =>
    paths.namespaced("rbac.authorization.k8s.io", "v1", kind, ns, name);
  await platform.rest.create(rbac("roles"), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "lab-course-teacher" },
    rules: [
      { apiGroups: ["userland.dev"], resources: ["assignments"], verbs: ["get", "list", "create", "update"] },
      { apiGroups: ["userland.dev"], resources: ["submissions"], verbs: ["get", "list"] },
      {
        apiGroups: ["userland.dev"],
        resources: ["templates/coursework"],
        verbs: ["update"],
        resourceNames: ["lab"],
      },
    ],
  });
  await platform.rest.create(rbac("rolebindings"), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "lab-course-teacher" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "lab-course-teacher" },
    subjects: [{ kind: "User", name: `userland:${CONSOLE_TEACHER}`, apiGroup: "rbac.authorization.k8s.io" }],
  });
}

async function signIn(page: Page, url: string, user: string, landing: (u: URL) => boolean): Promise<void> {
  await gotoSignIn(page, url);
  await page.waitForSelector("input[name=name]");
  await page.fill("input[name=name]", user);
  await Promise.all([page.waitForURL(landing), page.click("button[type=submit]")]);
}

test("a teacher creates an assignment, a student hands in with the button and sees the receipt, the teacher sees the hand-ins", async () => {
  const ns = platform.namespace;
  await platform.rest.create(templatesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "lab" },
    spec: courseworkTemplateSpec(),
  });
  for (const user of ["hana", "ivan", "juno"])
    await platform.rest.create(userlandsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: `${user}-lab` },
      spec: { user, templateName: "lab", enabled: false },
    });
  await appointCourseTeacher(ns);

  const violations: string[] = [];
  const watch = (page: Page) =>
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });

  // The teacher: the class's Assignments page, a refused form first (a folder path with ..), then a good one.
  const teacherContext = await browser.newContext({ viewport: { width: 1150, height: 800 } });
  const teacher = await teacherContext.newPage();
  watch(teacher);
  await signIn(teacher, `${platform.consoleUrl}class?template=lab`, CONSOLE_TEACHER, (u) =>
    u.toString().startsWith(platform.consoleUrl),
  );
  await Promise.all([
    teacher.waitForURL(/\/console\/assignments\?template=lab$/),
    teacher.getByRole("link", { name: "Assignments", exact: true }).click(),
  ]);
  await teacher.fill("#f-name", "week1");
  await teacher.fill("#f-title", "Week 1: lists");
  await teacher.selectOption("#f-folder", "course");
  await teacher.fill("#f-path", "week1/../../secret");
  await teacher.fill("#f-deadline", localIn(3600_000));
  await teacher.fill("#f-lateUntil", localIn(7200_000));
  await teacher.getByRole("button", { name: "Create and publish" }).click();
  assert.match((await teacher.textContent("[role=alert]")) ?? "", /source\.path must not contain '\.\.'/);
  assert.equal(await teacher.inputValue("#f-title"), "Week 1: lists", "the form keeps what was typed");
  await teacher.fill("#f-path", "week1");
  await Promise.all([
    teacher.waitForURL(/\/console\/assignment\?.*done=created/),
    teacher.getByRole("button", { name: "Create and publish" }).click(),
  ]);
  const stored = await platform.rest.get<Assignment>(assignmentsPath(ns, "week1"));
  assert.deepEqual(stored.spec.source, { folder: "course", path: "week1" });
  assert.equal(stored.metadata.annotations?.["userland.dev/created-by"], `userland:${CONSOLE_TEACHER}`);

  // Stands in for the operator's Assignment controller (one Submission per student) and its
  // Submission controller (copies handed out; juno's hand-in collected; ivan kept an edit).
  for (const user of ["hana", "ivan", "juno"]) await createSubmission(ns, "week1", user, platform.rest);
  await reportSubmission(ns, "week1", "hana", { distributedRelease: 1 }, platform.rest);
  await reportSubmission(
    ns,
    "week1",
    "ivan",
    { distributedRelease: 1, keptOwnVersion: ["lists.ipynb"] },
    platform.rest,
  );
  await reportSubmission(
    ns,
    "week1",
    "juno",
    {
      distributedRelease: 1,
      receipt: {
        version: 1,
        requestedAt: new Date().toISOString(),
        time: new Date().toISOString(),
        files: 2,
        bytes: 5300,
        sha256: "c".repeat(64),
        late: false,
        by: "student",
      },
    },
    platform.rest,
  );

  // The student: the home page lists the assignment with a Hand in button, which asks first.
  const studentContext = await browser.newContext({ viewport: { width: 900, height: 900 } });
  const student = await studentContext.newPage();
  watch(student);
  const home = `${platform.url}_userland/home`;
  await signIn(student, home, "hana", (u) => u.toString() === home);
  const card = student.locator("#assignment-lab-week1");
  await card.waitFor();
  assert.match((await card.textContent()) ?? "", /Week 1: lists/);
  await shot(student, "01-home-assignment");
  await Promise.all([
    student.waitForURL(/\/_userland\/handin$/),
    card.getByRole("button", { name: "Hand in Week 1: lists" }).click(),
  ]);
  assert.match((await student.textContent("main")) ?? "", /You can hand in again/);
  await shot(student, "02-home-confirm");
  await Promise.all([
    student.waitForURL(home),
    student.getByRole("button", { name: "Yes, hand in Week 1: lists" }).click(),
  ]);
  await card.getByText(/being collected/).waitFor();

  // Stands in for the operator: the copy pod collected her work and the receipt is written; the
  // home page's script notices the change and shows it.
  const handedIn = new Date().toISOString();
  await reportSubmission(
    ns,
    "week1",
    "hana",
    {
      distributedRelease: 1,
      receipt: {
        version: 1,
        requestedAt: handedIn,
        time: handedIn,
        files: 3,
        bytes: 48_128,
        sha256: "d".repeat(64),
        late: false,
        by: "student",
      },
    },
    platform.rest,
  );
  const receipt = student.getByLabel("Receipt for Week 1: lists");
  await receipt.waitFor({ timeout: 30_000 });
  const text = (await receipt.textContent()) ?? "";
  assert.match(text, /Handed in/);
  assert.match(text, /47 KiB/);
  assert.match(text, new RegExp("d".repeat(64)));
  await shot(student, "03-home-receipt");

  // The teacher's hand-in table: on time, working, kept files; Publish again and Return feedback.
  await teacher.reload();
  const row = (user: string) => teacher.locator(`#student-${user}`);
  assert.match((await row("hana").textContent()) ?? "", /on time[\s\S]*3[\s\S]*47 KiB[\s\S]*dddddddddddd/);
  assert.match((await row("juno").textContent()) ?? "", /on time/);
  assert.match((await row("ivan").textContent()) ?? "", /working on it[\s\S]*1 file/);
  await shot(teacher, "04-console-handins");
  await Promise.all([
    teacher.waitForURL(/done=publish&value=2/),
    teacher.getByRole("button", { name: "Publish again" }).click(),
  ]);
  assert.match((await teacher.textContent("[role=status]")) ?? "", /Published again: release 2\./);
  await Promise.all([
    teacher.waitForURL(/done=feedback&value=1/),
    teacher.getByRole("button", { name: "Return feedback" }).click(),
  ]);
  const after = await platform.rest.get<Assignment>(assignmentsPath(ns, "week1"));
  assert.equal(after.spec.release, 2);
  assert.equal(after.spec.feedbackRelease, 1);
  await Promise.all([
    teacher.waitForURL(/\/console\/assignments\?template=lab$/),
    teacher.getByRole("link", { name: "All assignments" }).click(),
  ]);
  await shot(teacher, "05-console-assignments");

  assert.deepEqual(violations, []);
  await teacherContext.close();
  await studentContext.close();
});
