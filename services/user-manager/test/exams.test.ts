/**
 * The exam routes and console pages (docs/decisions/0013-exams.md) against the real control plane
 * with real RBAC: teachers by access reviews on their own identity (exams verbs and
 * templates/coursework on the Template); the service writes with its own ServiceAccount. No
 * operator runs: where it would write an Exam's status, the test does, and says so.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  examHoldValue,
  ExamMarks,
  examsPath,
  type Exam,
  type ExamNotice,
} from "../../../api/v1alpha1/index.ts";
import { adminRest, createTemplate, userlandsPath } from "../../../test/support/resources.ts";
import { CONSOLE_ORIGIN, startConsole, type ConsoleHarness } from "./consoleSupport.ts";
import { courseTeacherRules, courseworkTemplateSpec } from "./courseworkSupport.ts";

const EXAM_RULE = {
  apiGroups: ["userland.dev"],
  resources: ["exams"],
  verbs: ["get", "list", "create", "patch"],
};

test("exams: a teacher of the Template schedules one (API and console) and sees each student's state; others get 403", async (t) => {
  const h: ConsoleHarness = await startConsole(t, { templates: [] });
  const ns = h.ns;
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await h.appoint({ user: "tina@uni.example" }, [...courseTeacherRules(["lab"]), EXAM_RULE]);
  // nora may write Exams in the namespace but teaches only "other"; sam has no role at all.
  await h.appoint({ user: "nora@uni.example" }, [...courseTeacherRules(["other"]), EXAM_RULE]);
  const as = async (user: string) => ({ headers: { cookie: await h.cookie(user), origin: CONSOLE_ORIGIN } });
  const tina = await as("tina@uni.example");
  const hour = 3600_000;
  const start = new Date(Date.now() + hour).toISOString();
  const end = new Date(Date.now() + 3 * hour).toISOString();

  await t.test(
    "the API: created with its proctors; bad times, a window over 24 hours and no class 400; a taken name 409; no teacher 403",
    async () => {
      const body = {
        name: "midterm",
        title: "Midterm",
        start,
        end,
        class: "*",
        proctors: { users: ["prof"] },
        assignment: "week1",
      };
      const created = await h.call("POST", "/api/v1/templates/lab/exams", { ...tina, body });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.json.phase, "Pending");
      const stored = await (await adminRest()).get<Exam>(examsPath(ns, "midterm"));
      assert.equal(stored.spec.templateName, "lab");
      assert.deepEqual(stored.spec.proctors, { users: ["prof"], groups: [] });
      assert.equal(stored.metadata.annotations?.["userland.dev/created-by"], "userland:tina@uni.example");
      const backwards = await h.call("POST", "/api/v1/templates/lab/exams", {
        ...tina,
        body: { ...body, name: "b", end: start, start: end },
      });
      assert.equal(backwards.status, 400);
      assert.match(backwards.text, /end must be after start/);
      const long = await h.call("POST", "/api/v1/templates/lab/exams", {
        ...tina,
        body: { ...body, name: "l", end: new Date(Date.parse(start) + 24 * hour + 1000).toISOString() },
      });
      assert.equal(long.status, 400, long.text);
      assert.match(long.text, /an exam lasts at most 24 hours/);
      const { class: _class, ...classless } = body;
      const unnamed = await h.call("POST", "/api/v1/templates/lab/exams", {
        ...tina,
        body: { ...classless, name: "u" },
      });
      assert.equal(unnamed.status, 400, unnamed.text);
      assert.match(unnamed.text, /class/);
      const again = await h.call("POST", "/api/v1/templates/lab/exams", { ...tina, body });
      assert.equal(again.status, 409);
      const nora = await h.call("POST", "/api/v1/templates/lab/exams", {
        ...(await as("nora@uni.example")),
        body: { ...body, name: "n" },
      });
      assert.equal(nora.status, 403, "nora does not teach lab");
      const sam = await h.call("GET", "/api/v1/templates/lab/exams", await as("sam@uni.example"));
      assert.equal(sam.status, 403);
      const listed = await h.call("GET", "/api/v1/templates/lab/exams", tina);
      assert.deepEqual(
        (listed.json.items as { name: string }[]).map((e) => e.name),
        ["midterm"],
      );
    },
  );

  await t.test("a Userland an exam holds is not started by the API: 409, still stopped", async () => {
    await (
      await adminRest()
    ).create(userlandsPath(ns, undefined), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      // Held by the exam of another namespace: the answer names it in full.
      metadata: {
        name: "ada-other",
        labels: { [ExamMarks.holdLabel]: examHoldValue("course-b", "midterm") },
        annotations: {
          [ExamMarks.holdAnnotation]: JSON.stringify({
            exam: "midterm",
            namespace: "course-b",
            start: "2030-01-01T09:00:00Z",
            end: "2030-01-01T11:00:00Z",
            proctors: { users: [], groups: [] },
          } satisfies ExamNotice),
        },
      },
      spec: { user: "ada", templateName: "other", enabled: false },
    });
    const r = await h.call("POST", "/api/v1/userlands/ada-other/start", tina);
    assert.equal(r.status, 409, r.text);
    assert.match(r.text, /stopped for the exam course-b\/midterm; it starts again after the exam/);
    assert.equal(r.json.namespace, "course-b");
    const u = await (await adminRest()).get<{ spec: { enabled?: boolean } }>(userlandsPath(ns, "ada-other"));
    assert.equal(u.spec.enabled, false);
  });

  await t.test("the console: the class's exams, the form, one exam with each student's state", async () => {
    const cookie = await h.cookie("tina@uni.example");
    const list = await h.page("/console/exams?template=lab", cookie);
    assert.equal(list.status, 200, list.text);
    assert.match(list.text, /Midterm/);
    const form = {
      template: "lab",
      name: "final",
      title: "Final",
      start: new Date(Date.now() + 24 * hour).toISOString().slice(0, 16),
      end: new Date(Date.now() + 26 * hour).toISOString().slice(0, 16),
      zone: "Asia/Tokyo",
      proctors: "prof, ta",
      proctorGroups: "",
      assignment: "",
      class: "c1",
    };
    const refused = await h.post("/console/exams/create", cookie, { ...form, end: form.start });
    assert.equal(refused.status, 400);
    const refusedPage = await refused.text();
    assert.match(refusedPage, /end must be after start/);
    assert.match(refusedPage, /value="Final"/, "what was typed is kept");
    const created = await h.post("/console/exams/create", cookie, form);
    assert.equal(created.status, 303, await created.text());
    assert.match(
      created.headers.get("location") ?? "",
      /\/console\/exam\?template=lab&name=final&done=created/,
    );
    const final = await (await adminRest()).get<Exam>(examsPath(ns, "final"));
    // The form's local time is read in the zone it names.
    assert.equal(Date.parse(final.spec.start), Date.parse(`${form.start}:00+09:00`));
    assert.deepEqual(final.spec.proctors?.users, ["prof", "ta"]);
    assert.equal(final.spec.class, "c1");

    // Standing in for the operator: the exam runs, one student ready, one starting.
    await (
      await adminRest()
    ).patch(examsPath(ns, "final", "status"), {
      status: {
        phase: "Running",
        students: [
          { user: "alice", userland: "alice-lab", state: "Ready" },
          { user: "bob", userland: "bob-lab", state: "Starting" },
        ],
        ready: 1,
      },
    });
    const page = await h.page("/console/exam?template=lab&name=final", cookie);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /id="exam-phase">Running</);
    assert.match(page.text, /<th scope="row">alice<\/th>[\s\S]*?Ready/);
    assert.match(page.text, /<th scope="row">bob<\/th>[\s\S]*?Starting/);
    assert.match(page.text, /prof, ta/);

    const samCookie = await h.cookie("sam@uni.example");
    assert.equal((await h.page("/console/exams?template=lab", samCookie)).status, 403);
    assert.equal((await h.page("/console/exam?template=lab&name=final", samCookie)).status, 403);
    const noraCookie = await h.cookie("nora@uni.example");
    assert.equal((await h.post("/console/exams/create", noraCookie, { ...form, name: "x" })).status, 403);
  });

  await t.test(
    "steering (issue 44 item 4): extend for everyone and end now, from the API and the console; not once it is over, not from a stale page, not by another class's teacher",
    async () => {
      const cookie = await h.cookie("tina@uni.example");
      const rest = await adminRest();
      const stored = async () => (await rest.get<Exam>(examsPath(ns, "final"))).spec;
      const move = (body: unknown, who = tina) =>
        h.call("POST", "/api/v1/templates/lab/exams/final/end", { ...who, body });
      const { start: finalStart, end: finalEnd } = await stored();
      // Extend for everyone, as the console's form sends it (its zone's local time).
      const later = new Date(Date.parse(finalEnd) + hour);
      const page = await h.page("/console/exam?template=lab&name=final", cookie);
      assert.match(page.text, /<button type="submit">End now<\/button>/);
      assert.match(page.text, new RegExp(`name="from" value="${finalEnd}"`));
      const extended = await h.post("/console/exams/end", cookie, {
        template: "lab",
        name: "final",
        from: finalEnd,
        endAt: later.toISOString().slice(0, 16),
        zone: "UTC",
      });
      assert.equal(extended.status, 303, await extended.text());
      assert.match(extended.headers.get("location") ?? "", /done=extended/);
      assert.equal(Date.parse((await stored()).end), later.getTime());
      // A page from before the extension is stale: its End now is refused, saying why.
      const stale = await h.post("/console/exams/end", cookie, {
        template: "lab",
        name: "final",
        from: finalEnd,
        end: "now",
      });
      assert.equal(stale.status, 409);
      assert.match(await stale.text(), /end changed since/);
      // Too long, in the past, before the start: 400, nothing changed.
      const tooLong = new Date(Date.parse(finalStart) + 25 * hour).toISOString();
      for (const end of [tooLong, new Date(Date.now() - hour).toISOString(), finalStart]) {
        const r = await move({ end });
        assert.equal(r.status, 400, `${end}: ${r.text}`);
      }
      assert.equal(Date.parse((await stored()).end), later.getTime());
      // nora teaches another Template: 403.
      assert.equal((await move({ end: "now" }, await as("nora@uni.example"))).status, 403);
      // End now (here before its start: a scheduled exam's end must stay after its start).
      const early = await move({ end: "now" });
      assert.equal(early.status, 400, early.text);
      assert.match(early.text, /end must be after the start/);
      // midterm started an hour ago in this story (the test stands in for the clock): end it now.
      await rest.patch(examsPath(ns, "midterm"), {
        spec: { start: new Date(Date.now() - hour).toISOString() },
      });
      const before = Date.now();
      const ended = await h.post("/console/exams/end", cookie, {
        template: "lab",
        name: "midterm",
        end: "now",
      });
      assert.equal(ended.status, 303, await ended.text());
      assert.match(ended.headers.get("location") ?? "", /done=ended/);
      const midterm = (await rest.get<Exam>(examsPath(ns, "midterm"))).spec;
      assert.ok(
        Date.parse(midterm.end) >= before - 1000 && Date.parse(midterm.end) <= Date.now(),
        midterm.end,
      );
      // Over (the operator's status, stood in for): no steering any more.
      await rest.patch(examsPath(ns, "midterm", "status"), { status: { phase: "Over" } });
      const over = await h.call("POST", "/api/v1/templates/lab/exams/midterm/end", {
        ...tina,
        body: { end: "now" },
      });
      assert.equal(over.status, 409, over.text);
      const overPage = await h.page("/console/exam?template=lab&name=midterm", cookie);
      assert.doesNotMatch(overPage.text, /End now/);
    },
  );
});
