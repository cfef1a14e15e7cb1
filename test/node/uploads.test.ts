/**
 * Uploads on the real node (docs/decisions/0011-coursework.md, "Uploads"): a teacher's files go
 * through the user-manager (in this process, signed in with a console session) into real upload
 * pods of the platform's image, which the operator (a process of the test) makes from Archives with
 * a target: materials into the course folder's local-path claim, then published to the students
 * by the operator's real copy pods; a feedback zip laid out by student into the collection, then
 * returned into each student's assignments/<name>/feedback/. The test process dials no pod: the
 * user-manager reaches each upload pod through a relay into the node (exposeFromNode), from the
 * node's own network namespace, as the pod's readiness check does.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, LABELS, submissionNameFor } from "../../api/naming.ts";
import { submissionsPath, type Submission } from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { scratch } from "../../coursework/files/test/scratch.ts";
import { paths } from "../../api/kubePaths.ts";
import { CONSOLE_ORIGIN, startConsole } from "../../services/user-manager/test/consoleSupport.ts";
import { courseTeacherRules } from "../../services/user-manager/test/courseworkSupport.ts";
import { eventually } from "../support/cluster.ts";
import {
  appointTeacher,
  chartCourseTeacherRole,
  LAB_HOME,
  realNodeLabTemplate,
} from "../support/coursework.ts";
import { startOperator } from "../support/operator.ts";
import { adminRest, createTemplate, createUserland, waitForPhase } from "../support/resources.ts";
import { exposeFromNode, realNode, waitForOnePodReady, shIn as sh } from "../support/realNode.ts";

test("uploads on the real node: materials into the course folder, published to the students; a feedback zip by student, returned into each one's feedback folder", async (t) => {
  const node = await realNode();
  const image = await buildPlatformImage();
  await importImage(join(node.binDir, "ctr"), node.containerdSocket, image);
  const tools = node.images.tools ?? "";
  const dir = await scratch(t);

  const h = await startConsole(t, {
    templates: [],
    reachTransferPod: async (podIP, port) => ({
      host: "127.0.0.1",
      port: await exposeFromNode(t, `${podIP}:${port}`),
    }),
  });
  const ns = h.ns;
  const rest = await adminRest();
  await startOperator(t, ns, {
    env: {
      OPERATOR_COPY_IMAGE: image.ref,
      // The policy must name some clients; the user-manager here dials from the node through a relay.
      OPERATOR_ARCHIVE_CLIENTS: `${ns}:userland.dev/test-upload-client=yes`,
    },
  });
  // The teacher: the operator's rule (the chart's role) gives her environment the course folder
  // read-write and binds the claims on the node; the console's rules let her upload.
  await appointTeacher(ns, await chartCourseTeacherRole(t, ns), "tess", "teach-tess");
  await h.appoint({ user: "tess" }, courseTeacherRules(["lab"]));
  await createTemplate(ns, "lab", realNodeLabTemplate(tools, "Uploads on the real node", "/srv/course"));
  for (const user of ["tess", "ann", "bob"]) await createUserland(ns, user, user, "lab");
  for (const user of ["tess", "ann", "bob"]) await waitForPhase(ns, user, "Ready", 120_000);
  const podOf = (user: string) =>
    waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", user).deployment}`);
  const cookie = await h.cookie("tess");

  const post = async (url: string, files: { name: string; data: Buffer | string }[]) => {
    const form = new FormData();
    for (const f of files) form.append("files", new Blob([f.data]), f.name);
    const r = await fetch(h.base + url, {
      method: "POST",
      headers: { cookie, origin: CONSOLE_ORIGIN },
      body: form,
    });
    const text = await r.text();
    assert.equal(r.status, 200, `${url}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const json = async (method: string, url: string, body?: unknown) => {
    const r = await fetch(h.base + url, {
      method,
      headers: { cookie, origin: CONSOLE_ORIGIN, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

  // Materials: a file and a zip with a folder, through the user-manager into a real upload pod.
  execFileSync(
    "bash",
    ["-c", "mkdir -p m/data && printf 'a,b\\n1,2\\n' > m/data/t.csv && cd m && zip -qr ../m.zip ."],
    {
      cwd: dir,
    },
  );
  const materials = await post("/api/v1/templates/lab/folders/course/files?path=week1", [
    { name: "README.md", data: "# Week 1\n" },
    { name: "m.zip", data: await readFile(join(dir, "m.zip")) },
  ]);
  assert.equal(materials.files, 2);
  // The teacher's environment sees them in the course folder, as the pod wrote them (her user).
  const tess = await podOf("tess");
  assert.equal(
    (
      await sh(tess, "cd /srv/course/week1 && cat README.md data/t.csv && stat -c %u README.md && ls -a")
    ).trim(),
    "# Week 1\na,b\n1,2\n1000\n.\n..\nREADME.md\ndata",
  );

  // Published from that folder by the operator's copy pods into each student's home.
  await json("POST", "/api/v1/templates/lab/assignments", {
    name: "a1",
    title: "Week 1",
    source: { folder: "course", path: "week1" },
  });
  const submission = (user: string) => submissionsPath(ns, submissionNameFor("a1", user));
  for (const user of ["ann", "bob"])
    await eventually(
      `${user}'s copy distributed`,
      async () => (await rest.get<Submission>(submission(user))).status?.distributedRelease === 1,
      120_000,
      500,
    );
  const ann = await podOf("ann");
  const bob = await podOf("bob");
  assert.equal(
    (await sh(ann, `cat ${LAB_HOME}/assignments/a1/README.md ${LAB_HOME}/assignments/a1/data/t.csv`)).trim(),
    "# Week 1\na,b\n1,2",
  );

  // Feedback: one zip laid out by student, with a folder that names no student.
  execFileSync(
    "bash",
    [
      "-c",
      "mkdir -p f/ann f/bob f/zed && echo 'well done' > f/ann/notes.md && echo 'see line 3' > f/bob/notes.md && echo x > f/zed/x.md && cd f && zip -qr ../f.zip .",
    ],
    { cwd: dir },
  );
  const feedback = await post("/api/v1/templates/lab/assignments/a1/feedback/files", [
    { name: "f.zip", data: await readFile(join(dir, "f.zip")) },
  ]);
  assert.deepEqual(
    (feedback.students as { name: string }[]).map((s) => s.name),
    ["ann", "bob"],
  );
  assert.deepEqual(feedback.unknown, [{ name: "zed/", files: 1 }]);
  await json("POST", "/api/v1/templates/lab/assignments/a1/feedback", { from: 0 });
  for (const user of ["ann", "bob"])
    await eventually(
      `${user}'s feedback returned`,
      async () => (await rest.get<Submission>(submission(user))).status?.feedbackRelease === 1,
      120_000,
      500,
    );
  assert.equal((await sh(ann, `cat ${LAB_HOME}/assignments/a1/feedback/notes.md`)).trim(), "well done");
  assert.equal((await sh(bob, `cat ${LAB_HOME}/assignments/a1/feedback/notes.md`)).trim(), "see line 3");
  assert.equal((await sh(bob, `ls ${LAB_HOME}/assignments/a1/feedback`)).trim(), "notes.md");

  // Every upload pod ended and went with its Archive.
  await eventually(
    "no upload pod left",
    async () =>
      (
        await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns), {
          query: { labelSelector: "userland.dev/copy=archive" },
        })
      ).items.length === 0,
    30_000,
    250,
  );
});
