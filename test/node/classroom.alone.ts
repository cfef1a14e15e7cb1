/**
 * A class's assignment cycle in a real chromium, on the real node, with real Jupyter (issue 26 item
 * 8; issue 27's visit): the chart installed with the platform's image built from the Dockerfile
 * (its own operator, copy pods, user-manager and proxy; no stand-ins), deploy/jupyter.yaml with its
 * image built locally, a teacher appointed as deploy/README.md says (the chart's teacher,
 * course-teacher and visitor roles) and three students.
 *
 * The teacher writes the materials into the course folder from their own Jupyter (its contents
 * API, as its editor saves), creates the assignment with the console's form and sees the hand-in
 * table; ann edits her copy (kept on a re-publish) and hands in with her home page's button before
 * the deadline, ben after it (late), cat never (collected at the closing time). Every receipt on a
 * home page matches the console's table and the collected files, hashed again here from what the
 * teacher's Jupyter reads in its read-only handins/. Feedback written in the teacher's Jupyter comes
 * back into ann's. While the closing time is ahead (issue 27's rules, in the time the waits for the
 * deadline and the closing time cost anyway, beside ben's late hand-in, which starts as the deadline
 * passes): an exam of cat's class (her environment alone) starts: the console shows it running,
 * cat's home says so, her session from before the start gets "Sign in again on this machine" and,
 * signed in again, she is back in her Jupyter; the teacher (its proctor) is refused with the old
 * session and in with a new one; vic, no proctor, is refused; the exam ends. (Its network:
 * test/node/exam.test.ts; here the chart's own policy already keeps environments from the node's
 * stand-ins, so a check would pass without the exam.) uma, a teacher without the visit right, gets
 * 403 from Open; with the Template asking first, vic (who holds it) waits on the waiting page until
 * ben clicks Allow on his home page, then is in ben's Jupyter; the teacher opens ann's Jupyter from
 * the class table and her home page shows the visit live. The teacher downloads every hand-in as
 * one zip (hashed again here against the receipts), uploads feedback for ben from his row of the
 * table, and ends the term: archive the class, read the dry run (the three students, not the
 * teacher), download the class's zip (ann's volume and the hand-ins in it), end it; the students'
 * environments and volumes are gone, the teacher's runs on.
 *
 * An *.alone.ts file (test/run.ts): it installs a second release of the chart in a namespace of its
 * own, which must not run beside platform.test.ts's (both would create the people's ClusterRoles;
 * here they are reused when that file made them), and its deadlines are real times on two shared
 * cores. The class is set up by test/support/nodeClassroom.ts; browsers reach the platform through
 * relays on 127.0.0.1 only (with the Ingress's path routing for the console). Screenshots:
 * artifacts/node/classroom-*.png.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import {
  childNames,
  collectionUserFolder,
  LABELS,
  submissionNameFor,
  userlandNameFor,
} from "../../api/naming.ts";
import {
  assignmentsPath,
  ExamMarks,
  examsPath,
  submissionsPath,
  userlandsPath,
  type Assignment,
  type Exam,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { VISIT_CONSENT_ANNOTATION } from "../../api/visits.ts";
import { paths } from "../../api/kubePaths.ts";
import { isNotFound } from "../../lib/kubeRest.ts";
import { extract, sha256sumOfFolder } from "../../coursework/files/test/scratch.ts";
import { MANIFEST_SHA256_SCRIPT } from "../support/coursework.ts";
import { eventually } from "../support/cluster.ts";
import { expectOnPage as expectOnPageIn, jupyterApi } from "../support/nodeBrowser.ts";
import {
  CHART_PEOPLE_ROLES,
  CLASSROOM_TEMPLATE,
  CLASSROOM_URLS,
  classroomArtifacts,
  jupyterFileText,
  saveInJupyter,
  startClassroom,
  type Classroom,
} from "../support/nodeClassroom.ts";
import {
  adminRest,
  collectionFolder,
  patchTemplate,
  patchUserland,
  waitForPhase,
} from "../support/resources.ts";
import { execInContainer, waitForOnePodReady } from "../support/realNode.ts";

const NAMESPACE = "classroom";
const TEMPLATE = CLASSROOM_TEMPLATE;
const TEACHER = "tess";
const STUDENTS = ["ann", "ben", "cat"] as const;
type Student = (typeof STUDENTS)[number];
const ASSIGNMENT = "week1";
const TITLE = "Week 1: lists";
const { jupyter: JUPYTER, home: HOME, console: CONSOLE } = CLASSROOM_URLS;
/** The chart's people roles (charts/userland/values.yaml rbac.*RoleName), bound to the teacher. */
const TEACHER_ROLES = [
  CHART_PEOPLE_ROLES.teacher,
  CHART_PEOPLE_ROLES.courseTeacher,
  CHART_PEOPLE_ROLES.visitor,
];
/** Issue 27's other teachers: uma manages the class without the visit right, vic also holds it. */
const MANAGER = "uma";
const VISITOR = "vic";
const OTHER_TEACHERS: Record<string, string[]> = {
  [MANAGER]: [CHART_PEOPLE_ROLES.teacher],
  [VISITOR]: [CHART_PEOPLE_ROLES.teacher, CHART_PEOPLE_ROLES.visitor],
};
const EXAM = "final";
/** The exam's class: only cat's environment is labelled with it (one Jupyter restarts, not three). */
const EXAM_CLASS = "exam-room";
const artifacts = classroomArtifacts();

