/** Students' folders in the teacher's zips (issue 44 item 7): named by the student, both ways. */
import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { collectionUserFolder } from "../../../api/naming.ts";
import { DEFAULT_LIMITS } from "../../../api/copyPrograms.ts";
import { archiveTree } from "../archive.ts";
import { studentsLayout, studentZipNames } from "../studentFolders.ts";
import { extract, scratch, sha256sumOfFolder } from "./scratch.ts";

test("a student's folder is named by the student where that is a plain, unique file name, else by its own name", () => {
  const users = ["ann", "Ben.Smith@uni.example", "../etc", ".hidden", "a/b", "Cat", "cat", "x".repeat(101)];
  const names = studentZipNames(users);
  const nameOf = (user: string) => names.get(collectionUserFolder(user));
  assert.equal(nameOf("ann"), "ann");
  assert.equal(nameOf("Ben.Smith@uni.example"), "Ben.Smith@uni.example");
  for (const unsafe of ["../etc", ".hidden", "a/b", "x".repeat(101)])
    assert.equal(nameOf(unsafe), collectionUserFolder(unsafe), unsafe);
  // Cat and cat would be one folder on a teacher's Mac or Windows: both keep their own names.
  assert.equal(nameOf("Cat"), collectionUserFolder("Cat"));
  assert.equal(nameOf("cat"), collectionUserFolder("cat"));
  assert.equal(new Set(names.values()).size, names.size, "no two students share a name");
});

test("a name a feedback upload takes back: the student's name in the zip, or the collection folder", () => {
  const layout = studentsLayout(["ann"]);
  assert.equal(layout.kind, "students");
  if (layout.kind !== "students") return;
  assert.equal(layout.folders.get("ann"), collectionUserFolder("ann"));
  assert.equal(layout.folders.get(collectionUserFolder("ann")), collectionUserFolder("ann"));
});

test("the hand-ins zip names each student's folder as studentZipNames says, with the same bytes", async (t) => {
  const dir = await scratch(t);
  const handins = join(dir, "handins");
  for (const user of ["ann", "../etc"]) {
    await mkdir(join(handins, collectionUserFolder(user), "1"), { recursive: true });
    await writeFile(
      join(handins, collectionUserFolder(user), "1", "main.py"),
      `print(${JSON.stringify(user)})\n`,
    );
  }
  const zip = join(dir, "handins.zip");
  const summary = await archiveTree(handins, DEFAULT_LIMITS, createWriteStream(zip), {
    topFolderNames: studentZipNames(["ann", "../etc"]),
  });
  const out = join(dir, "out");
  extract(zip, out);
  assert.deepEqual((await readdir(out)).sort(), [collectionUserFolder("../etc"), "ann"].sort());
  assert.deepEqual(
    summary.files.map((f) => f.path),
    [`${collectionUserFolder("../etc")}/1/main.py`, "ann/1/main.py"].sort(),
  );
  assert.equal(
    sha256sumOfFolder(join(out, "ann", "1")),
    sha256sumOfFolder(join(handins, collectionUserFolder("ann"), "1")),
  );
});
