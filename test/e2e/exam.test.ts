/**
 * An exam in a real browser (Debian chromium driven by playwright-core) on the local platform
 * (dev/platform.ts: real OpenID sign-in, the chart's RBAC, the real operator on kwok): a student is
 * signed in, and an exam on the next day is announced on the student's home; the teacher schedules
 * an exam for the class in the console a minute ahead; when it starts, the console shows it running
 * with the student's state, the student's session from before the start is refused with "Sign in
 * again on this machine", and after signing out and in again the student is back in the
 * environment; the teacher, a proctor, opens it from the console, then ends it early there and the
 * exam is over.
 * kwok enforces no NetworkPolicy: the network is closed for real in test/node/exam.test.ts.
 * Screenshots: exam-home-upcoming.png, exam-console.png, exam-sign-in-again.png, exam-ended.png.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { examsPath, type Exam } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { paths } from "../../api/kubePaths.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { screenshotsDir } from "../support/screenshots.ts";

let platform: Platform;
let browser: Browser;

before(async () => {
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `exam-e2e-${randomBytes(3).toString("hex")}`),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const STUDENT = "kim";

async function signIn(page: Page, user: string, landing: (u: URL) => boolean): Promise<void> {
  await page.waitForSelector("input[name=name]");
  await page.fill("input[name=name]", user);
  await Promise.all([page.waitForURL(landing), page.click("button[type=submit]")]);
}

/** The console's teacher teaches the demo Template and may schedule its exams. */
async function appointExamTeacher(ns: string): Promise<void> {
  const rbac = (kind: string) => paths.namespaced("rbac.authorization.k8s.io", "v1", kind, ns);
  await platform.rest.create(rbac("roles"), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "demo-exams" },
    rules: [
      { apiGroups: ["userland.dev"], resources: ["exams"], verbs: ["get", "list", "create"] },
      {
        apiGroups: ["userland.dev"],
        resources: ["templates/coursework"],
        verbs: ["update"],
        resourceNames: [DEMO_TEMPLATE],
      },
    ],
  });
  await platform.rest.create(rbac("rolebindings"), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "demo-exams" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "demo-exams" },
    subjects: [{ kind: "User", name: `userland:${CONSOLE_TEACHER}`, apiGroup: "rbac.authorization.k8s.io" }],
  });
}