let classroom: Classroom;
let work: string;

before(
  async () => {
    work = mkdtempSync(join(tmpdir(), "userland-classroom-"));
    classroom = await startClassroom({
      namespace: NAMESPACE,
      release: "classroom",
      teachers: { [TEACHER]: TEACHER_ROLES, ...OTHER_TEACHERS },
      people: [TEACHER, ...STUDENTS],
    });
  },
  { timeout: 1_800_000 },
);

after(async () => {
  await classroom?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(artifacts, `classroom-${name}.png`), fullPage: true });
const expectOnPage = (page: Page, selector: string, what: string, timeout = 120_000) =>
  expectOnPageIn(page, selector, what, timeout, artifacts);

const newContext = () => classroom.newContext();
const open = (context: BrowserContext, url: string, name: string) => classroom.open(context, url, name);
const signInAtProvider = (page: Page, name: string) => classroom.signInAtProvider(page, name);

function notebook(source: string) {
  return {
    type: "notebook",
    content: {
      cells: [{ cell_type: "code", source, metadata: {}, outputs: [], execution_count: null }],
      metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
      nbformat: 4,
      nbformat_minor: 5,
    },
  };
}

interface Entry {
  name: string;
  path: string;
  type: string;
}

/** The names in a folder of the page's Jupyter, or undefined when it does not exist (yet). */
async function listing(page: Page, path: string): Promise<string[] | undefined> {
  const got = await jupyterApi(page, "GET", `/api/contents/${path}?content=1`);
  if (got.status !== 200) return undefined;
  return ((got.json as { content: Entry[] }).content ?? []).map((e) => e.name).sort();
}

/**
 * coursework/README.md's check of a collected folder, with coreutils in the teacher's own
 * environment (where the teacher sees it read-only), as `kubectl exec` would: its hash, file count
 * and bytes. Not through Jupyter's contents API: it hides dot files, which a hand-in keeps.
 */
async function collectedCopy(dir: string): Promise<{ sha256: string; files: number; bytes: number }> {
  const userland = userlandNameFor(TEACHER, TEMPLATE);
  const pod = await waitForOnePodReady(
    NAMESPACE,
    `${LABELS.instance}=${childNames(TEMPLATE, userland).deployment}`,
  );
  const script =
    `cd '${dir}' && ${MANIFEST_SHA256_SCRIPT} && ` +
    `find . -type f | wc -l && find . -type f -printf '%s\\n' | awk '{ n += $1 } END { print n + 0 }' && ` +
    `find . -type f | LC_ALL=C sort`;
  const result = await execInContainer(pod, ["sh", "-euc", script]);
  assert.equal(result.code, 0, `${script}\n${result.stderr}`);
  const [sha256 = "", files = "", bytes = "", ...names] = result.stdout.trim().split("\n");
  process.stdout.write(`# collected ${dir}: ${names.join(" ")}\n`);
  return { sha256, files: Number(files), bytes: Number(bytes) };
}

/** What a home page's receipt says. */
interface HomeReceipt {
  text: string;
  sha256: string;
  files: number;
  bytes: number;
}

async function receiptOn(home: Page, timeout: number): Promise<HomeReceipt> {
  const receipt = home.getByLabel(`Receipt for ${TITLE}`);
  await receipt.waitFor({ timeout });
  const text = ((await receipt.textContent()) ?? "").replace(/\s+/g, " ");
  return {
    text,
    sha256: ((await receipt.locator("code.hash").textContent()) ?? "").trim(),
    files: Number(/Files (\d+)/.exec(text)?.[1]),
    bytes: Number(/\((\d+) bytes\)/.exec(text)?.[1]),
  };
}

/** Hand in with the home page's button and its confirm step; back on the home page. */
async function handIn(home: Page): Promise<void> {
  const card = home.locator(`#assignment-${TEMPLATE}-${ASSIGNMENT}`);
  await Promise.all([
    home.waitForURL(/\/_userland\/handin$/),
    card.getByRole("button", { name: `Hand in ${TITLE}` }).click(),
  ]);
  assert.match((await home.textContent("main")) ?? "", /You can hand in again/);
  await Promise.all([
    home.waitForURL(HOME),
    home.getByRole("button", { name: `Yes, hand in ${TITLE}` }).click(),
  ]);
}

