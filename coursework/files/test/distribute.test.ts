/** Publishing into a student's folder by nbgitpuller's rule, with a student who plants links. */
import assert from "node:assert/strict";
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { UnsafePathError } from "../beneath.ts";
import { distribute, MANIFEST_NAME } from "../distribute.ts";
import { DEFAULT_LIMITS } from "../../../api/copyPrograms.ts";
import { scratch } from "./scratch.ts";

async function publish(dir: string, files: Record<string, string>): Promise<string> {
  const published = join(dir, `published-${Math.random().toString(16).slice(2)}`);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(published, path, ".."), { recursive: true });
    await writeFile(join(published, path), content);
  }
  return published;
}

test("a re-publish updates what the student left alone, keeps their edit, adds new files, deletes nothing", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "home", "assignments", "hw1");
  const v1 = await publish(dir, { "hw1.ipynb": "v1 notebook", "data/input.csv": "a,b\n", "README.md": "v1" });
  const first = await distribute(v1, target, DEFAULT_LIMITS);
  assert.deepEqual(first.written.sort(), ["README.md", "data/input.csv", "hw1.ipynb"]);
  assert.deepEqual([first.updated, first.kept, first.unchanged], [[], [], 0]);
  assert.equal(await readFile(join(target, "hw1.ipynb"), "utf8"), "v1 notebook");

  await writeFile(join(target, "hw1.ipynb"), "v1 notebook + my answers");
  await writeFile(join(target, "my-notes.txt"), "mine");
  const v2 = await publish(dir, {
    "hw1.ipynb": "v2 notebook",
    "data/input.csv": "a,b\n1,2\n",
    "hints.md": "new",
  });
  const second = await distribute(v2, target, DEFAULT_LIMITS);
  assert.deepEqual(second.written, ["hints.md"]);
  assert.deepEqual(second.updated, ["data/input.csv"]);
  assert.deepEqual(second.kept, [
    { path: "hw1.ipynb", reason: "kept: the student changed it since it was last delivered" },
  ]);
  assert.equal(await readFile(join(target, "hw1.ipynb"), "utf8"), "v1 notebook + my answers");
  assert.equal(await readFile(join(target, "data", "input.csv"), "utf8"), "a,b\n1,2\n");
  assert.equal(await readFile(join(target, "README.md"), "utf8"), "v1", "no longer published, still there");
  assert.equal(await readFile(join(target, "my-notes.txt"), "utf8"), "mine");
  assert.deepEqual(
    (await readdir(target)).filter((n) => n.startsWith(".userland-") && n.endsWith(".tmp")),
    [],
  );

  // The same version again: nothing to do. The student reverts their edit: the next version reaches them.
  const third = await distribute(v2, target, DEFAULT_LIMITS);
  assert.deepEqual([third.written, third.updated, third.unchanged], [[], [], 2]);
  assert.equal(third.kept.length, 1);
  await writeFile(join(target, "hw1.ipynb"), "v1 notebook");
  const fourth = await distribute(v2, target, DEFAULT_LIMITS);
  assert.deepEqual(fourth.updated, ["hw1.ipynb"]);
  assert.equal(fourth.revision, second.revision);
});

test("a file the student had before the first delivery is theirs", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "hw1");
  await mkdir(target);
  await writeFile(join(target, "hw1.ipynb"), "my own start");
  const result = await distribute(await publish(dir, { "hw1.ipynb": "v1" }), target, DEFAULT_LIMITS);
  assert.match(result.kept[0]?.reason ?? "", /had a file of this name before/);
  assert.equal(await readFile(join(target, "hw1.ipynb"), "utf8"), "my own start");
});

