/**
 * The home page's assignments, Hand in button and receipt (docs/decisions/0011-coursework.md): the
 * proxy in-process against the real control plane with the real user-manager in-process, the
 * proxy's ServiceAccount holding the chart's rights (submissions/handin through the user-manager).
 * No operator runs: where its controllers would create a Submission or write its status, the test
 * does, and says so.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { submissionNameFor } from "../../../api/naming.ts";
import { API_VERSION } from "../../../api/v1alpha1/index.ts";
import { serviceAccountToken } from "../../../test/support/cluster.ts";
import { adminRest, createTemplate, createUserland } from "../../../test/support/resources.ts";
import { assignmentsPath, submissionsPath, type Submission } from "../../../api/v1alpha1/index.ts";
import {
  courseworkTemplateSpec,
  createSubmission,
  reportSubmission,
} from "../../user-manager/test/courseworkSupport.ts";
import { startUserManager } from "../../user-manager/test/support.ts";
import type { HomeView } from "../pages/homeView.ts";
import { proxyKubeConfig, send, startProxy, testKeys } from "./support.ts";

const APEX = "apps.example.test";
const html = { accept: "text/html,application/xhtml+xml" };
const sameOrigin: Record<string, string> = { "sec-fetch-site": "same-origin", origin: "null" };
const HASH = "0123456789abcdef".repeat(4);

async function createAssignment(ns: string, name: string, title: string, deadline: Date, lateUntil?: Date) {
  await (
    await adminRest()
  ).create(assignmentsPath(ns), {
    apiVersion: API_VERSION,
    kind: "Assignment",
    metadata: { name },
    spec: {
      templateName: "lab",
      title,
      source: { folder: "course", path: name },
      deadline: deadline.toISOString(),
      ...(lateUntil ? { lateUntil: lateUntil.toISOString() } : {}),
    },
  });
}

const submission = async (ns: string, assignment: string, user: string) =>
  (await adminRest()).get<Submission>(submissionsPath(ns, submissionNameFor(assignment, user)));

test("the home page: assignments, Hand in with a confirm step, the receipt; refusals", async (t) => {
  const um = await startUserManager(t, { templates: [] });
  const ns = um.ns;
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createUserland(ns, "alice-lab", "alice", "lab");
  await createUserland(ns, "bob-lab", "bob", "lab");
  const hour = 3600_000;
  await createAssignment(
    ns,
    "week1",
    "Week 1: lists",
    new Date(Date.now() + hour),
    new Date(Date.now() + 2 * hour),
  );
  await createAssignment(ns, "week0", "Week 0: setup", new Date(Date.now() - 2 * hour));
  await createAssignment(ns, "bobs", "Bob's extra task", new Date(Date.now() + hour));
  // Stands in for the operator's Assignment controller (Submissions) and Submission controller (copies).
  for (const [assignment, user] of [
    ["week1", "alice"],
    ["week1", "bob"],
    ["week0", "alice"],
    ["bobs", "bob"],
  ] as const)
    await createSubmission(ns, assignment, user);
  await reportSubmission(ns, "week1", "alice", { distributedRelease: 1 });

  await proxyKubeConfig(ns);
  const keys = await testKeys(t);
  const tokenFile = join(keys.dir, "proxy-token");
  await writeFile(tokenFile, await serviceAccountToken(ns, "userland-proxy"));
  const proxy = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: um.base,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
  });
  const get = async (user: string, accept: Record<string, string>) =>
    send(proxy.port, {
      path: "/_userland/home",
      headers: { host: APEX, cookie: await keys.cookie(user), ...accept },
    });
  const view = async (user: string) => {
    const r = await get(user, { accept: "application/json" });
    assert.equal(r.status, 200, r.body);
    return r.json<HomeView>();
  };
  const handIn = async (user: string, form: Record<string, string>, headers = sameOrigin) =>
    send(proxy.port, {
      method: "POST",
      path: "/_userland/handin",
      headers: {
        host: APEX,
        cookie: await keys.cookie(user),
        "content-type": "application/x-www-form-urlencoded",
        ...html,
        ...headers,
      },
      body: new URLSearchParams({ rd: "/_userland/home", ...form }).toString(),
    });

  await t.test("a student sees their assignments, open ones with a Hand in button", async () => {
    const alice = await view("alice");
    assert.deepEqual(
      alice.assignments.map((a) => [a.name, a.open, a.state, a.distributed]),
      [
        ["week0", false, "missing", false],
        ["week1", true, "open", true],
      ],
      "closing order; bob's own assignment is not hers",
    );
    const page = await get("alice", html);
    assert.equal(page.status, 200);
    assert.match(page.body, /Your assignments/);
    assert.match(page.body, /aria-label="Hand in Week 1: lists"/);
    assert.doesNotMatch(page.body, /aria-label="Hand in Week 0/, "no button for a closed one");
    assert.match(page.body, /Closed: not handed in\./);
    assert.match(page.body, /assignments\/week1\//);
  });

  await t.test(
    "Hand in asks first, then hands in the student's own work only; handing in again keeps both",
    async () => {
      const confirm = await handIn("alice", { template: "lab", assignment: "week1" });
      assert.equal(confirm.status, 200, confirm.body);
      assert.match(confirm.body, /You can hand in again/);
      assert.match(confirm.body, /4\s+more\s+times/, "5 hand-ins allowed by default, this one the first");
      assert.match(confirm.body, /name="confirm" value="yes"/);
      assert.equal((await submission(ns, "week1", "alice")).spec.handInRequestedAt, undefined, "not yet");

      // A form naming another student changes nothing about whose work is handed in.
      const done = await handIn("alice", {
        template: "lab",
        assignment: "week1",
        confirm: "yes",
        user: "bob",
      });
      assert.equal(done.status, 303, done.body);
      assert.equal(done.headers.location, "/_userland/home");
      const alice = await submission(ns, "week1", "alice");
      assert.equal(alice.spec.handInRequestedBy, "student");
      assert.ok(alice.spec.handInRequestedAt);
      assert.equal(
        (await submission(ns, "week1", "bob")).spec.handInRequestedAt,
        undefined,
        "bob's untouched",
      );

      // Stands in for the operator's Submission controller: collected, the receipt written.
      const at = alice.spec.handInRequestedAt ?? "";
      const collected = {
        version: 1,
        requestedAt: at,
        time: at,
        files: 4,
        bytes: 1_572_864,
        sha256: HASH,
        late: true,
        by: "student" as const,
      };
      await reportSubmission(ns, "week1", "alice", {
        distributedRelease: 1,
        receipt: collected,
      });
      const after = await view("alice");
      const week1 = after.assignments.find((a) => a.name === "week1");
      assert.equal(week1?.state, "late");
      assert.deepEqual(week1?.receipt, {
        ...collected,
        copyStartedAt: null,
        skipped: 0,
        deadline: null,
        writtenAfter: [],
        writtenAfterCount: 0,
      });
      const page = await get("alice", html);
      assert.match(page.body, /aria-label="Receipt for Week 1: lists"/);
      assert.match(page.body, new RegExp(HASH));
      assert.match(page.body, /1\.5 MiB/);
      assert.match(page.body, /<dt>Files<\/dt>\s*<dd>\s*4\s*<\/dd>/);
      assert.match(page.body, />late</);
      assert.match(page.body, /aria-label="Hand in again Week 1: lists"/, "handed in, still open: again");
      assert.match(page.body, /4 more hand-ins allowed/);

      // Again: a second version is asked for (the moment moves forward); a second click while it is
      // collected changes nothing.
      await new Promise((r) => setTimeout(r, 1100));
      const again = await handIn("alice", { template: "lab", assignment: "week1", confirm: "yes" });
      assert.equal(again.status, 303, again.body);
      const second = (await submission(ns, "week1", "alice")).spec.handInRequestedAt ?? "";
      assert.ok(Date.parse(second) > Date.parse(alice.spec.handInRequestedAt ?? ""), "a new moment");
      assert.equal((await view("alice")).assignments.find((a) => a.name === "week1")?.state, "handing-in");
      const click = await handIn("alice", { template: "lab", assignment: "week1", confirm: "yes" });
      assert.equal(click.status, 303, "the same answer while it is collected");
      assert.equal((await submission(ns, "week1", "alice")).spec.handInRequestedAt, second);
    },
  );

  await t.test("refused: another student's assignment, a closed one, a form from another site", async () => {
    const bobs = await handIn("alice", { template: "lab", assignment: "bobs", confirm: "yes" });
    assert.equal(bobs.status, 404, bobs.body);
    assert.equal((await submission(ns, "bobs", "bob")).spec.handInRequestedAt, undefined, "bob's untouched");

    const closed = await handIn("alice", { template: "lab", assignment: "week0", confirm: "yes" });
    assert.equal(closed.status, 409, closed.body);
    assert.match(closed.body, /closed at/);
    assert.equal((await submission(ns, "week0", "alice")).spec.handInRequestedAt, undefined);

    const crossSite = await handIn(
      "bob",
      { template: "lab", assignment: "week1", confirm: "yes" },
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
    );
    assert.equal(crossSite.status, 403);
    assert.equal((await submission(ns, "week1", "bob")).spec.handInRequestedAt, undefined);
  });
});