/** The Submissions' conditions, for a failure message that says where the cycle stands. */
async function cycleState(): Promise<string> {
  const rest = await adminRest();
  const lines: string[] = [];
  const a = await rest.get<Assignment>(assignmentsPath(NAMESPACE, ASSIGNMENT)).catch(() => undefined);
  lines.push(`assignment: ${JSON.stringify(a?.status ?? null)}`);
  for (const user of STUDENTS) {
    const s = await rest
      .get<Submission>(submissionsPath(NAMESPACE, submissionNameFor(ASSIGNMENT, user)))
      .catch(() => undefined);
    lines.push(`${user}: ${JSON.stringify(s?.status ?? null)}`);
  }
  return lines.join("\n");
}

async function within<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
): Promise<T> {
  try {
    return await eventually(what, check, timeoutMs, 1000);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await cycleState()}`, { cause: error });
  }
}

/** An RFC 3339 time in whole seconds, as an Exam's spec takes it. */
const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

/** The class table's Open link for `user`'s environment, as `who` (signed in on the way) sees it. */
async function visitHref(context: BrowserContext, user: string, who = TEACHER): Promise<string> {
  const page = await open(context, `${CONSOLE}class?template=${TEMPLATE}`, who);
  const link = page.locator(
    `#row-${userlandNameFor(user, TEMPLATE)} a[aria-label="Open ${user}'s environment"]`,
  );
  await link.waitFor();
  const href = (await link.getAttribute("href")) ?? "";
  await page.close();
  assert.ok(href, `an Open link for ${user}`);
  return href;
}

/** Follows a visit link: the proxy answers 403 with the page titled `title`. */
async function expectRefused(
  context: BrowserContext,
  href: string,
  title: string,
  screenshot?: string,
): Promise<void> {
  const page = await context.newPage();
  const response = await page.goto(href, { waitUntil: "domcontentloaded" });
  assert.equal(response?.status(), 403, `${href}: ${await page.textContent("body")}`);
  assert.equal(await page.textContent("h1"), title);
  if (screenshot) await shot(page, screenshot);
  await page.close();
}

/** A datetime-local value, in UTC (the form's zone below). */
const formTime = (ms: number) => new Date(ms).toISOString().slice(0, 16);

const ROW = (user: string) => `#student-${user}`;

