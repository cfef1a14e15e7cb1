/**
 * A grading cycle in a real chromium, on the real node (issue 42's "Done when"): the chart
 * installed with the platform's image (its own operator runs the sealed grading pods), Jupyter
 * from deploy/jupyter.yaml with a teachers-only `graders` folder, a teacher and four students.
 *
 * The teacher saves a Gradescope autograder (test/node/fixtures/gradescope-calculator: visible
 * and hidden tests) into the teachers-only folder and the starter file into the course folder from
 * her own Jupyter; the assignment names the autograder. The students write their calculator.py in
 * their Jupyter and hand in with their home page's button: ann right, ben half right and then,
 * fixed, again (version 2), cat a loop that first reaches for the network. The teacher gives dan
 * an extension in the grade book; the others' deadline passes (ben can no longer hand in) and dan
 * hands in, not late. Scores: ann 5, ben 2 then 5, cat timed out with the network blocked in its
 * output, dan 5; the hidden test is in no student's environment or page. The teacher writes a
 * rubric, applies an item to ben's hand-in with a comment, changes the item's points and sees the
 * total follow, releases the grades and downloads the Canvas file; each student sees their own
 * score and comment and nobody else's, ben also in his feedback/grade.md. Screenshots: artifacts/node/grading-class-*.png.
 *
 * An *.alone.ts file (test/run.ts): a release of the chart of its own, real deadlines on two
 * shared cores.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parse } from "csv-parse/sync";
import type { BrowserContext, Page } from "playwright-core";
import {
  childNames,
  collectionUserFolder,
  LABELS,
  submissionNameFor,
  userlandNameFor,
} from "../../api/naming.ts";
import { kubeTime } from "../../api/times.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { eventually } from "../support/cluster.ts";
import { jupyterApi, expectOnPage as expectOnPageIn } from "../support/nodeBrowser.ts";
import {
  CHART_PEOPLE_ROLES,
  CLASSROOM_TEMPLATE,
  CLASSROOM_URLS,
  classroomArtifacts,
  jupyterFileText,
  saveInJupyter,
  startClassroom,
  textFile,
  type Classroom,
} from "../support/nodeClassroom.ts";
import { phaseClock } from "../support/phases.ts";
import { adminRest, collectionFolder, waitForPhase } from "../support/resources.ts";
import { execInContainer, filesOf, waitForOnePodReady } from "../support/realNode.ts";

const NAMESPACE = "grading-class";
const TEMPLATE = CLASSROOM_TEMPLATE;
const TEACHER = "tess";
const STUDENTS = ["ann", "ben", "cat", "dan"] as const;
type Student = (typeof STUDENTS)[number];
const ASSIGNMENT = "calc";
const TITLE = "Calculator";
const { jupyter: JUPYTER, home: HOME, console: CONSOLE } = CLASSROOM_URLS;
const FIXTURE = join(repoRoot, "test", "node", "fixtures", "gradescope-calculator");
const TIMEOUT_SECONDS = 20;
/** A grading run on the real node (three containers) with other runs beside it. */
const GRADE_MS = 180_000;
const artifacts = classroomArtifacts();

let classroom: Classroom;

before(
  async () => {
    classroom = await startClassroom({
      namespace: NAMESPACE,
      release: "grading-class",
      // The autograder's folder: mounted in teachers' environments only.
      templateSpec: (spec) => ({
        ...spec,
        coursework: {
          ...spec.coursework,
          folders: [
            ...(spec.coursework?.folders ?? []),
            {
              // The course folder's claim spec: the machine's storage class, as localTemplate set it.
              ...spec.coursework!.folders![0]!,
              name: "graders",
              mountPath: "/home/jovyan/graders",
              teachersOnly: true,
            },
          ],
        },
      }),
      teachers: { [TEACHER]: [CHART_PEOPLE_ROLES.teacher, CHART_PEOPLE_ROLES.courseTeacher] },
      people: [TEACHER, ...STUDENTS],
    });
  },
  { timeout: 1_800_000 },
);