test("an exam: scheduled in the console, running with each student's state; a session from before the start signs in again; the proctor opens the environment", async () => {
  const ns = platform.namespace;
  await appointExamTeacher(ns);
  const studentContext = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const student = await studentContext.newPage();
  const teacherContext = await browser.newContext({ viewport: { width: 1150, height: 800 } });
  const teacher = await teacherContext.newPage();
  try {
    // The student signs in before the exam and works in the environment.
    await gotoSignIn(student, platform.url);
    await signIn(student, STUDENT, (u) => u.toString().startsWith(platform.url));
    await student.waitForSelector("#owner", { timeout: 60_000 });
    assert.equal(await student.textContent("#owner"), STUDENT);

    // An exam on the next day is announced on the student's home: the operator marks the
    // environment in the day before the start, and the home names the exam and when it starts.
    const tomorrow = new Date(Date.now() + 23 * 3_600_000);
    tomorrow.setUTCSeconds(0, 0);
    await platform.rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: "final" },
      spec: {
        templateName: DEMO_TEMPLATE,
        class: "*",
        title: "Final",
        start: tomorrow.toISOString(),
        end: new Date(tomorrow.getTime() + 2 * 3_600_000).toISOString(),
      },
    });
    const home = `${platform.url}_userland/home`;
    const upcomingNotice = async () => {
      await student.goto(home);
      const notice = student.locator(".exam-upcoming");
      return (await notice.count()) === 1 ? await notice.textContent() : null;
    };
    await eventually(
      "the student's home to announce the final",
      async () => (await upcomingNotice()) !== null,
    );
    const startsAt = `${tomorrow.toISOString().slice(0, 16).replace("T", " ")} UTC`;
    assert.match(
      (await upcomingNotice()) ?? "",
      new RegExp(`^\\s*Exam ahead: Exam Final starts at ${startsAt}: your .+ will restart`),
    );
    await student.screenshot({ path: join(screenshotsDir(), "exam-home-upcoming.png"), fullPage: true });
    await platform.rest.delete(examsPath(ns, "final"));

    // The teacher schedules it from the class's page: a start within the next minute (the form
    // takes minutes), so the student's session is older than the start.
    await gotoSignIn(teacher, `${platform.consoleUrl}class?template=${DEMO_TEMPLATE}`);
    await signIn(teacher, CONSOLE_TEACHER, (u) => u.toString().startsWith(platform.consoleUrl));
    await Promise.all([
      teacher.waitForURL(/\/console\/exams\?template=/),
      teacher.getByRole("link", { name: "Exams", exact: true }).click(),
    ]);
    const minute = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);
    await teacher.fill("#e-name", "quiz");
    await teacher.fill("#e-title", "Quiz 1");
    await teacher.fill("#e-start", minute(60_000));
    await teacher.fill("#e-end", minute(3_600_000));
    await teacher.fill("#e-proctors", CONSOLE_TEACHER);
    await teacher.fill("#e-class", "*");
    await Promise.all([
      teacher.waitForURL(/\/console\/exam\?.*done=created/),
      teacher.getByRole("button", { name: "Schedule" }).click(),
    ]);
    const stored = await platform.rest.get<Exam>(examsPath(ns, "quiz"));
    assert.deepEqual(stored.spec.proctors?.users, [CONSOLE_TEACHER]);

    // It starts: the console shows it running and the student's environment ready again.
    const examPage = `${platform.consoleUrl}exam?template=${DEMO_TEMPLATE}&name=quiz`;
    await eventually(
      "the console to show the exam running with the student ready",
      async () => {
        await teacher.goto(examPage);
        const row = (await teacher.locator("tbody tr").first().textContent()) ?? "";
        return (
          (await teacher.textContent("#exam-phase")) === "Running" &&
          row.includes(STUDENT) &&
          row.includes("Ready")
        );
      },
      150_000,
      2000,
    );
    await teacher.screenshot({ path: join(screenshotsDir(), "exam-console.png"), fullPage: true });

    // The student's session is from before the start: refused, with the way back.
    await student.goto(platform.url);
    assert.equal(await student.textContent("h1"), "Sign in again on this machine");
    await student.screenshot({ path: join(screenshotsDir(), "exam-sign-in-again.png"), fullPage: true });
    await student.getByRole("link", { name: "Sign out, then sign in again" }).click();
    await student.getByRole("button", { name: "Sign out" }).click();
    await signIn(student, STUDENT, (u) => u.toString().startsWith(platform.url));
    await student.waitForSelector("#owner", { timeout: 60_000 });
    assert.equal(await student.textContent("#owner"), STUDENT, "back in the environment, signed in anew");

    // The teacher, the exam's proctor, signs in again too (the console session is older than the
    // start) and opens the student's environment from the class table.
    await teacherContext.clearCookies();
    await gotoSignIn(teacher, `${platform.consoleUrl}class?template=${DEMO_TEMPLATE}`);
    await signIn(teacher, CONSOLE_TEACHER, (u) => u.toString().startsWith(platform.consoleUrl));
    const open = teacher.locator(`a[aria-label="Open ${STUDENT}'s environment"]`);
    const [visit] = await Promise.all([teacherContext.waitForEvent("page"), open.click()]);
    await visit.waitForSelector("#visitor", { timeout: 30_000 });
    assert.equal(await visit.textContent("#owner"), STUDENT);
    assert.equal(await visit.textContent("#visitor"), CONSOLE_TEACHER);
    await visit.close();

    // The teacher ends it early from the exam's page (issue 44 item 4): the platform collects and
    // restores at once instead of in an hour.
    await teacher.goto(examPage);
    await Promise.all([
      teacher.waitForURL(/done=ended/),
      teacher.getByRole("button", { name: "End now" }).click(),
    ]);
    assert.match((await teacher.textContent(".notice")) ?? "", /Ended/);
    await eventually(
      "the console to show the exam over",
      async () => {
        await teacher.goto(examPage);
        return (await teacher.textContent("#exam-phase")) === "Over";
      },
      120_000,
      2000,
    );
    assert.equal(await teacher.getByRole("button", { name: "End now" }).count(), 0, "nothing left to end");
    await teacher.screenshot({ path: join(screenshotsDir(), "exam-ended.png"), fullPage: true });
    const ended = await platform.rest.get<Exam>(examsPath(ns, "quiz"));
    assert.ok(Date.parse(ended.spec.end) < Date.now(), `ended at ${ended.spec.end}, before its hour was up`);
  } finally {
    await studentContext.close();
    await teacherContext.close();
  }
});
