/** The streamed zip: what Debian's unzip (or Python's zipfile) gets out of it, and names it refuses. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { test } from "node:test";
import { archiveTree, ZipWriter } from "../archive.ts";
import { copyTree } from "../copy.ts";
import { LimitError } from "../limits.ts";
import { DEFAULT_LIMITS } from "../../../api/copyPrograms.ts";
import { NameError } from "../names.ts";
import { extract, scratch, sha256sumOfFolder } from "./scratch.ts";

test("the zip extracts to the same bytes, without the links, FIFO and skipped names", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(join(home, "notebooks", "empty"), { recursive: true });
  await writeFile(join(home, "notebooks", "hw1.ipynb"), '{"cells": []}');
  await writeFile(
    join(home, "random.bin"),
    Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251)),
  );
  await writeFile(join(home, "zeros.bin"), Buffer.alloc(1_000_000));
  await writeFile(join(home, "run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  await writeFile(join(home, "ünïcode.txt"), "ü");
  await writeFile(join(home, "a\\b.txt"), "a backslash name");
  await symlink("/etc/passwd", join(home, "passwd"));
  await symlink("..", join(home, "notebooks", "up"));
  execFileSync("mkfifo", [join(home, "pipe")]);
  for (const compress of [true, false]) {
    const zip = join(dir, `home-${compress}.zip`);
    const summary = await archiveTree(home, DEFAULT_LIMITS, createWriteStream(zip), { compress });
    const out = join(dir, `extracted-${compress}`);
    t.diagnostic(`extracted with ${extract(zip, out)}`);
    assert.deepEqual(
      summary.files.map((f) => f.path),
      ["notebooks/hw1.ipynb", "random.bin", "run.sh", "zeros.bin", "ünïcode.txt"],
    );
    assert.deepEqual(
      summary.skipped.map((s) => s.path),
      ["a\\b.txt", "notebooks/up", "passwd", "pipe"],
    );
    assert.deepEqual(summary.changed, []);
    for (const file of summary.files) {
      assert.deepEqual(
        await readFile(join(out, file.path)),
        await readFile(join(home, file.path)),
        file.path,
      );
    }
    assert.equal(summary.sha256, sha256sumOfFolder(out), "the extracted files' manifest hash");
    assert.ok((await stat(join(out, "notebooks", "empty"))).isDirectory());
    assert.equal((await stat(join(out, "run.sh"))).mode & 0o111, 0o111, "executable kept");
    const size = (await stat(zip)).size;
    if (compress) assert.ok(size < 400_000, `deflated: ${size} bytes`);
    else assert.ok(size > 1_300_000, `stored: ${size} bytes`);
  }
  // The same files handed in give the same hash as the archive's summary.
  const receipt = await copyTree(home, join(dir, "copy"), DEFAULT_LIMITS);
  const again = await archiveTree(home, DEFAULT_LIMITS, createWriteStream(join(dir, "again.zip")));
  assert.equal(again.sha256, receipt.sha256);
});

test("entry names that would escape or be read as folders are refused before the zip holds them", async (t) => {
  const dir = await scratch(t);
  const writer = new ZipWriter();
  const empty = () => Readable.from([]);
  const options = { mtime: new Date(), executable: false };
  for (const name of [
    "../evil.sh",
    "a/../../evil",
    "/etc/cron.d/evil",
    "C:/evil",
    "a\\b",
    "a\\..\\..\\evil",
    "a//b",
    "x\ny",
  ]) {
    assert.throws(() => writer.addFile(name, options, empty), NameError, JSON.stringify(name));
    assert.throws(() => writer.addFolder(name, new Date()), NameError, JSON.stringify(name));
  }
  writer.addFile("fine.txt", options, () => Readable.from([Buffer.from("fine")]));
  const zip = join(dir, "names.zip");
  await writer.finish(createWriteStream(zip));
  const listed = execFileSync(
    "python3",
    ["-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).namelist())", zip],
    {
      encoding: "utf8",
    },
  );
  assert.equal(listed.trim(), "['fine.txt']");
});

test("a folder over a limit fails before the first byte of the zip", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  for (let i = 0; i < 20; i++) await writeFile(join(home, `f${i}`), "x");
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
  await assert.rejects(archiveTree(home, { ...DEFAULT_LIMITS, maxFiles: 10 }, sink), LimitError);
  assert.equal(chunks.length, 0);
});