test("links the student planted are kept and reported, never written through", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "hw1");
  const v1 = await publish(dir, { "a.txt": "v1 a", "sub/b.txt": "v1 b" });
  await distribute(v1, target, DEFAULT_LIMITS);
  await mkdir(join(dir, "outside"));
  await writeFile(join(dir, "outside", "victim.txt"), "platform file");
  // A delivered file replaced by a link, the delivered folder replaced by a link, the manifest too.
  await rename(join(target, "a.txt"), join(target, "a-old.txt"));
  await symlink(join(dir, "outside", "victim.txt"), join(target, "a.txt"));
  await rename(join(target, "sub"), join(target, "sub-old"));
  await symlink(join(dir, "outside"), join(target, "sub"));
  await unlink(join(target, MANIFEST_NAME));
  await symlink(join(dir, "outside", "manifest-victim.json"), join(target, MANIFEST_NAME));
  await writeFile(join(dir, "outside", "manifest-victim.json"), "platform's");

  const v2 = await publish(dir, { "a.txt": "v2 a", "sub/b.txt": "v2 b" });
  const result = await distribute(v2, target, DEFAULT_LIMITS);
  assert.deepEqual(result.kept.map((k) => k.path).sort(), ["a.txt", "sub/b.txt"]);
  assert.match(result.kept.find((k) => k.path === "a.txt")!.reason, /symbolic link/);
  assert.match(result.kept.find((k) => k.path === "sub/b.txt")!.reason, /"sub" is a symbolic link/);
  assert.equal(result.manifestProblem, "replaced by a symbolic link");
  assert.deepEqual((await readdir(join(dir, "outside"))).sort(), ["manifest-victim.json", "victim.txt"]);
  assert.equal(await readFile(join(dir, "outside", "victim.txt"), "utf8"), "platform file");
  assert.equal(await readFile(join(dir, "outside", "manifest-victim.json"), "utf8"), "platform's");
  assert.equal(
    await readlink(join(target, "a.txt")),
    join(dir, "outside", "victim.txt"),
    "the student's link stays",
  );
  assert.ok((await lstat(join(target, "sub"))).isSymbolicLink());
  // The manifest is the platform's again: a regular file in the student's folder.
  assert.ok((await lstat(join(target, MANIFEST_NAME))).isFile());
});

test("an assignment folder that is a link, or lies behind one, is refused", async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, "collection", "hw1"), { recursive: true });
  await mkdir(join(dir, "home"));
  await symlink(join(dir, "collection"), join(dir, "home", "assignments"));
  const v1 = await publish(dir, { "a.txt": "v1" });
  await assert.rejects(
    distribute(v1, join(dir, "home", "assignments", "hw1"), DEFAULT_LIMITS),
    UnsafePathError,
  );
  await symlink(join(dir, "collection", "hw1"), join(dir, "home", "hw2"));
  await assert.rejects(distribute(v1, join(dir, "home", "hw2"), DEFAULT_LIMITS), UnsafePathError);
  assert.deepEqual(await readdir(join(dir, "collection", "hw1")), []);
});

test("a manifest the student edited with paths out of the folder is read without harm", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "hw1");
  await mkdir(target);
  const evil = {
    version: 1,
    revision: "x",
    files: {
      "../escape.txt": { sha256: "0".repeat(64), bytes: 1 },
      "/etc/passwd": { sha256: "0".repeat(64), bytes: 1 },
      "ok.txt": { sha256: "not a hash", bytes: 1 },
    },
  };
  await writeFile(join(target, MANIFEST_NAME), JSON.stringify(evil));
  await distribute(await publish(dir, { "ok.txt": "v1" }), target, DEFAULT_LIMITS);
  const manifest = JSON.parse(await readFile(join(target, MANIFEST_NAME), "utf8")) as { files: object };
  assert.deepEqual(Object.keys(manifest.files), ["ok.txt"]);
  assert.deepEqual(await readdir(dir).then((n) => n.filter((x) => x.includes("escape"))), []);
});

test("many files into folders that do not exist yet, eight at a time: each written once, then unchanged", async (t) => {
  const dir = await scratch(t);
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`part${i % 3}/week${i % 6}/ex${i}.py`] = `print(${i})\n`;
  const v1 = await publish(dir, files);
  const target = join(dir, "home", "assignments", "hw1");
  const first = await distribute(v1, target, DEFAULT_LIMITS);
  assert.equal(first.written.length, 60);
  for (const [path, content] of Object.entries(files))
    assert.equal(await readFile(join(target, path), "utf8"), content);
  const again = await distribute(v1, target, DEFAULT_LIMITS);
  assert.deepEqual([again.written, again.updated, again.kept, again.unchanged], [[], [], [], 60]);
});