after(async () => {
  await classroom?.close();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(artifacts, `grading-class-${name}.png`), fullPage: true });
const expectOnPage = (page: Page, selector: string, what: string, timeout = 120_000) =>
  expectOnPageIn(page, selector, what, timeout, artifacts);

const submission = (user: string) =>
  adminRest().then((rest) =>
    rest.get<Submission>(submissionsPath(NAMESPACE, submissionNameFor(ASSIGNMENT, user))),
  );

/** Hand in (again) with the home page's button and its confirm step; back on the home page. */
async function handIn(home: Page, again: boolean): Promise<void> {
  const card = home.locator(`#assignment-${TEMPLATE}-${ASSIGNMENT}`);
  await Promise.all([
    home.waitForURL(/\/_userland\/handin$/),
    card.getByRole("button", { name: `${again ? "Hand in again" : "Hand in"} ${TITLE}` }).click(),
  ]);
  await Promise.all([
    home.waitForURL(HOME),
    home.getByRole("button", { name: `Yes, hand in ${TITLE}` }).click(),
  ]);
}

/** Waits for the Submission's run on `version` to end; returns it. */
const gradedVersion = (user: string, version: number) =>
  eventually(
    `${user}'s version ${version} graded`,
    async () => {
      const s = await submission(user);
      return (
        s.status?.receipt?.version === version &&
        s.status.gradeAttempt?.receiptSha256 === s.status.receipt.sha256 &&
        s
      );
    },
    GRADE_MS,
    1000,
  );