test(
  "a class's cycle in the browser on the real node: materials in the teacher's Jupyter, the console's form, copies in every student's Jupyter, a re-publish keeping ann's edit, hand-ins by button (on time, late) and at the closing time, receipts matching the console, the collected files and the downloaded zip, feedback back in ann's and (uploaded) ben's Jupyter, the class archived and ended",
  { timeout: 1_500_000 },
  async (t) => {
    const began = Date.now();
    const phases: string[] = [];
    let last = began;
    const phase = (what: string) => {
      phases.push(`${what}: ${((Date.now() - last) / 1000).toFixed(1)} s`);
      last = Date.now();
    };
    t.after(() => t.diagnostic(`phases: ${phases.join("; ")}`));

    for (const user of [TEACHER, ...STUDENTS])
      await waitForPhase(NAMESPACE, userlandNameFor(user, TEMPLATE), "Ready", 300_000);
    phase("four Jupyter environments Ready");

    // The teacher's materials, saved from their own Jupyter into the course folder.
    const teacher = await newContext();
    const tessJupyter = await open(teacher, JUPYTER, TEACHER);
    await expectOnPage(tessJupyter, "#notebook_list", "the teacher's Jupyter");
    await saveInJupyter(tessJupyter, "course/week1", { type: "directory" });
    await saveInJupyter(tessJupyter, "course/week1/lists.ipynb", notebook("xs = [3, 1, 2]\n# sort xs"));
    await saveInJupyter(tessJupyter, "course/week1/data.csv", {
      type: "file",
      format: "text",
      content: "a,b\n1,2\n",
    });
    await tessJupyter.goto(`${JUPYTER}tree/course/week1`, { waitUntil: "domcontentloaded" });
    await expectOnPage(
      tessJupyter,
      "#notebook_list :text('lists.ipynb')",
      "the materials in the course folder",
    );
    await shot(tessJupyter, "teacher-course-folder");
    phase("materials");

    // The console's form: a deadline far enough away for the hand-out, the re-publish and ann's
    // hand-in (about 30 s; 40 s seen under load), late hand-ins one minute longer (the form's step).
    // issue 27's exam and visits run in the waits for the deadline and the closing time, beside
    // ben's late hand-in; once the closing time has passed, nothing waits on the clock.
    const tessConsole = await open(teacher, `${CONSOLE}assignments?template=${TEMPLATE}`, TEACHER);
    await expectOnPage(tessConsole, "#f-name", "the console's new-assignment form");
    // Whole minutes: datetime-local's default step (60 s) makes the browser refuse seconds.
    const deadlineAt = Math.ceil((Date.now() + 90_000) / 60_000) * 60_000;
    await tessConsole.fill("#f-name", ASSIGNMENT);
    await tessConsole.fill("#f-title", TITLE);
    await tessConsole.selectOption("#f-folder", "course");
    await tessConsole.fill("#f-path", "week1");
    await tessConsole.fill("#f-deadline", formTime(deadlineAt));
    await tessConsole.fill("#f-lateUntil", formTime(deadlineAt + 60_000));
    await tessConsole.fill("#f-zone", "UTC");
    await shot(tessConsole, "console-new");
    await tessConsole.getByRole("button", { name: "Create and publish" }).click();
    await expectOnPage(tessConsole, "#counts", "the new assignment's page");
    assert.match(tessConsole.url(), /\/console\/assignment\?.*done=created/);
    const created = await (await adminRest()).get<Assignment>(assignmentsPath(NAMESPACE, ASSIGNMENT));
    const deadline = Date.parse(created.spec.deadline ?? "");
    const closing = Date.parse(created.spec.lateUntil ?? "");
    assert.ok(
      deadline > Date.now() && closing > deadline,
      `deadline ${created.spec.deadline}, lateUntil ${created.spec.lateUntil}`,
    );
    phase("the console's form");

    // Every student's own Jupyter shows assignments/week1/ (the teacher, who teaches, gets none).
    const students = {} as Record<Student, { context: BrowserContext; jupyter: Page }>;
    for (const user of STUDENTS) {
      const context = await newContext();
      const jupyter = await open(context, JUPYTER, user);
      await expectOnPage(jupyter, "#notebook_list", `${user}'s Jupyter`);
      students[user] = { context, jupyter };
    }
    for (const user of STUDENTS)
      await within(
        `${user}'s Jupyter to show assignments/week1/`,
        async () => {
          const names = await listing(students[user].jupyter, "work/assignments/week1");
          return names?.join(",") === "data.csv,lists.ipynb";
        },
        180_000,
      );
    assert.equal(await listing(tessJupyter, "work/assignments"), undefined, "no handout for the teacher");
    const ann = students.ann.jupyter;
    await ann.goto(`${JUPYTER}tree/work/assignments/week1`, { waitUntil: "domcontentloaded" });
    await expectOnPage(ann, "#notebook_list :text('lists.ipynb')", "the handout in ann's file browser");
    await shot(ann, "student-handout");
    phase("handed out to three");

    // ann edits the notebook; the teacher corrects it and adds hints, then publishes again.
    await saveInJupyter(
      ann,
      "work/assignments/week1/lists.ipynb",
      notebook("xs = [3, 1, 2]\nprint(sorted(xs))  # ann"),
    );
    await saveInJupyter(
      tessJupyter,
      "course/week1/lists.ipynb",
      notebook("xs = [3, 1, 2]\n# sort xs, then print them"),
    );
    await saveInJupyter(tessJupyter, "course/week1/hints.md", {
      type: "file",
      format: "text",
      content: "Try sorted().\n",
    });
    await Promise.all([
      tessConsole.waitForURL(/done=publish&value=2/),
      tessConsole.getByRole("button", { name: "Publish again" }).click(),
    ]);
    await within(
      "the console to list ann's lists.ipynb as kept",
      async () => {
        await tessConsole.reload({ waitUntil: "domcontentloaded" });
        return /lists\.ipynb/.test((await tessConsole.locator(ROW("ann")).textContent()) ?? "");
      },
      180_000,
    );
    await tessConsole.locator(`${ROW("ann")} details summary`).click();
    await shot(tessConsole, "console-kept");
    for (const user of STUDENTS)
      await within(
        `release 2 in ${user}'s Jupyter`,
        async () => (await listing(students[user].jupyter, "work/assignments/week1"))?.includes("hints.md"),
        180_000,
      );
    assert.match(
      await jupyterFileText(ann, "work/assignments/week1/lists.ipynb"),
      /# ann/,
      "ann's edit kept",
    );
    assert.match(
      await jupyterFileText(students.ben.jupyter, "work/assignments/week1/lists.ipynb"),
      /then print them/,
      "ben's untouched copy updated",
    );
    phase("re-published");

    // ann hands in before the deadline, with the button and its confirm step.
    const homes = {} as Record<Student, Page>;
    for (const user of STUDENTS) {
      homes[user] = await open(students[user].context, HOME, user);
      await expectOnPage(homes[user], `#assignment-${TEMPLATE}-${ASSIGNMENT}`, `${user}'s assignment card`);
    }
    await handIn(homes.ann);
    await shot(homes.ann, "home-handing-in");
    const annReceipt = await receiptOn(homes.ann, 180_000);
    assert.ok(Date.now() < deadline, "ann's hand-in was done before the deadline (make it later if not)");
    assert.match(annReceipt.text, /Handed in/);
    assert.doesNotMatch(annReceipt.text, /late/);
    await shot(homes.ann, "home-receipt");
    phase("ann's hand-in");

    // ben hands in once the deadline has passed, on a page of his own, beside the exam and the visits
    // below (none of them needs the deadline): the wait for it, and the minute from it to the closing
    // time, are spent on them instead of idle. Awaited before cat's collection.
    const benLate = (async () => {
      await within(
        "the deadline to pass",
        () => Date.now() > deadline + 1000,
        deadline - Date.now() + 60_000,
      );
      const page = await students.ben.context.newPage();
      await page.goto(HOME, { waitUntil: "domcontentloaded" });
      await expectOnPage(page, `#assignment-${TEMPLATE}-${ASSIGNMENT}`, "ben's assignment card, late");
      await handIn(page);
      const receipt = await receiptOn(page, 180_000);
      assert.ok(Date.now() > deadline, "after the deadline");
      assert.match(receipt.text, /Handed in .* late/);
      await shot(page, "home-receipt-late");
      phases.push(
        `ben's late hand-in (beside): done ${((Date.now() - deadline) / 1000).toFixed(1)} s after the deadline`,
      );
      return receipt;
    })();
    // Its failure fails the test where it is awaited; until then it must not count as unhandled.
    benLate.catch(() => undefined);

    // The class table's Open link for cat, fetched with the teacher's session from before the exam.
    const classTable = `${CONSOLE}class?template=${TEMPLATE}`;
    const catLink = await visitHref(teacher, "cat");

    // An exam of cat's class (the class label on her environment alone), proctored by the teacher.
    const admin = await adminRest();
    const catUserland = userlandNameFor("cat", TEMPLATE);
    await patchUserland(NAMESPACE, catUserland, { metadata: { labels: { [LABELS.class]: EXAM_CLASS } } });
    const examStart = Date.now() + 5_000;
    await admin.create(examsPath(NAMESPACE), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: EXAM },
      spec: {
        templateName: TEMPLATE,
        class: EXAM_CLASS,
        title: "Final exam",
        start: isoSeconds(examStart),
        end: isoSeconds(examStart + 3_600_000),
        proctors: { users: [TEACHER] },
      },
    });
    // Restarted with the exam's label (out of the chart's open policy, into the exam's).
    await waitForOnePodReady(
      NAMESPACE,
      `${LABELS.instance}=${childNames(TEMPLATE, catUserland).deployment},${ExamMarks.examLabel}=${EXAM}`,
      240_000,
    );
    const examPage = await open(teacher, `${CONSOLE}exam?template=${TEMPLATE}&name=${EXAM}`, TEACHER);
    await within(
      "the console to show the exam running with cat ready",
      async () => {
        await examPage.reload({ waitUntil: "domcontentloaded" });
        const rows = (await examPage.locator("tbody tr").allTextContents()).join("\n");
        return (await examPage.textContent("#exam-phase")) === "Running" && /cat[\s\S]*Ready/.test(rows);
      },
      120_000,
    );
    await shot(examPage, "exam-console");
    await examPage.close();
    // Her home, open all along, reloads by itself as her environment restarts for the exam.
    await expectOnPage(
      homes.cat,
      "main :text('In the exam Final exam until')",
      "the exam on cat's home",
      60_000,
    );
    await shot(homes.cat, "exam-home");
    phase("exam started");

    // cat's session is from before the start: refused until she signs in again, then in her Jupyter.
    const catJupyter = students.cat.jupyter;
    const stale = await catJupyter.goto(JUPYTER, { waitUntil: "domcontentloaded" });
    assert.equal(stale?.status(), 403);
    assert.equal(await catJupyter.textContent("h1"), "Sign in again on this machine");
    await shot(catJupyter, "exam-sign-in-again");
    await catJupyter.getByRole("link", { name: "Sign out, then sign in again" }).click();
    await catJupyter.getByRole("button", { name: "Sign out" }).click();
    await signInAtProvider(catJupyter, "cat");
    await expectOnPage(catJupyter, "#notebook_list", "cat's Jupyter, signed in again");
    assert.equal((await jupyterApi(catJupyter, "GET", "/api/contents/work/assignments/week1")).status, 200);

    // The proctor: their session from before the start is refused as cat's was; signed in anew, in.
    await expectRefused(teacher, catLink, "Sign in again on this machine");
    const proctor = await newContext();
    const proctorClass = await open(proctor, classTable, TEACHER);
    const [proctorTab] = await Promise.all([
      proctor.waitForEvent("page"),
      proctorClass.locator(`#row-${catUserland} a[aria-label="Open cat's environment"]`).click(),
    ]);
    await expectOnPage(proctorTab, "#notebook_list", "cat's Jupyter in the proctor's tab");
    assert.equal(
      (await jupyterApi(proctorTab, "GET", "/api/contents/work/assignments/week1")).status,
      200,
      "the proctor is in cat's environment",
    );
    await proctor.close();

    // vic, signed in since the start and holding the visit right (used below to visit ben), is no proctor.
    const vicAgain = await newContext();
    await expectRefused(
      vicAgain,
      await visitHref(vicAgain, "cat", VISITOR),
      "You may not open this environment",
      "exam-visit-refused",
    );
    await vicAgain.close();
    phase("exam: signed in again, proctor in, another teacher refused");

    // The exam ends now (an admin moves its end): cat's environment is restored, the policy gone.
    await admin.patch(examsPath(NAMESPACE, EXAM), { spec: { end: isoSeconds(Date.now() + 2_000) } });
    await within(
      "the exam to be over",
      async () => (await admin.get<Exam>(examsPath(NAMESPACE, EXAM))).status?.phase === "Over",
      180_000,
    );
    await patchUserland(NAMESPACE, catUserland, { metadata: { labels: { [LABELS.class]: null } } });
    // Gone before the namespace is (its finalizer is the operator's, which the namespace deletes too).
    await admin.delete(examsPath(NAMESPACE, EXAM));
    await within(
      "the exam to be deleted",
      async () => (await admin.get(examsPath(NAMESPACE, EXAM)).then(() => false, isNotFound)) === true,
      60_000,
    );
    phase("exam over");

    // issue 27's rules in the proxy, while the closing time is ahead (its wait costs no time of its own).

    // A teacher who manages the class but lacks the visit right: Open answers 403.
    const uma = await newContext();
    const umaLink = await visitHref(uma, "ann", MANAGER);
    await expectRefused(uma, umaLink, "You may not open this environment", "visit-refused");
    await uma.close();
    phase("no visit right: 403");

    // A Template that asks first: vic waits on the waiting page until ben clicks Allow on his home.
    await patchTemplate(NAMESPACE, TEMPLATE, {
      metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: "required" } },
    });
    const vic = await newContext();
    const vicClass = await open(vic, classTable, VISITOR);
    const [waiting] = await Promise.all([
      vic.waitForEvent("page"),
      vicClass
        .locator(`#row-${userlandNameFor("ben", TEMPLATE)} a[aria-label="Open ben's environment"]`)
        .click(),
    ]);
    const waitingText = "text=Waiting for ben to allow your visit";
    await expectOnPage(waiting, waitingText, "the waiting page", 60_000);
    const allow = homes.ben.locator(`button[aria-label="Allow ${VISITOR} to open your JupyterLab"]`);
    await allow.waitFor({ timeout: 60_000 });
    // Still waiting (its page asks every 3 s): nothing but ben's click lets vic in.
    await waiting.waitForEvent("load", { timeout: 10_000 });
    await expectOnPage(waiting, waitingText, "still the waiting page before ben's Allow", 10_000);
    await shot(waiting, "visit-waiting");
    await shot(homes.ben, "home-visit-request");
    await Promise.all([homes.ben.waitForURL(HOME), allow.click()]);
    await expectOnPage(waiting, "#notebook_list", "ben's Jupyter in vic's tab once ben allowed", 60_000);
    assert.equal(
      (await jupyterApi(waiting, "GET", "/api/contents/work/assignments/week1")).status,
      200,
      "vic is in a student's environment (a teacher's has no assignments/)",
    );
    await homes.ben.locator("li.visit-live").waitFor({ timeout: 60_000 });
    assert.match((await homes.ben.locator("li.visit-live").textContent()) ?? "", new RegExp(VISITOR));
    await vic.close();
    await patchTemplate(NAMESPACE, TEMPLATE, {
      metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: null } },
    });
    phase("consent: waited for ben's Allow");

    // issue 27: the teacher opens ann's Jupyter from the class table; her home shows the visit live.
    // In a browser of their own: a visit takes the Jupyter host of its browser to ann's environment,
    // and the teacher's first browser reads the collection in their own Jupyter below.
    const visiting = await newContext();
    const visitClass = await open(visiting, classTable, TEACHER);
    const openLink = visitClass.locator(
      `#row-${userlandNameFor("ann", TEMPLATE)} a[aria-label="Open ann's environment"]`,
    );
    await openLink.waitFor();
    const [visit] = await Promise.all([visiting.waitForEvent("page"), openLink.click()]);
    await expectOnPage(visit, "#notebook_list", "ann's Jupyter in the teacher's tab");
    assert.ok(
      (await jupyterApi(visit, "GET", "/api/contents/work/assignments/week1"))?.status === 200,
      "the visitor is in ann's environment",
    );
    await homes.ann.locator("li.visit-live").waitFor({ timeout: 60_000 });
    assert.match((await homes.ann.locator("li.visit-live").textContent()) ?? "", new RegExp(TEACHER));
    await shot(homes.ann, "home-visit-live");
    await shot(visit, "visit-jupyter");
    await visiting.close();
    phase("a visit");
    const benReceipt = await benLate;
    phase("ben's late hand-in awaited");

    // cat does nothing: her home page (open, following by itself) shows the collection.
    const catReceipt = await receiptOn(homes.cat, closing - Date.now() + 180_000);
    assert.ok(Date.now() >= closing, "collected at the closing time, not before");
    assert.match(catReceipt.text, /Collected at closing/);
    await shot(homes.cat, "home-collected");
    phase("cat collected at the closing time");

    // The console's table: on time, late, collected; each row as the student's receipt says.
    await tessConsole.reload({ waitUntil: "domcontentloaded" });
    const receipts: Record<Student, HomeReceipt> = { ann: annReceipt, ben: benReceipt, cat: catReceipt };
    const states: Record<Student, RegExp> = { ann: /on time/, ben: /late/, cat: /collected at closing/ };
    for (const user of STUDENTS) {
      const row = tessConsole.locator(ROW(user));
      assert.match((await row.locator("td").first().textContent()) ?? "", states[user], `${user}'s state`);
      assert.equal(
        await row.locator("td.mono").getAttribute("title"),
        receipts[user].sha256,
        `${user}'s hash in the console and on the home page`,
      );
      // The receipt's cells: time, files, size, hash.
      assert.match(
        (await row.locator("td").nth(2).textContent()) ?? "",
        new RegExp(`^\\s*${receipts[user].files}\\b`),
        `${user}'s file count`,
      );
    }
    assert.equal(await tessConsole.locator(ROW(TEACHER)).count(), 0, "the teacher is not a student");
    await shot(tessConsole, "console-handins");

    // The collected copies, read in the teacher's Jupyter (read-only) and hashed again here.
    const folder = await collectionFolder(NAMESPACE, ASSIGNMENT);
    for (const user of STUDENTS) {
      const dir = `collection/handins/${folder}/${collectionUserFolder(user)}/1`;
      const recomputed = await collectedCopy(`/home/jovyan/${dir}`);
      assert.deepEqual(
        recomputed,
        { sha256: receipts[user].sha256, files: receipts[user].files, bytes: receipts[user].bytes },
        `${user}'s collected files hash as the receipt says`,
      );
    }
    const collectedAnn = `collection/handins/${folder}/${collectionUserFolder("ann")}/1/lists.ipynb`;
    assert.match(
      await jupyterFileText(tessJupyter, collectedAnn),
      /# ann/,
      "ann's edit is what was collected",
    );
    const overwrite = await jupyterApi(
      tessJupyter,
      "PUT",
      `/api/contents/${collectedAnn}`,
      notebook("changed"),
    );
    assert.notEqual(overwrite.status, 200, "the teacher's handins/ is read-only");
    assert.notEqual(overwrite.status, 201, "the teacher's handins/ is read-only");
    phase("table and hashes");

    // Feedback for ann, written in the teacher's Jupyter, returned from the console.
    const feedbackDir = `collection/feedback/${folder}/${collectionUserFolder("ann")}`;
    if ((await listing(tessJupyter, `collection/feedback/${folder}`)) === undefined)
      await saveInJupyter(tessJupyter, `collection/feedback/${folder}`, { type: "directory" });
    await saveInJupyter(tessJupyter, feedbackDir, { type: "directory" });
    await saveInJupyter(tessJupyter, `${feedbackDir}/notes.md`, {
      type: "file",
      format: "text",
      content: "Well sorted, ann.\n",
    });
    await Promise.all([
      tessConsole.waitForURL(/done=feedback&value=1/),
      tessConsole.getByRole("button", { name: "Return feedback" }).click(),
    ]);
    await within(
      "the feedback in ann's Jupyter",
      async () => (await listing(ann, "work/assignments/week1/feedback"))?.includes("notes.md"),
      180_000,
    );
    assert.equal(
      await jupyterFileText(ann, "work/assignments/week1/feedback/notes.md"),
      "Well sorted, ann.\n",
    );
    // Her home page, open all along, shows it by itself (its script polls every 15 s).
    await expectOnPage(
      homes.ann,
      `#assignment-${TEMPLATE}-${ASSIGNMENT} :text('Feedback: 1 file')`,
      "the feedback on ann's home",
    );
    await shot(homes.ann, "home-feedback");
    phase("feedback");

    // Every hand-in as one zip from the console (the user-manager streams an archive pod's answer):
    // each student's one version in it hashes as their receipt says.
    const handinsZip = join(work, "handins.zip");
    const [handinsDownload] = await Promise.all([
      tessConsole.waitForEvent("download", { timeout: 180_000 }),
      tessConsole.getByRole("link", { name: "Download all hand-ins" }).click(),
    ]);
    await handinsDownload.saveAs(handinsZip);
    extract(handinsZip, join(work, "handins"));
    for (const user of STUDENTS)
      assert.equal(
        sha256sumOfFolder(join(work, "handins", user, "1")),
        receipts[user].sha256,
        `${user}'s folder in the downloaded zip hashes as the receipt says`,
      );
    phase("downloaded");

    // Feedback for ben uploaded from his row of the console's table, then returned.
    await tessConsole.reload({ waitUntil: "domcontentloaded" });
    await tessConsole.locator(`${ROW("ben")} input[type=file]`).setInputFiles({
      name: "notes.md",
      mimeType: "text/markdown",
      buffer: Buffer.from("Late, but right, ben.\n"),
    });
    await Promise.all([
      tessConsole.waitForURL(/\/console\/assignment\?/),
      tessConsole.locator(ROW("ben")).getByRole("button", { name: "Upload" }).click(),
    ]);
    await Promise.all([
      tessConsole.waitForURL(/done=feedback&value=2/),
      tessConsole.getByRole("button", { name: "Return feedback" }).click(),
    ]);
    await within(
      "the uploaded feedback in ben's Jupyter",
      async () =>
        (await listing(students.ben.jupyter, "work/assignments/week1/feedback"))?.includes("notes.md"),
      180_000,
    );
    assert.equal(
      await jupyterFileText(students.ben.jupyter, "work/assignments/week1/feedback/notes.md"),
      "Late, but right, ben.\n",
    );
    phase("feedback uploaded");
    for (const user of STUDENTS) await students[user].context.close();

    // The end of the term: archive the class, read the dry run, download the class's zip, end it.
    const classPage = await open(teacher, classTable, TEACHER);
    await classPage.getByRole("link", { name: "End of term" }).click();
    await Promise.all([
      classPage.waitForURL(/\/console\/class-archive\?/),
      classPage.getByRole("button", { name: "Plan this class's archive" }).click(),
    ]);
    const phaseText = async () => {
      await classPage.reload({ waitUntil: "domcontentloaded" });
      return (await classPage.locator("#phase").textContent()) ?? "";
    };
    // The plan first (issue 41 item 9): the students it would stop, nobody stopped yet.
    await within("the plan", async () => /Planned/.test(await phaseText()), 60_000);
    const planned = await classPage
      .locator("table", {
        has: classPage.locator("caption", { hasText: "environments stopped and volumes read" }),
      })
      .locator("tbody th .user")
      .allTextContents();
    assert.deepEqual(planned.sort(), [...STUDENTS].sort(), "the plan lists the three students");
    await shot(classPage, "console-end-plan");
    await Promise.all([
      classPage.waitForURL(/done=stop/),
      classPage.getByRole("button", { name: /^Stop \d+ environments? and archive$/ }).click(),
    ]);
    await within("the class archive's dry run", async () => /Dry run/.test(await phaseText()), 600_000);
    const toDelete = await classPage
      .locator("table", { has: classPage.locator("caption", { hasText: "Ending the class deletes" }) })
      .locator("tbody th .user")
      .allTextContents();
    assert.deepEqual(
      toDelete.sort(),
      [...STUDENTS].sort(),
      "the dry run lists the three students, not the teacher",
    );
    await shot(classPage, "console-end-dry-run");
    const classZip = join(work, "class.zip");
    const [classDownload] = await Promise.all([
      classPage.waitForEvent("download", { timeout: 180_000 }),
      classPage.getByRole("link", { name: "Download the class's zip" }).click(),
    ]);
    await classDownload.saveAs(classZip);
    extract(classZip, join(work, "class"));
    const annHome = join(work, "class", "students", collectionUserFolder("ann"), "work");
    assert.match(
      readFileSync(join(annHome, "assignments", "week1", "lists.ipynb"), "utf8"),
      /# ann/,
      "ann's home volume is in the class's zip",
    );
    assert.equal(
      sha256sumOfFolder(join(work, "class", "handins", ASSIGNMENT, collectionUserFolder("cat"), "1")),
      receipts.cat.sha256,
      "the collected hand-ins are in the class's zip",
    );
    await classPage.check("#understood");
    await Promise.all([
      classPage.waitForURL(/\/console\/class-archive\?/),
      classPage.getByRole("button", { name: "End the class" }).click(),
    ]);
    await within("the class to end", async () => /^\s*Ended/.test(await phaseText()), 300_000);
    await shot(classPage, "console-end-ended");
    const rest = await adminRest();
    const gone = async (path: string) => {
      try {
        await rest.get(path);
        return false;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    };
    for (const user of STUDENTS) {
      const name = userlandNameFor(user, TEMPLATE);
      const claim = childNames(TEMPLATE, name).pvc("work");
      await within(
        `${user}'s environment and volume to be gone`,
        async () =>
          (await gone(userlandsPath(NAMESPACE, name))) &&
          (await gone(paths.namespaced("", "v1", "persistentvolumeclaims", NAMESPACE, claim))),
        120_000,
      );
    }
    await waitForPhase(NAMESPACE, userlandNameFor(TEACHER, TEMPLATE), "Ready", 60_000);
    phase("the end of the term");

    await teacher.close();
  },
);
