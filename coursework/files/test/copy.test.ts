/** The hand-in snapshot: its receipt, its read-only copy, and what a hostile folder gets out of it. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { UnsafePathError } from "../beneath.ts";
import { copyTree, DestinationExistsError } from "../copy.ts";
import { LimitError } from "../limits.ts";
import { DEFAULT_LIMITS } from "../../../api/copyPrograms.ts";
import { scratch, sha256sumOfFolder } from "./scratch.ts";

async function studentFolder(dir: string): Promise<string> {
  const home = join(dir, "home");
  await mkdir(join(home, "notebooks", "data"), { recursive: true });
  await mkdir(join(home, "empty"));
  await writeFile(join(home, "README.md"), "# my hand-in\n");
  await writeFile(join(home, "notebooks", "hw1.ipynb"), JSON.stringify({ cells: [] }));
  await writeFile(join(home, "notebooks", "data", "values.bin"), Buffer.alloc(700_000, 7));
  await writeFile(join(home, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
  await writeFile(join(home, "é ü.txt"), "unicode");
  await symlink("/etc/passwd", join(home, "passwd"));
  await symlink("..", join(home, "notebooks", "up"));
  execFileSync("mkfifo", [join(home, "pipe")]);
  return home;
}

test("the receipt: each file's size and hash, the total, a stable manifest hash that sha256sum agrees with", async (t) => {
  const dir = await scratch(t);
  const home = await studentFolder(dir);
  const receipt = await copyTree(home, join(dir, "copy"), DEFAULT_LIMITS);
  assert.deepEqual(
    receipt.files.map((f) => f.path),
    ["README.md", "notebooks/data/values.bin", "notebooks/hw1.ipynb", "run.sh", "é ü.txt"],
  );
  for (const file of receipt.files) {
    const bytes = await readFile(join(dir, "copy", file.path));
    assert.equal(file.bytes, bytes.length, file.path);
    assert.equal(file.sha256, createHash("sha256").update(bytes).digest("hex"), file.path);
  }
  assert.equal(receipt.bytes, 13 + 12 + 700_000 + 10 + 7);
  // An independent computation with coreutils over the copy.
  assert.equal(receipt.sha256, sha256sumOfFolder(join(dir, "copy")));
  assert.deepEqual(
    receipt.skipped.map((s) => s.path),
    ["notebooks/up", "passwd", "pipe"],
  );
  // Stable: the same folder copied again gives the same hash.
  const again = await copyTree(home, join(dir, "copy-again"), DEFAULT_LIMITS);
  assert.equal(again.sha256, receipt.sha256);
  assert.deepEqual(again.files, receipt.files);
});

test("the copy is read-only, its empty folders kept, nothing left beside it", async (t) => {
  const dir = await scratch(t);
  const home = await studentFolder(dir);
  await mkdir(join(dir, "collection"));
  await copyTree(home, join(dir, "collection", "alice"), DEFAULT_LIMITS);
  assert.deepEqual(await readdir(join(dir, "collection")), ["alice"]);
  for (const [path, mode] of [
    ["alice", 0o555],
    ["alice/notebooks", 0o555],
    ["alice/empty", 0o555],
    ["alice/README.md", 0o444],
    ["alice/run.sh", 0o444],
  ] as const) {
    assert.equal((await stat(join(dir, "collection", path))).mode & 0o7777, mode, path);
  }
});

test("over a limit, the hand-in fails with the limit's message before writing anything", async (t) => {
  const dir = await scratch(t);
  const home = await studentFolder(dir);
  await mkdir(join(dir, "collection"));
  await assert.rejects(
    copyTree(home, join(dir, "collection", "alice"), { ...DEFAULT_LIMITS, maxBytes: 500_000 }),
    (e) => {
      assert.ok(e instanceof LimitError);
      assert.match(e.message, /Too much data.*"notebooks\/data\/values\.bin"/);
      return true;
    },
  );
  await assert.rejects(
    copyTree(home, join(dir, "collection", "alice"), { ...DEFAULT_LIMITS, maxFiles: 3 }),
    LimitError,
  );
  assert.deepEqual(await readdir(join(dir, "collection")), []);
});

test("a destination that exists is never replaced, and a linked source is refused", async (t) => {
  const dir = await scratch(t);
  const home = await studentFolder(dir);
  await mkdir(join(dir, "taken"));
  await assert.rejects(copyTree(home, join(dir, "taken"), DEFAULT_LIMITS), DestinationExistsError);
  await symlink(home, join(dir, "linked-home"));
  await assert.rejects(
    copyTree(join(dir, "linked-home"), join(dir, "copy"), DEFAULT_LIMITS),
    UnsafePathError,
  );
  assert.deepEqual((await readdir(dir)).sort(), ["home", "linked-home", "taken"]);
});

test("the moment: files changed after it are named on the receipt, even with their mtime set back", async (t) => {
  const dir = await scratch(t);
  const home = await studentFolder(dir);
  // ctime has the file system's resolution: the moment lies clearly between the two writes.
  await new Promise((r) => setTimeout(r, 20));
  const moment = new Date();
  await new Promise((r) => setTimeout(r, 20));
  await writeFile(join(home, "notebooks", "hw1.ipynb"), JSON.stringify({ cells: ["after"] }));
  // touch -d: the modification time claims the file is old; its change time cannot.
  await utimes(join(home, "notebooks", "hw1.ipynb"), new Date("2020-01-01"), new Date("2020-01-01"));
  const receipt = await copyTree(home, join(dir, "copy"), DEFAULT_LIMITS, { moment });
  assert.deepEqual(receipt.writtenAfter, ["notebooks/hw1.ipynb"]);
  assert.ok(Date.parse(receipt.startedAt) >= Math.floor(moment.getTime() / 1000) * 1000, receipt.startedAt);

  const before = await copyTree(home, join(dir, "copy-2"), DEFAULT_LIMITS, {
    moment: new Date(Date.now() + 60_000),
  });
  assert.deepEqual(before.writtenAfter, [], "a moment after every change names none");
  const without = await copyTree(home, join(dir, "copy-3"), DEFAULT_LIMITS);
  assert.equal(without.writtenAfter, undefined, "without a moment nothing is judged");
});