test(
  "a grading cycle in the browser on the real node: a Gradescope autograder in a teachers-only folder, hand-ins by button graded in sealed pods (right, half right then fixed, a loop reaching for the network), an extension past the others' deadline, a rubric item whose points change, grades released, the Canvas file, each student's own view",
  { timeout: 1_500_000 },
  async (t) => {
    const phase = phaseClock(t);
    const rest = await adminRest();
    for (const user of [TEACHER, ...STUDENTS])
      await waitForPhase(NAMESPACE, userlandNameFor(user, TEMPLATE), "Ready", 300_000);
    phase("five Jupyter environments Ready");

    // The teacher's autograder, into the teachers-only folder; the starter file into the course folder.
    const teacher = await classroom.newContext();
    const tessJupyter = await classroom.open(teacher, JUPYTER, TEACHER);
    await expectOnPage(tessJupyter, "#notebook_list", "the teacher's Jupyter");
    const autograder = filesOf(join(FIXTURE, "autograder"));
    for (const folder of ["graders/calc", "graders/calc/tests", "course/calc"])
      await saveInJupyter(tessJupyter, folder, { type: "directory" });
    for (const [path, content] of Object.entries(autograder))
      await saveInJupyter(tessJupyter, `graders/calc/${path}`, textFile(content));
    await saveInJupyter(
      tessJupyter,
      "course/calc/calculator.py",
      textFile(
        "def add(a, b):\n    pass\n\n\ndef subtract(a, b):\n    pass\n\n\ndef multiply(a, b):\n    pass\n",
      ),
    );
    // As deploy/README.md's grading section applies calc.yaml; the deadline leaves time for three hand-ins.
    await rest.create(assignmentsPath(NAMESPACE), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Assignment",
      metadata: { name: ASSIGNMENT },
      spec: {
        templateName: TEMPLATE,
        title: TITLE,
        source: { folder: "course", path: "calc" },
        deadline: kubeTime(new Date(Date.now() + 30 * 60_000)),
        autograder: { folder: "graders", path: "calc", timeoutSeconds: TIMEOUT_SECONDS },
      },
    });
    phase("autograder and assignment");

    // Each student's Jupyter has assignments/calc/; they write their calculator.py there.
    const ann0 = await waitForOnePodReady(
      NAMESPACE,
      `${LABELS.instance}=${childNames(TEMPLATE, userlandNameFor("ann", TEMPLATE)).deployment}`,
    );
    const submissionsOf = (name: string) =>
      readFileSync(join(FIXTURE, "submissions", name), "utf8").replace(
        "__TARGET__",
        `${ann0.status?.podIP}:8888`,
      );
    const work: Record<Student, string> = {
      ann: submissionsOf("correct.py"),
      ben: submissionsOf("partial.py"),
      // The network first (its output says what happened), then a loop.
      // Flushed: a killed Python loses what it buffered, and its output is what the teacher reads.
      cat: `${submissionsOf("network.py")}\n\nimport sys\nsys.stdout.flush()\nwhile True:\n    pass\n`,
      dan: submissionsOf("correct.py"),
    };
    const people = {} as Record<Student, { context: BrowserContext; jupyter: Page; home: Page }>;
    for (const user of STUDENTS) {
      const context = await classroom.newContext();
      const jupyter = await classroom.open(context, JUPYTER, user);
      await eventually(
        `${user}'s copy of the assignment`,
        async () => (await jupyterApi(jupyter, "GET", "/api/contents/work/assignments/calc")).status === 200,
        120_000,
        1000,
      );
      const home = await context.newPage();
      await home.goto(HOME, { waitUntil: "domcontentloaded" });
      people[user] = { context, jupyter, home };
    }
    phase("handed out");
    /**
     * `user`'s home page loaded again, in a new tab: the page's own script reloads itself when a
     * state changes, and a reload of ours in that moment is aborted.
     */
    const freshHome = async (user: Student): Promise<Page> => {
      const stale = people[user].home;
      const home = await people[user].context.newPage();
      await home.goto(HOME, { waitUntil: "domcontentloaded" });
      people[user].home = home;
      await stale.close();
      return home;
    };

    for (const user of ["ann", "ben", "cat"] as const) {
      await saveInJupyter(people[user].jupyter, "work/assignments/calc/calculator.py", textFile(work[user]));
      await handIn(await freshHome(user), false);
    }
    const [ann, ben1, cat] = [
      await gradedVersion("ann", 1),
      await gradedVersion("ben", 1),
      await gradedVersion("cat", 1),
    ];
    assert.deepEqual([ann.status?.grade?.score, ann.status?.gradeAttempt?.reason], [5, "Graded"]);
    assert.deepEqual([ben1.status?.grade?.score, ben1.status?.gradeAttempt?.reason], [2, "Graded"]);
    assert.equal(cat.status?.grade, undefined, "cat's loop has no score");
    assert.equal(cat.status?.gradeAttempt?.reason, "TimedOut");
    assert.match(
      cat.status?.gradeAttempt?.message ?? "",
      new RegExp(`^timed out after ${TIMEOUT_SECONDS} s`),
    );
    const catOut = await jupyterFileText(
      tessJupyter,
      `collection/grades/${await collectionFolder(NAMESPACE, ASSIGNMENT)}/${collectionUserFolder("cat")}/${cat.status?.gradeAttempt?.key}/stdout`,
    );
    assert.match(catOut, /^dns: blocked \(/m, "no resolver in the grading pod");
    assert.match(catOut, /^http: blocked \(/m, "nothing reachable from the grading pod");
    phase("three hand-ins graded");

    // ben fixes his work and hands in again before the deadline: version 2 counts.
    await saveInJupyter(people.ben.jupyter, "work/assignments/calc/calculator.py", textFile(work.ann));
    await handIn(await freshHome("ben"), true);
    const ben2 = await gradedVersion("ben", 2);
    assert.equal(ben2.status?.grade?.score, 5);
    assert.deepEqual(
      ben2.status?.versions?.map((v) => [v.version, v.score ?? null]),
      [
        [1, 2],
        [2, null],
      ],
    );
    phase("ben's second version");

    // dan's own deadline, given in the grade book; then the others' deadline passes.
    const tessConsole = await classroom.open(teacher, `${CONSOLE}gradebook?template=${TEMPLATE}`, TEACHER);
    await expectOnPage(tessConsole, "#x-user", "the grade book's extension form");
    await tessConsole.selectOption("#x-assignment", ASSIGNMENT);
    await tessConsole.fill("#x-user", "dan");
    await tessConsole.fill("#x-deadline", new Date(Date.now() + 2 * 3_600_000).toISOString().slice(0, 16));
    await tessConsole.fill("#x-note", "accommodation");
    await Promise.all([
      tessConsole.waitForURL(/done=extended/),
      tessConsole.getByRole("button", { name: "Give the extension" }).click(),
    ]);
    await rest.patch(assignmentsPath(NAMESPACE, ASSIGNMENT), { spec: { deadline: kubeTime(new Date()) } });
    await eventually(
      "ben's home without a Hand in again once the deadline passed",
      async () => {
        const home = await freshHome("ben");
        return (await home.getByRole("button", { name: `Hand in again ${TITLE}` }).count()) === 0;
      },
      30_000,
      1000,
    );
    await saveInJupyter(people.dan.jupyter, "work/assignments/calc/calculator.py", textFile(work.dan));
    await handIn(await freshHome("dan"), false);
    const dan = await gradedVersion("dan", 1);
    assert.deepEqual(
      [dan.status?.receipt?.late, dan.status?.receipt?.extended, dan.status?.grade?.score],
      [false, true, 5],
      "after the others' deadline, before his own: not late",
    );
    phase("dan's extension");

    // The rubric, an item applied to ben's hand-in, its points changed: the total follows.
    await tessConsole.goto(`${CONSOLE}rubric?template=${TEMPLATE}&name=${ASSIGNMENT}`);
    const rubric = (points: number) =>
      `style | ${points} | Readable, well named\nno-tests | -1 | No tests of their own\n`;
    await tessConsole.fill("#rubric-text", rubric(2));
    await Promise.all([
      tessConsole.waitForURL(/done=saved/),
      tessConsole.getByRole("button", { name: "Save the rubric" }).click(),
    ]);
    await tessConsole.goto(`${CONSOLE}review?template=${TEMPLATE}&name=${ASSIGNMENT}&user=ben`);
    const reviewText = (await tessConsole.textContent("main")) ?? "";
    assert.match(reviewText, /version 2 of 2, the one that counts/);
    assert.match(reviewText, /test_hidden_multiply_negative/, "teachers see the hidden test");
    await tessConsole.check("#i-style");
    await tessConsole.fill("#r-comment", "Fixed in version 2: well done.");
    await Promise.all([
      tessConsole.waitForURL(/done=saved/),
      tessConsole.getByRole("button", { name: "Save the review" }).click(),
    ]);
    await shot(tessConsole, "review");
    const bookCell = async (user: string) => {
      await tessConsole.goto(`${CONSOLE}gradebook?template=${TEMPLATE}`);
      const row = tessConsole.locator("tbody tr", { has: tessConsole.locator(`th:text-is("${user}")`) });
      return ((await row.locator("td").first().textContent()) ?? "").replace(/\s+/g, " ").trim();
    };
    assert.match(await bookCell("ben"), /^7 version 2 of 2$/, "5 + 2 for style");
    await tessConsole.goto(`${CONSOLE}rubric?template=${TEMPLATE}&name=${ASSIGNMENT}`);
    await tessConsole.fill("#rubric-text", rubric(3));
    await Promise.all([
      tessConsole.waitForURL(/done=saved/),
      tessConsole.getByRole("button", { name: "Save the rubric" }).click(),
    ]);
    assert.match(await bookCell("ben"), /^8 version 2 of 2$/, "5 + 3 for style");
    assert.match(await bookCell("cat"), /not graded/);
    assert.match(await bookCell("dan"), /^5 extension$/);
    phase("rubric");

    // Released; the Canvas file.
    await Promise.all([
      tessConsole.waitForURL(/\/console\/gradebook\?/),
      tessConsole.getByRole("button", { name: `Release the grades of ${TITLE}` }).click(),
    ]);
    await shot(tessConsole, "gradebook");
    const [download] = await Promise.all([
      tessConsole.waitForEvent("download"),
      tessConsole.getByRole("link", { name: "Canvas" }).click(),
    ]);
    const rows: string[][] = parse(readFileSync(await download.path(), "utf8"), { bom: true });
    assert.equal(rows[0]?.join(","), `Student,ID,SIS User ID,SIS Login ID,Section,${TITLE} (${ASSIGNMENT})`);
    assert.deepEqual(
      STUDENTS.map((u) => [u, rows.find((r) => r[0] === u)?.[5]]),
      [
        ["ann", "5"],
        ["ben", "8"],
        ["cat", ""],
        ["dan", "5"],
      ],
    );
    phase("released");

    // Each student's home: their own score and comment; the hidden test nowhere.
    // The proxy keeps a student's assignments up to 10 s (services/proxy/endpoints/coursework.ts):
    // a page loaded just after the release may not show it yet. cat has no grade to wait for.
    const card = async (user: Student) =>
      eventually(
        `${user}'s home page with the released grade`,
        async () => {
          const home = await freshHome(user);
          const assignment = home.locator(`#assignment-${TEMPLATE}-${ASSIGNMENT}`);
          await assignment.waitFor();
          const released = await assignment.locator('.grade[data-released="true"]').count();
          if (released === 0 && user !== "cat") return undefined;
          return { text: (await assignment.textContent()) ?? "", html: await home.content() };
        },
        30_000,
        2000,
      );
    const benView = await card("ben");
    assert.match(benView.text, /Score: 8 of/);
    assert.match(benView.text, /Fixed in version 2: well done\./);
    await shot(people.ben.home, "student");
    // The same, as a file in his feedback folder (the operator's copy pod), in his own Jupyter.
    const report = await eventually(
      "ben's feedback/grade.md",
      async () => {
        const got = await jupyterApi(
          people.ben.jupyter,
          "GET",
          "/api/contents/work/assignments/calc/feedback/grade.md?content=1&type=file&format=text",
        );
        const text = got.status === 200 ? (got.json as { content: string }).content : "";
        return /Score: 8 of/.test(text) && text;
      },
      GRADE_MS,
      1000,
    );
    assert.match(report, /> Fixed in version 2: well done\./);
    assert.doesNotMatch(report, /test_hidden/);
    for (const user of STUDENTS) {
      const view = await card(user);
      assert.doesNotMatch(view.html, /test_hidden|HIDDEN/, `${user}'s page has no hidden test`);
      if (user !== "ben") assert.doesNotMatch(view.html, /well done/, `${user} sees nothing of ben's review`);
      const pod = await waitForOnePodReady(
        NAMESPACE,
        `${LABELS.instance}=${childNames(TEMPLATE, userlandNameFor(user, TEMPLATE)).deployment}`,
      );
      const seen = await execInContainer(pod, [
        "sh",
        "-c",
        "grep -rl 'test_hidden\\|HIDDEN-TEST' /home /srv /tmp 2>/dev/null; ls /home/jovyan/graders 2>&1; true",
      ]);
      assert.doesNotMatch(
        seen.stdout,
        /test_calculator|test_hidden|HIDDEN/,
        `${user}'s environment: ${seen.stdout}`,
      );
      assert.match(seen.stdout, /No such file or directory/, `${user} has no graders folder`);
    }
    for (const user of ["ann", "dan"] as const)
      assert.match(
        (await card(user)).text,
        /Score: 5 of/,
        `${user}'s score on the home page; their Submission: ${JSON.stringify((await submission(user)).status)}`,
      );
    assert.doesNotMatch((await card("cat")).text, /Score:/, "cat's timed-out run has no score");
    phase("students' views");
    const released = await rest.get<Assignment>(assignmentsPath(NAMESPACE, ASSIGNMENT));
    assert.equal(released.spec.gradesReleased, true);
  },
);
