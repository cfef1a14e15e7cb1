/**
 * The coursework routes against the real control plane with real RBAC (docs/decisions/0011-
 * coursework.md): teachers are decided by access reviews on their own identity (assignments verbs
 * and templates/coursework on the Template), students' hand-ins come through a caller holding
 * submissions/handin (the proxy in production), and the service writes with its own
 * ServiceAccount. No operator runs: where its controllers would create a Submission or write its
 * status, the test does, and says so.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { submissionNameFor } from "../../../api/naming.ts";
import { API_VERSION } from "../../../api/v1alpha1/index.ts";
import { adminRest, createTemplate } from "../../../test/support/resources.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
} from "../../../api/v1alpha1/index.ts";
import { CONSOLE_ORIGIN, startConsole, type ConsoleHarness } from "./consoleSupport.ts";
import {
  courseTeacherRules,
  courseworkTemplateSpec,
  createSubmission,
  reportSubmission,
} from "./courseworkSupport.ts";
import { admin } from "./support.ts";

const HASH = "a".repeat(64);

interface Caller {
  headers: Record<string, string>;
}

test("coursework routes: teachers by RBAC, the hand-in table, students' hand-in and receipt", async (t) => {
  const h: ConsoleHarness = await startConsole(t, { templates: [] });
  const ns = h.ns;
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await createTemplate(ns, "plain", courseworkTemplateSpec(false));
  await h.appoint({ user: "tina@uni.example" }, courseTeacherRules(["lab", "plain"]));
  // nora may write Assignments in the namespace but teaches only "other".
  await h.appoint({ user: "nora@uni.example" }, courseTeacherRules(["other"]));
  const session = async (user: string): Promise<Caller> => ({
    headers: { cookie: await h.cookie(user), origin: CONSOLE_ORIGIN },
  });
  const tina = await session("tina@uni.example");
  const nora = await session("nora@uni.example");
  const sam = await session("sam@uni.example"); // no RoleBinding at all
  // The proxy's right (the chart's proxy Role): acts for students at hand-in, nothing else.
  const proxy = await h.callerWith("proxy", [
    { apiGroups: ["userland.dev"], resources: ["submissions/handin"], verbs: ["get", "update"] },
  ]);
  const as = (c: Caller) => ({ headers: c.headers });

  for (const user of ["alice", "bob", "carol", "dave"])
    await admin.createUserland(ns, `${user}-lab`, user, "lab");
  await admin.createUserland(ns, "zoe-other", "zoe", "other");
  const deadline = new Date(Date.now() + 3600_000).toISOString();
  const lateUntil = new Date(Date.now() + 7200_000).toISOString();
  const week1 = {
    name: "week1",
    title: "Week 1: lists",
    source: { folder: "course", path: "week1/lab" },
    deadline,
    lateUntil,
    limits: { maxFiles: 200 },
  };

  await t.test("a teacher creates an assignment; bad input is a 400 naming the field", async () => {
    const created = await h.call("POST", "/api/v1/templates/lab/assignments", { ...as(tina), body: week1 });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.name, "week1");
    assert.equal(created.json.release, 1);
    assert.equal(created.json.closesAt, lateUntil);
    const stored = await (await adminRest()).get<Assignment>(assignmentsPath(ns, "week1"));
    assert.deepEqual(stored.spec.source, { folder: "course", path: "week1/lab" });
    assert.equal(stored.spec.templateName, "lab");
    assert.equal(stored.metadata.annotations?.["userland.dev/created-by"], "userland:tina@uni.example");

    const bad = async (path: string, body: unknown, field: string, message: RegExp) => {
      const r = await h.call("POST", path, { ...as(tina), body });
      assert.equal(r.status, 400, `${field}: ${r.text}`);
      assert.equal(r.json.field, field);
      assert.match(String(r.json.message), message);
    };
    await bad(
      "/api/v1/templates/lab/assignments",
      { ...week1, name: "w2", source: { folder: "home", path: "x" } },
      "source.folder",
      /"home" is not a course folder of Template "lab": choose one of "course", "shared"/,
    );
    await bad(
      "/api/v1/templates/lab/assignments",
      { ...week1, name: "w2", source: { folder: "course", path: "week1/../../etc" } },
      "source.path",
      /must not contain '\.\.'/,
    );
    await bad(
      "/api/v1/templates/lab/assignments",
      { ...week1, name: "w2", lateUntil: deadline },
      "lateUntil",
      /after the deadline/,
    );
    await bad(
      "/api/v1/templates/lab/assignments",
      { ...week1, name: "w2", deadline: "2020-01-01T00:00:00Z", lateUntil: undefined },
      "deadline",
      /in the past/,
    );
    await bad(
      "/api/v1/templates/lab/assignments",
      { ...week1, name: "w2", deadline: "tomorrow" },
      "deadline",
      /RFC 3339/,
    );
    await bad("/api/v1/templates/lab/assignments", { ...week1, name: "Week 2" }, "name", /pattern/);
    await bad(
      "/api/v1/templates/plain/assignments",
      { ...week1, name: "w2" },
      "template",
      /spec\.coursework\.collection/,
    );
    const taken = await h.call("POST", "/api/v1/templates/lab/assignments", { ...as(tina), body: week1 });
    assert.equal(taken.status, 409);
    assert.equal(
      (await h.call("POST", "/api/v1/templates/nope/assignments", { ...as(tina), body: week1 })).status,
      404,
    );
  });

  await t.test("who is not the Template's teacher gets 403 and changes nothing", async () => {
    const body = { ...week1, name: "sneaky" };
    const noRights = await h.call("POST", "/api/v1/templates/lab/assignments", { ...as(sam), body });
    assert.equal(noRights.status, 403);
    assert.match(
      String(noRights.json.message),
      /userland:sam@uni\.example may not create assignments\.userland\.dev/,
    );
    // nora may create Assignments in the namespace, but teaches "other", not "lab".
    const otherTeacher = await h.call("POST", "/api/v1/templates/lab/assignments", { ...as(nora), body });
    assert.equal(otherTeacher.status, 403, otherTeacher.text);
    assert.match(
      String(otherTeacher.json.message),
      /may not update templates\/coursework\.userland\.dev "lab"/,
    );
    assert.equal((await h.call("GET", "/api/v1/templates/lab/assignments", as(nora))).status, 403);
    assert.equal((await h.call("GET", "/api/v1/templates/lab/assignments/week1", as(sam))).status, 403);
    assert.equal(
      (await h.call("POST", "/api/v1/templates/lab/assignments/week1/publish", as(nora))).status,
      403,
    );
    // A student's own session is not a teacher either.
    assert.equal(
      (await h.call("GET", "/api/v1/templates/lab/assignments", as(await session("alice")))).status,
      403,
    );
    const all = await (await adminRest()).list<Assignment>(assignmentsPath(ns));
    assert.deepEqual(
      all.items.map((a) => a.metadata.name),
      ["week1"],
    );
    // The teacher of "other" lists its assignments (none) but not lab's.
    const others = await h.call("GET", "/api/v1/templates/other/assignments", as(nora));
    assert.equal(others.status, 200);
    assert.deepEqual(others.json.items, []);
  });

  await t.test("Publish again and Return feedback raise the counter once per click", async () => {
    const publish = await h.call("POST", "/api/v1/templates/lab/assignments/week1/publish", {
      ...as(tina),
      body: { from: 1 },
    });
    assert.equal(publish.status, 200, publish.text);
    assert.equal(publish.json.release, 2);
    // The same click again (a second tab, a double submit) saw release 1: refused, not counted twice.
    const stale = await h.call("POST", "/api/v1/templates/lab/assignments/week1/publish", {
      ...as(tina),
      body: { from: 1 },
    });
    assert.equal(stale.status, 409);
    assert.match(String(stale.json.message), /release is 2 now, not 1/);
    const feedback = await h.call("POST", "/api/v1/templates/lab/assignments/week1/feedback", as(tina));
    assert.equal(feedback.status, 200, feedback.text);
    assert.equal(feedback.json.feedbackRelease, 1);
    const stored = await (await adminRest()).get<Assignment>(assignmentsPath(ns, "week1"));
    assert.equal(stored.spec.release, 2);
    assert.equal(stored.spec.feedbackRelease, 1);
    assert.equal(stored.spec.title, week1.title, "nothing else changed");
    const missing = await h.call("POST", "/api/v1/templates/lab/assignments/nope/publish", as(tina));
    assert.equal(missing.status, 404);
  });

  // Stands in for the operator's controllers: Submissions for lab's students, copies and receipts.
  for (const user of ["alice", "bob", "carol"]) await createSubmission(ns, "week1", user);
  const receipt = { files: 3, bytes: 2048, sha256: HASH, skipped: 0 };
  const handedIn = (late: boolean) => {
    const at = new Date().toISOString();
    return { ...receipt, version: 1, requestedAt: at, time: at, late, by: "student" as const };
  };
  await reportSubmission(ns, "week1", "alice", { distributedRelease: 2, receipt: handedIn(false) });
  await reportSubmission(ns, "week1", "bob", {
    distributedRelease: 2,
    keptOwnVersion: ["lab.ipynb"],
    receipt: handedIn(true),
  });
  await reportSubmission(ns, "week1", "carol", { distributedRelease: 2, keptOwnVersion: ["notes.md"] });
  // The teacher's own environment of lab: the operator gives teachers no Submission.
  await admin.createUserland(ns, "tina-lab", "tina@uni.example", "lab");

  await t.test(
    "the hand-in table: every student of the class with state, receipt and kept files",
    async () => {
      const r = await h.call("GET", "/api/v1/templates/lab/assignments/week1", as(tina));
      assert.equal(r.status, 200, r.text);
      const rows = r.json.students as {
        user: string;
        state: string;
        receipt: unknown;
        versions: unknown[];
        keptOwnVersion: string[];
      }[];
      assert.deepEqual(
        rows.map((row) => [row.user, row.state]),
        [
          ["alice", "on-time"],
          ["bob", "late"],
          ["carol", "open"],
          ["dave", "not-distributed"],
        ],
        "zoe, of another Template, and tina, who teaches lab, are not in it",
      );
      assert.deepEqual(rows[1]?.keptOwnVersion, ["lab.ipynb"]);
      const time = (rows[0]?.receipt as { time: string }).time;
      const aliceReceipt = {
        ...receipt,
        version: 1,
        requestedAt: time,
        copyStartedAt: null,
        time,
        late: false,
        by: "student",
        deadline: null,
        writtenAfter: [],
        writtenAfterCount: 0,
      };
      assert.deepEqual(rows[0]?.receipt, aliceReceipt);
      assert.deepEqual(rows[0]?.versions, [aliceReceipt], "her only version");
      assert.deepEqual(r.json.counts, { "on-time": 1, late: 1, open: 1, "not-distributed": 1 });
    },
  );

  await t.test("a student's assignments and hand-in, through a caller with submissions/handin", async () => {
    const list = await h.call("GET", "/api/v1/users/carol/assignments", { token: proxy });
    assert.equal(list.status, 200, list.text);
    const [item] = list.json.items as Record<string, unknown>[];
    assert.equal(item?.name, "week1");
    assert.equal(item?.title, week1.title);
    assert.equal(item?.open, true);
    assert.equal(item?.distributed, true);
    assert.equal(item?.receipt, null);

    const path = "/api/v1/templates/lab/assignments/week1/submissions/carol/handin";
    const handIn = await h.call("POST", path, { token: proxy });
    assert.equal(handIn.status, 200, handIn.text);
    assert.equal(handIn.json.state, "handing-in");
    assert.equal(handIn.json.open, false);
    const name = submissionNameFor("week1", "carol");
    const stored = await (await adminRest()).get<Submission>(submissionsPath(ns, name));
    assert.equal(stored.spec.handInRequestedBy, "student");
    const at = stored.spec.handInRequestedAt;
    assert.ok(at && Math.abs(Date.parse(at) - Date.now()) < 60_000, `requested now: ${at}`);
    // While it is collected, a second press answers the same state and writes nothing.
    const again = await h.call("POST", path, { token: proxy });
    assert.equal(again.status, 200);
    assert.equal(again.json.handInRequestedAt, at);
    const after = await (await adminRest()).get<Submission>(submissionsPath(ns, name));
    assert.equal(after.metadata.resourceVersion, stored.metadata.resourceVersion, "nothing written");

    // Stands in for the operator: the copy is done, the receipt written.
    await reportSubmission(ns, "week1", "carol", {
      distributedRelease: 2,
      receipt: { ...receipt, version: 1, requestedAt: at, time: at, late: false, by: "student" },
    });
    const got = await h.call("GET", "/api/v1/templates/lab/assignments/week1/submissions/carol", {
      token: proxy,
    });
    assert.equal(got.status, 200);
    assert.deepEqual(got.json.receipt, {
      ...receipt,
      version: 1,
      requestedAt: at,
      copyStartedAt: null,
      time: at,
      late: false,
      by: "student",
      deadline: null,
      writtenAfter: [],
      writtenAfterCount: 0,
    });
    assert.equal(got.json.open, true, "collected, before the closing time: she may hand in again");
    assert.equal(got.json.maxVersions, 5);

    // Again: a new moment; once the assignment's versions are used, refused with the reason.
    await (await adminRest()).patch(assignmentsPath(ns, "week1"), { spec: { maxVersions: 2 } });
    const second = await h.call("POST", path, { token: proxy });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.state, "handing-in");
    const at2 = second.json.handInRequestedAt as string;
    assert.ok(Date.parse(at2) > Date.parse(at), `${at2} after ${at}`);
    const first = { ...receipt, version: 1, requestedAt: at, time: at, late: false, by: "student" as const };
    const latest = { ...first, version: 2, requestedAt: at2, time: at2 };
    await reportSubmission(ns, "week1", "carol", {
      distributedRelease: 2,
      receipt: latest,
      versions: [first, latest],
    });
    const third = await h.call("POST", path, { token: proxy });
    assert.equal(third.status, 409, third.text);
    assert.match(String(third.json.message), /all 2 hand-ins are used/);
    const seen = await h.call("GET", "/api/v1/templates/lab/assignments/week1/submissions/carol", {
      token: proxy,
    });
    assert.deepEqual(
      (seen.json.versions as { version: number }[]).map((v) => v.version),
      [1, 2],
    );
    assert.equal(seen.json.open, false);
    assert.match(String(seen.json.notOpenBecause), /all 2 hand-ins are used/);
  });

  await t.test("refused: not in the assignment, after the closing time, without the right", async () => {
    // dave has a Userland of lab but no Submission yet (the operator has not reached him).
    const notIn = await h.call("POST", "/api/v1/templates/lab/assignments/week1/submissions/dave/handin", {
      token: proxy,
    });
    assert.equal(notIn.status, 404, notIn.text);
    assert.match(String(notIn.json.message), /user "dave" has no assignment "week1"/);
    const unknown = await h.call("POST", "/api/v1/templates/lab/assignments/nope/submissions/carol/handin", {
      token: proxy,
    });
    assert.equal(unknown.status, 404);

    // An assignment whose lateUntil has passed (made by an admin: the API refuses past deadlines).
    await (
      await adminRest()
    ).create(assignmentsPath(ns), {
      apiVersion: API_VERSION,
      kind: "Assignment",
      metadata: { name: "week0" },
      spec: {
        templateName: "lab",
        title: "Week 0",
        source: { folder: "course", path: "week0" },
        deadline: new Date(Date.now() - 7200_000).toISOString(),
        lateUntil: new Date(Date.now() - 3600_000).toISOString(),
      },
    });
    await createSubmission(ns, "week0", "dave");
    const closed = await h.call("POST", "/api/v1/templates/lab/assignments/week0/submissions/dave/handin", {
      token: proxy,
    });
    assert.equal(closed.status, 409, closed.text);
    assert.match(String(closed.json.message), /closed at .*: hand-ins are no longer accepted/);
    const dave = await (
      await adminRest()
    ).get<Submission>(submissionsPath(ns, submissionNameFor("week0", "dave")));
    assert.equal(dave.spec.handInRequestedAt, undefined, "nothing written");

    // Without submissions/handin: a student's own token, a teacher's session.
    const path = "/api/v1/templates/lab/assignments/week0/submissions/dave/handin";
    assert.equal((await h.call("POST", path, { token: h.student })).status, 403);
    assert.equal((await h.call("GET", "/api/v1/users/dave/assignments", { token: h.student })).status, 403);
    const teacher = await h.call(
      "POST",
      "/api/v1/templates/lab/assignments/week1/submissions/bob/handin",
      as(tina),
    );
    assert.equal(teacher.status, 403);
    assert.match(String(teacher.json.message), /may not update submissions\/handin/);

    // The closed one: dave's row is missing; the student view says so and offers no hand-in.
    const table = await h.call("GET", "/api/v1/templates/lab/assignments/week0", as(tina));
    const rows = table.json.students as { user: string; state: string }[];
    assert.deepEqual(
      rows.map((r) => [r.user, r.state]),
      [
        ["alice", "missing"],
        ["bob", "missing"],
        ["carol", "missing"],
        ["dave", "missing"],
      ],
    );
    const mine = await h.call("GET", "/api/v1/users/dave/assignments", { token: proxy });
    assert.deepEqual(
      (mine.json.items as { name: string; open: boolean; state: string }[]).map((i) => [
        i.name,
        i.open,
        i.state,
      ]),
      [["week0", false, "missing"]],
    );
  });

  await t.test(
    "the console's pages: only a teacher of the Template sees and acts; a refusal keeps the form",
    async () => {
      const tinaCookie = await h.cookie("tina@uni.example");
      const list = await h.page("/console/assignments?template=lab", tinaCookie);
      assert.equal(list.status, 200);
      assert.match(list.text, /Week 1: lists/);
      assert.match(list.text, /<option value="course"/);
      const table = await h.page("/console/assignment?template=lab&name=week1", tinaCookie);
      assert.equal(table.status, 200);
      assert.match(table.text, /id="student-alice"[\s\S]*?on time/);

      const form = {
        template: "lab",
        name: "week2",
        title: "Week 2",
        folder: "course",
        path: "week2",
        deadline: new Date(Date.now() + 24 * 3600_000).toISOString().slice(0, 16),
        lateUntil: "",
        zone: "Asia/Tokyo",
        maxFiles: "",
        maxMiB: "5",
        class: "",
      };
      const refused = await h.post("/console/assignments/create", tinaCookie, { ...form, folder: "nope" });
      assert.equal(refused.status, 400);
      const refusedPage = await refused.text();
      assert.match(refusedPage, /not a course folder of Template &#34;lab&#34;/);
      assert.match(refusedPage, /value="Week 2"/, "what was typed is kept");
      const created = await h.post("/console/assignments/create", tinaCookie, form);
      assert.equal(created.status, 303, await created.text());
      assert.match(
        created.headers.get("location") ?? "",
        /\/console\/assignment\?template=lab&name=week2&done=created/,
      );
      const week2 = await (await adminRest()).get<Assignment>(assignmentsPath(ns, "week2"));
      // 09:00 in Tokyo is 00:00 UTC: the form's local time is read in the zone it names.
      assert.equal(Date.parse(week2.spec.deadline ?? ""), Date.parse(`${form.deadline}:00+09:00`));
      assert.equal(week2.spec.limits?.maxBytes, 5 * 1024 * 1024);

      const publish = await h.post("/console/assignment/actions", tinaCookie, {
        template: "lab",
        name: "week2",
        action: "publish",
        release: "1",
      });
      assert.equal(publish.status, 303);
      const twice = await h.post("/console/assignment/actions", tinaCookie, {
        template: "lab",
        name: "week2",
        action: "publish",
        release: "1",
      });
      assert.equal(twice.status, 409, "the same click again is not counted");
      assert.match(await twice.text(), /release is 2 now, not 1/);

      const samCookie = await h.cookie("sam@uni.example");
      const noRights = await h.page("/console/assignments?template=lab", samCookie);
      assert.equal(noRights.status, 403);
      // Refused at the console's door, before the page asks about assignments (issue 29).
      assert.match(noRights.text, /may not list userlands\.userland\.dev/);
      const noraCookie = await h.cookie("nora@uni.example");
      const otherTeacher = await h.post("/console/assignments/create", noraCookie, {
        ...form,
        name: "week3",
      });
      assert.equal(otherTeacher.status, 403);
      assert.equal((await h.page("/console/assignment?template=lab&name=week1", noraCookie)).status, 403);
      assert.equal(
        (
          await h.post("/console/assignment/actions", noraCookie, {
            template: "lab",
            name: "week1",
            action: "feedback",
            feedbackRelease: "1",
          })
        ).status,
        403,
      );
    },
  );
});
