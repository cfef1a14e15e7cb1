/**
 * The end of a term through the user-manager, against the real control plane with real RBAC (docs/
 * decisions/0011-coursework.md, "End of term"): who may archive and end a class (a course teacher of
 * the Template with the classarchives right; not another class's teacher, not one without the
 * right), the console's Plan this class's archive → Stop and archive → dry run → End the class (the dry run's hash sent back;
 * a stale one refused and nothing asked of the operator), and the class's zip streamed from an
 * archive pod serving that one file. No operator runs: the test writes the status it would and
 * stands in for the archive pod (`copy.ts serve-file` on 127.0.0.1).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { classArchivesPath, type ClassArchive } from "../../../api/v1alpha1/index.ts";
import { scratch } from "../../../coursework/files/test/scratch.ts";
import { adminRest, createTemplate } from "../../../test/support/resources.ts";
import { standIn } from "./archiveStandIn.ts";
import { hiddenValue, startConsole } from "./consoleSupport.ts";
import { courseTeacherRules, courseworkTemplateSpec } from "./courseworkSupport.ts";

const CLASS_ARCHIVE_RULE = {
  apiGroups: ["userland.dev"],
  resources: ["classarchives"],
  verbs: ["get", "list", "create", "patch"],
};
const HASH = "c".repeat(64);

test("end of term in the console: a course teacher archives a class, reads the dry run, downloads the zip and ends it with the dry run's hash; others may not", async (t) => {
  const h = await startConsole(t, { templates: [] });
  const ns = h.ns;
  const rest = await adminRest();
  const dir = await scratch(t);
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "other", courseworkTemplateSpec());
  await h.appoint({ user: "tina@uni.example" }, [CLASS_ARCHIVE_RULE, ...courseTeacherRules(["lab"])]);
  await h.appoint({ user: "nora@uni.example" }, [CLASS_ARCHIVE_RULE, ...courseTeacherRules(["other"])]);
  await h.appoint({ user: "ann@uni.example" }, courseTeacherRules(["lab"]));
  const tina = await h.cookie("tina@uni.example");
  const api = (path: string, cookie: string, method = "GET", body?: unknown) =>
    fetch(`${h.base}/api/v1/templates/lab/classarchives${path}`, {
      method,
      headers: { cookie, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });

  // Not a teacher of lab, or a teacher without the right: refused, nothing written.
  assert.equal((await api("", await h.cookie("nora@uni.example"), "POST", { class: "b" })).status, 403);
  assert.equal((await api("", await h.cookie("ann@uni.example"), "POST", { class: "b" })).status, 403);
  assert.equal((await rest.list(classArchivesPath(ns))).items.length, 0);

  // Plan this class's archive: from the class's end-of-term page.
  const list = await h.page("/console/end-of-term?template=lab&class=b", tina);
  assert.equal(list.status, 200, list.text);
  assert.match(list.text, />Plan this class's archive</);
  const created = await h.post("/console/end-of-term/create", tina, { template: "lab", class: "b" });
  assert.equal(created.status, 303, await created.text());
  const location = created.headers.get("location") ?? "";
  const name = new URL(location, h.base).searchParams.get("name") ?? "";
  assert.match(name, /^lab-b-end-[a-z0-9]+$/);
  const ca = await rest.get<ClassArchive>(classArchivesPath(ns, name));
  assert.deepEqual(ca.spec, { templateName: "lab", class: "b", archive: false, cancel: false, end: false });
  assert.equal(ca.metadata.annotations?.["userland.dev/created-by"], "userland:tina@uni.example");
  assert.equal((await api(`/${name}`, await h.cookie("nora@uni.example"))).status, 403);
  // Without a class the API refuses (issue 41 item 9): the whole Template is "*", said on purpose.
  const unset = await api("", tina, "POST", {});
  assert.equal(unset.status, 400);
  assert.match(await unset.text(), /class/);
  // One at a time per class: a second click is refused, naming the one under way.
  const again = await api("", tina, "POST", { class: "b" });
  assert.equal(again.status, 409);
  assert.match(await again.text(), new RegExp(name));

  // The operator's plan (written here as it would; issue 41 item 9): whose environments would stop
  // and whose volumes be read, nobody stopped yet. Stop and archive sets spec.archive, once.
  await rest.patch(classArchivesPath(ns, name, "status"), {
    status: {
      phase: "Planned",
      studentCount: 2,
      students: ["alice", "bob"].map((u, i) => ({
        user: u,
        userland: `${u}-lab`,
        uid: `uid-${u}`,
        generation: 1,
        claims: [`lab-${u}-lab-pvc-home`],
        folder: u,
        enabledBefore: i === 0,
      })),
    },
  });
  const planned = await h.page(`/console/class-archive?template=lab&name=${name}`, tina);
  assert.equal(planned.status, 200, planned.text);
  assert.match(planned.text, /Planned: nobody is stopped yet/);
  assert.match(planned.text, /alice<\/span><\/th>\s*<td class="mono">alice-lab<\/td>\s*<td>yes<\/td>/);
  assert.match(planned.text, /bob<\/span><\/th>\s*<td class="mono">bob-lab<\/td>\s*<td>no<\/td>/);
  assert.match(planned.text, />Stop 1 environment and archive</);
  assert.equal((await api(`/${name}/stop`, await h.cookie("nora@uni.example"), "POST")).status, 403);
  assert.equal((await rest.get<ClassArchive>(classArchivesPath(ns, name))).spec.archive, false);
  const stop = await h.post("/console/class-archive/stop", tina, { template: "lab", name });
  assert.equal(stop.status, 303, await stop.text());
  assert.equal((await rest.get<ClassArchive>(classArchivesPath(ns, name))).spec.archive, true);

  // Before the read-back there is nothing to confirm and no zip.
  assert.equal((await api(`/${name}/end`, tina, "POST", { confirm: HASH })).status, 409);
  assert.equal((await api(`/${name}/archive`, tina)).status, 409);

  // The operator's dry run (written here as it would).
  const zip = join(dir, "class.zip");
  await writeFile(zip, Buffer.from("PK\x05\x06" + "\0".repeat(18), "binary"));
  const zipHash = createHash("sha256")
    .update(await readFile(zip))
    .digest("hex");
  await rest.patch(classArchivesPath(ns, name, "status"), {
    status: {
      phase: "DryRun",
      studentCount: 2,
      verifiedCount: 1,
      toDeleteCount: 1,
      toDelete: [{ user: "alice", userland: "alice-lab", claims: ["lab-alice-lab-pvc-home"] }],
      kept: [
        {
          user: "bob",
          userland: "bob-lab",
          claims: ["lab-bob-lab-pvc-home"],
          reason: "not verified: home: 1 entry could not be archived (secret.txt: could not be read)",
        },
      ],
      dryRunHash: HASH,
      archive: {
        path: `archives/${name}-abcdefgh.zip`,
        manifestSha256: "d".repeat(64),
        bytes: 22,
        sha256: zipHash,
        verifiedAt: "2026-11-26T12:00:00Z",
      },
    },
  });
  const page = await h.page(`/console/class-archive?template=lab&name=${name}`, tina);
  assert.equal(page.status, 200, page.text);
  assert.match(page.text, /Ending the class deletes[\s\S]*alice[\s\S]*lab-alice-lab-pvc-home/);
  assert.match(page.text, /Kept[\s\S]*bob[\s\S]*secret\.txt: could not be read/);
  assert.match(
    page.text,
    new RegExp(`href="/api/v1/templates/lab/classarchives/${name}/archive"\\s+download`),
  );
  assert.equal(hiddenValue(page.text, "confirm"), HASH);
  assert.match(page.text, />Cancel and restart everyone</);

  // The zip, as the archive pod serves that one file.
  const archives = standIn(t, ns, () => ({ file: zip }));
  const download = await api(`/${name}/archive`, tina);
  assert.equal(download.status, 200);
  assert.equal(download.headers.get("content-disposition"), `attachment; filename="${name}.zip"`);
  assert.equal(
    createHash("sha256")
      .update(Buffer.from(await download.arrayBuffer()))
      .digest("hex"),
    zipHash,
  );
  assert.deepEqual(archives[0]?.spec.source, { classArchive: { templateName: "lab", name } });

  // A stale hash, or no tick in the box: nothing is asked of the operator.
  const stale = await h.post("/console/class-archive/end", tina, {
    template: "lab",
    name,
    confirm: "0".repeat(64),
    understood: "yes",
  });
  assert.equal(stale.status, 409);
  assert.match(await stale.text(), /the dry run changed since you read it/);
  const unticked = await h.post("/console/class-archive/end", tina, { template: "lab", name, confirm: HASH });
  assert.equal(unticked.status, 400);
  assert.equal((await rest.get<ClassArchive>(classArchivesPath(ns, name))).spec.end, false);
  const fromNora = await api(`/${name}/end`, await h.cookie("nora@uni.example"), "POST", { confirm: HASH });
  assert.equal(fromNora.status, 403);

  // End the class with the hash the page carried.
  const ended = await h.post("/console/class-archive/end", tina, {
    template: "lab",
    name,
    confirm: hiddenValue(page.text, "confirm") ?? "",
    understood: "yes",
  });
  assert.equal(ended.status, 303, await ended.text());
  const after = await rest.get<ClassArchive>(classArchivesPath(ns, name));
  assert.deepEqual([after.spec.end, after.spec.confirm], [true, HASH]);
  // Once the end is confirmed, nothing cancels it.
  const late = await api(`/${name}/cancel`, tina, "POST");
  assert.equal(late.status, 409);
  assert.equal((await rest.get<ClassArchive>(classArchivesPath(ns, name))).spec.cancel, false);
});
