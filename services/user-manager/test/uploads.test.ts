/**
 * Uploads against the real control plane with real RBAC (docs/decisions/0011-coursework.md,
 * "Uploads"): who may upload (a Template's course teacher; feedback also needs the assignment), the
 * Archive the service writes (a target, never a claim, and a token's hash), the files streamed into
 * the pod and committed, the console's forms, and the limits and refusals as the teacher reads them.
 * No operator runs: the test stands in for it and the upload pod, running `copy.ts receive-upload`
 * as a process on 127.0.0.1 (the real pod runs in test/node/uploads.test.ts).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { collectionUserFolder } from "../../../api/naming.ts";
import { API_VERSION, archivesPath, assignmentsPath, type Archive } from "../../../api/v1alpha1/index.ts";
import { scratch } from "../../../coursework/files/test/scratch.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { adminRest, createTemplate } from "../../../test/support/resources.ts";
import { assignmentUrl } from "../console/assignmentPages.ts";
import { standIn } from "./archiveStandIn.ts";
import { CONSOLE_ORIGIN, startConsole } from "./consoleSupport.ts";
import { courseTeacherRules, courseworkTemplateSpec, createSubmission } from "./courseworkSupport.ts";

/** A multipart POST as a browser sends it from the console's page. */
async function upload(url: string, cookie: string, files: { name: string; data: Buffer | string }[]) {
  const form = new FormData();
  for (const f of files) form.append("files", new Blob([f.data]), f.name);
  const r = await fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: CONSOLE_ORIGIN },
    body: form,
  });
  return { status: r.status, text: await r.text(), location: r.headers.get("location") };
}

async function tree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true }).catch(() => [])) {
    const path = `${prefix}${e.name}`;
    if (e.isDirectory()) out.push(...(await tree(dir, `${path}/`)));
    else out.push(path);
  }
  return out.sort();
}

