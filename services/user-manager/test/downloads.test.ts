/**
 * Downloads against the real control plane with real RBAC (docs/decisions/0011-coursework.md,
 * "Downloads"): who may ask (the proxy's userlands/archive for a student, a course teacher for an
 * assignment's hand-ins), the Archive the service writes (a source and a token's hash, never a
 * claim), and the zip streamed through. No operator runs: the test stands in for it and for the
 * archive pod, running `copy.ts serve-archive` as a process on 127.0.0.1 (a relay the harness owns;
 * the real pod is dialled on the node in test/node/downloads.test.ts) and reporting it Serving.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { API_VERSION, archivesPath, assignmentsPath } from "../../../api/v1alpha1/index.ts";
import { extract, scratch, sha256sumOfFolder } from "../../../coursework/files/test/scratch.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { adminRest, createTemplate } from "../../../test/support/resources.ts";
import { assignmentUrl } from "../console/assignmentPages.ts";
import { standIn } from "./archiveStandIn.ts";
import { startConsole } from "./consoleSupport.ts";
import { courseTeacherRules, courseworkTemplateSpec } from "./courseworkSupport.ts";
import { admin } from "./support.ts";

async function download(url: string, headers: Record<string, string>, into: string) {
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status === 200) await writeFile(into, body);
  return { status: response.status, headers: response.headers, text: body.toString().slice(0, 2000) };
}

test("downloads: a student's home through the proxy's right, a teacher's hand-ins by RBAC, streamed from the archive pod and the Archive removed", async (t) => {
  const h = await startConsole(t, { templates: [] });
  const ns = h.ns;
  const dir = await scratch(t);
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await h.appoint({ user: "tina@uni.example" }, courseTeacherRules(["lab"]));
  await h.appoint({ user: "nora@uni.example" }, courseTeacherRules(["other"]));
  const proxy = await h.callerWith("proxy", [
    { apiGroups: ["userland.dev"], resources: ["userlands/archive"], verbs: ["get"] },
  ]);
  const handinOnly = await h.callerWith("handin-only", [
    { apiGroups: ["userland.dev"], resources: ["submissions/handin"], verbs: ["get", "update"] },
  ]);
  await admin.createUserland(ns, "alice-lab", "alice", "lab");
  await (
    await adminRest()
  ).create(assignmentsPath(ns), {
    apiVersion: API_VERSION,
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "week1" } },
  });

  const home = join(dir, "alice-home");
  await mkdir(join(home, "notebooks"), { recursive: true });
  await writeFile(join(home, "notebooks", "lists.ipynb"), '{"cells": []}\n');
  await writeFile(join(home, "notes.txt"), "mine\n");
  const handins = join(dir, "collection", "handins", "a1");
  for (const user of ["alice", "bob"]) {
    await mkdir(join(handins, user), { recursive: true });
    await writeFile(join(handins, user, "answer.py"), `print("${user}")\n`);
  }
  const archives = standIn(t, ns, (a) =>
    a.spec.source?.home?.user === "bob"
      ? { fail: "Too many files: the folder holds more than 50000 files and folders" }
      : a.spec.source?.home
        ? home
        : handins,
  );

  await t.test("who may not: no right, the wrong right, another class's teacher, unknown names", async () => {
    const url = `${h.base}/api/v1/users/alice/archive?template=lab`;
    assert.equal((await download(url, {}, "")).status, 401);
    assert.equal((await download(url, { authorization: `Bearer ${handinOnly}` }, "")).status, 403);
    const nora = { cookie: await h.cookie("nora@uni.example") };
    assert.equal(
      (await download(`${h.base}/api/v1/templates/lab/assignments/a1/archive`, nora, "")).status,
      403,
    );
    const nobody = await download(
      `${h.base}/api/v1/users/mallory/archive?template=lab`,
      { authorization: `Bearer ${proxy}` },
      "",
    );
    assert.equal(nobody.status, 404);
    assert.match(nobody.text, /mallory has no Userland/);
    const tina = { cookie: await h.cookie("tina@uni.example") };
    assert.equal(
      (await download(`${h.base}/api/v1/templates/lab/assignments/a9/archive`, tina, "")).status,
      404,
    );
    assert.equal(archives.length, 0, "nothing refused wrote an Archive");
  });

  await t.test("a student's download is their home, byte for byte", async () => {
    const zip = join(dir, "alice.zip");
    const r = await download(
      `${h.base}/api/v1/users/alice/archive?template=lab`,
      { authorization: `Bearer ${proxy}` },
      zip,
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("content-type"), "application/zip");
    assert.match(
      r.headers.get("content-disposition") ?? "",
      /^attachment; filename="alice-[a-z0-9]+-lab\.zip"$/,
    );
    extract(zip, join(dir, "alice-out"));
    assert.equal(sha256sumOfFolder(join(dir, "alice-out")), sha256sumOfFolder(home));
    const [archive] = archives;
    assert.deepEqual(archive?.spec.source, { home: { user: "alice", templateName: "lab" } });
    assert.match(archive?.spec.tokenSha256 ?? "", /^[0-9a-f]{64}$/);
    assert.match(archive?.spec.requestedBy ?? "", /proxy/);
    await eventually(
      "the Archive deleted",
      async () => (await (await adminRest()).list(archivesPath(ns))).items.length === 0,
    );
  });

  await t.test("a teacher's download holds every hand-in, a folder per student", async () => {
    const page = await h.page(assignmentUrl("lab", "a1"), await h.cookie("tina@uni.example"));
    assert.equal(page.status, 200, page.text);
    assert.match(
      page.text,
      /href="\/api\/v1\/templates\/lab\/assignments\/a1\/archive"\s+download\s*>Download all hand-ins</,
    );
    const zip = join(dir, "a1.zip");
    const r = await download(
      `${h.base}/api/v1/templates/lab/assignments/a1/archive`,
      { cookie: await h.cookie("tina@uni.example") },
      zip,
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("content-disposition"), 'attachment; filename="lab-a1-handins.zip"');
    extract(zip, join(dir, "a1-out"));
    assert.equal(sha256sumOfFolder(join(dir, "a1-out")), sha256sumOfFolder(handins));
    assert.deepEqual(archives[1]?.spec.source, { handins: { templateName: "lab", assignment: "a1" } });
    await eventually(
      "the Archive deleted",
      async () => (await (await adminRest()).list(archivesPath(ns))).items.length === 0,
    );
  });

  await t.test(
    "an Archive the operator reports Failed is a 422 with its message, and is removed",
    async () => {
      await admin.createUserland(ns, "bob-lab", "bob", "lab");
      const r = await download(
        `${h.base}/api/v1/users/bob/archive?template=lab`,
        { authorization: `Bearer ${proxy}` },
        "",
      );
      assert.equal(r.status, 422, r.text);
      assert.match(r.text, /Too many files/);
      await eventually(
        "the Archive deleted",
        async () => (await (await adminRest()).list(archivesPath(ns))).items.length === 0,
      );
    },
  );
});