test("uploads: materials and feedback streamed into the upload pod by a course teacher, with refusals the teacher can read", async (t) => {
  const h = await startConsole(t, { templates: [] });
  const ns = h.ns;
  const dir = await scratch(t);
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await h.appoint({ user: "tina@uni.example" }, courseTeacherRules(["lab"]));
  await h.appoint({ user: "nora@uni.example" }, courseTeacherRules(["other"]));
  await (
    await adminRest()
  ).create(assignmentsPath(ns), {
    apiVersion: API_VERSION,
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "week1" } },
  });
  await createSubmission(ns, "a1", "alice");
  await createSubmission(ns, "a1", "Bob Smith");

  // The stand-in's folders: the course folder's path, the collection's feedback (as the operator mounts them).
  const course = join(dir, "course");
  const feedback = join(dir, "collection", "feedback", "a1");
  const folderOf = (a: Archive): string => {
    const m = a.spec.target?.materials;
    if (m) return join(course, m.path);
    const f = a.spec.target?.feedback;
    return f?.user ? join(feedback, collectionUserFolder(f.user)) : feedback;
  };
  const archives = standIn(
    t,
    ns,
    (a) => {
      const folder = folderOf(a);
      // The kubelet makes a subPath's folder.
      execFileSync("mkdir", ["-p", folder]);
      return folder;
    },
    (a) =>
      a.spec.target?.feedback && !a.spec.target.feedback.user
        ? ["--student", "alice", "--student", "Bob Smith", "--max-bytes", "1MiB"]
        : ["--max-bytes", "1MiB"],
  );
  const tina = await h.cookie("tina@uni.example");
  const nora = await h.cookie("nora@uni.example");
  const materials = `${h.base}/api/v1/templates/lab/folders/course/files?path=week1`;

  await t.test(
    "who may not: no session, another class's teacher, unknown folders and students, a cross-site form",
    async () => {
      const file = [{ name: "x.txt", data: "x" }];
      assert.equal((await upload(materials, "", file)).status, 401);
      assert.equal((await upload(materials, nora, file)).status, 403);
      assert.equal(
        (await upload(`${h.base}/api/v1/templates/lab/folders/nope/files?path=w`, tina, file)).status,
        404,
      );
      const up = await upload(`${h.base}/api/v1/templates/lab/folders/course/files?path=..%2Fx`, tina, file);
      assert.equal(up.status, 400, up.text);
      const eve = await upload(
        `${h.base}/api/v1/templates/lab/assignments/a1/feedback/files?user=eve`,
        tina,
        file,
      );
      assert.equal(eve.status, 404);
      assert.match(eve.text, /eve is not a student/);
      const form = new FormData();
      form.append("files", new Blob(["x"]), "x.txt");
      const crossSite = await fetch(materials, {
        method: "POST",
        headers: { cookie: tina, origin: "https://evil.example" },
        body: form,
      });
      assert.equal(crossSite.status, 403);
      assert.equal(archives.length, 0, "nothing refused wrote an Archive");
    },
  );

  await t.test(
    "materials: files and a zip land in the course folder's path; the Archive names the target and goes",
    async () => {
      execFileSync(
        "bash",
        ["-c", "mkdir -p z/data && echo a,b > z/data/t.csv && cd z && zip -qr ../m.zip ."],
        { cwd: dir },
      );
      const r = await upload(materials, tina, [
        { name: "README.md", data: "# Week 1\n" },
        { name: "m.zip", data: await readFile(join(dir, "m.zip")) },
      ]);
      assert.equal(r.status, 200, r.text);
      const summary = JSON.parse(r.text) as { files: number; sha256: string };
      assert.equal(summary.files, 2);
      assert.deepEqual(await tree(join(course, "week1")), ["README.md", "data/t.csv"]);
      assert.deepEqual(archives[0]?.spec.target, {
        materials: { templateName: "lab", folder: "course", path: "week1" },
      });
      assert.equal(archives[0]?.spec.source, undefined);
      assert.match(archives[0]?.spec.requestedBy ?? "", /tina/);
      await eventually(
        "the Archive deleted",
        async () => (await (await adminRest()).list(archivesPath(ns))).items.length === 0,
      );
    },
  );

  await t.test('materials into the course folder\'s root: path "/" is "." (issue 44 item 7)', async () => {
    const r = await upload(`${h.base}/api/v1/templates/lab/folders/course/files?path=%2F`, tina, [
      { name: "syllabus.md", data: "# Syllabus\n" },
    ]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(archives.at(-1)?.spec.target, {
      materials: { templateName: "lab", folder: "course", path: "." },
    });
    assert.ok((await tree(course)).includes("syllabus.md"));
  });

  await t.test(
    "refused uploads write nothing and say why: a link in a zip, over the limit, no file",
    async () => {
      execFileSync("bash", ["-c", "ln -s /etc/passwd pw && zip -qy link.zip pw"], { cwd: dir });
      const link = await upload(materials, tina, [
        { name: "ok.txt", data: "fine" },
        { name: "link.zip", data: await readFile(join(dir, "link.zip")) },
      ]);
      assert.equal(link.status, 422, link.text);
      assert.match(link.text, /entry \\"pw\\" is a symbolic link/);
      const big = await upload(materials, tina, [{ name: "big.bin", data: Buffer.alloc(2 * 1024 * 1024) }]);
      assert.equal(big.status, 413, big.text);
      assert.match(big.text, /Too much data/);
      const none = await upload(materials, tina, []);
      assert.equal(none.status, 400, none.text);
      assert.deepEqual(await tree(join(course, "week1")), ["README.md", "data/t.csv"]);
      await eventually(
        "the Archives deleted",
        async () => (await (await adminRest()).list(archivesPath(ns))).items.length === 0,
      );
    },
  );

  await t.test(
    "the console: materials from an assignment's page, feedback for one student and a zip by student",
    async () => {
      const page = await h.page(assignmentUrl("lab", "a1"), tina);
      assert.equal(page.status, 200, page.text);
      const materialsAction = /action="(\/console\/materials\/upload\?[^"]+)"/
        .exec(page.text)?.[1]
        ?.replaceAll("&#38;", "&");
      assert.ok(materialsAction, "the materials form");
      const r = await upload(h.base + materialsAction, tina, [{ name: "lab.ipynb", data: "{}\n" }]);
      assert.equal(r.status, 303, r.text);
      assert.match(r.location ?? "", /done=uploaded/);
      assert.equal(await readFile(join(course, "week1", "lab.ipynb"), "utf8"), "{}\n");

      const bobAction = /action="(\/console\/assignment\/feedback\/upload\?[^"]*user=Bob\+Smith[^"]*)"/
        .exec(page.text)?.[1]
        ?.replaceAll("&#38;", "&");
      assert.ok(bobAction, "Bob's row's form");
      const bob = await upload(h.base + bobAction, tina, [{ name: "notes.md", data: "good\n" }]);
      assert.equal(bob.status, 200, bob.text);
      assert.match(bob.text, /1 file saved as Bob Smith&#39;s feedback/);
      assert.equal(
        await readFile(join(feedback, collectionUserFolder("Bob Smith"), "notes.md"), "utf8"),
        "good\n",
      );

      await mkdir(join(dir, "fb", "alice"), { recursive: true });
      execFileSync(
        "bash",
        [
          "-c",
          `mkdir -p fb/${collectionUserFolder("Bob Smith")} fb/mallory && echo a > fb/alice/a.md && echo b > fb/${collectionUserFolder("Bob Smith")}/b.md && echo m > fb/mallory/m.md && cd fb && zip -qr ../fb.zip .`,
        ],
        { cwd: dir },
      );
      const all = await upload(`${h.base}/console/assignment/feedback/upload?template=lab&name=a1`, tina, [
        { name: "fb.zip", data: await readFile(join(dir, "fb.zip")) },
      ]);
      assert.equal(all.status, 200, all.text);
      assert.match(all.text, /Feedback saved for 2 students/);
      assert.match(all.text, /Not saved, as they name no student of this assignment: mallory\/ \(1 file\)/);
      assert.deepEqual(await tree(feedback), [
        `${collectionUserFolder("alice")}/a.md`,
        `${collectionUserFolder("Bob Smith")}/b.md`,
        `${collectionUserFolder("Bob Smith")}/notes.md`,
      ]);

      const refused = await upload(
        `${h.base}/console/assignment/feedback/upload?template=lab&name=a1`,
        nora,
        [{ name: "x.md", data: "x" }],
      );
      assert.equal(refused.status, 403);
    },
  );

  await t.test(
    "the console: upload materials first, then the new assignment's form names that folder",
    async () => {
      const list = await h.page("/console/assignments?template=lab", tina);
      assert.match(list.text, /Upload materials/);
      const step = await h.page("/console/materials?template=lab&folder=course&path=week2", tina);
      assert.equal(step.status, 200, step.text);
      const action = /action="(\/console\/materials\/upload\?[^"]+)"/
        .exec(step.text)?.[1]
        ?.replaceAll("&#38;", "&");
      const r = await upload(h.base + action, tina, [{ name: "task.md", data: "do it\n" }]);
      assert.equal(r.status, 303, r.text);
      const back = await h.page(r.location ?? "", tina);
      assert.match(back.text, /Uploaded 1 file into course\/week2/);
      assert.match(back.text, /name="path" value="week2"/);
      assert.equal(await readFile(join(course, "week2", "task.md"), "utf8"), "do it\n");
    },
  );
});
