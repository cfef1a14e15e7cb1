/**
 * The walk and the reading of listed files, against a hostile student's real files: links out of the
 * folder, a FIFO, a socket, a device, names a zip or a manifest cannot hold, folders swapped for links
 * after the listing, files changed while being read, and every limit.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFile, mkdir, open, rename, symlink, truncate, utimes, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { UnsafePathError } from "../beneath.ts";
import { LimitError } from "../limits.ts";
import { DEFAULT_LIMITS, type Limits } from "../../../api/copyPrograms.ts";
import { readListed } from "../read.ts";
import { Tree, type Listing } from "../walk.ts";
import { scratch } from "./scratch.ts";

async function listing(root: string, limits: Limits = DEFAULT_LIMITS): Promise<Listing> {
  const tree = await Tree.open(root);
  try {
    return await tree.walk(limits);
  } finally {
    await tree.close();
  }
}

function reasonOf(l: Listing, path: string): string | undefined {
  return l.skipped.find((s) => s.path === path)?.reason;
}

test("links to /etc/passwd and to a sibling folder are listed as skipped, never read through", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(join(home, "work"), { recursive: true });
  await mkdir(join(dir, "other-student"));
  await writeFile(join(dir, "other-student", "answers.txt"), "not yours");
  await writeFile(join(home, "work", "mine.txt"), "mine");
  await symlink("/etc/passwd", join(home, "passwd"));
  await symlink("../other-student", join(home, "sibling"));
  await symlink(join(dir, "other-student", "answers.txt"), join(home, "work", "answers.txt"));
  const l = await listing(home);
  assert.deepEqual(
    l.files.map((f) => f.path),
    ["work/mine.txt"],
  );
  assert.deepEqual(l.folders, ["work"]);
  for (const path of ["passwd", "sibling", "work/answers.txt"]) {
    assert.match(reasonOf(l, path) ?? "listed", /symbolic link/, path);
  }
  assert.equal(l.bytes, 4);
});

test("a folder whose path goes through a symbolic link is refused, at any component", async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, "elsewhere", "hw1"), { recursive: true });
  await writeFile(join(dir, "elsewhere", "hw1", "secret.txt"), "collection");
  await mkdir(join(dir, "student"));
  // The student made their assignments folder a link to somewhere the copying pod can see.
  await symlink(join(dir, "elsewhere"), join(dir, "student", "assignments"));
  await assert.rejects(Tree.open(join(dir, "student", "assignments", "hw1")), (error: Error) => {
    assert.ok(error instanceof UnsafePathError, String(error));
    assert.match(error.message, /assignments" is a symbolic link/);
    return true;
  });
  await symlink(join(dir, "elsewhere", "hw1"), join(dir, "student", "hw2"));
  await assert.rejects(Tree.open(join(dir, "student", "hw2")), UnsafePathError);
});

test("a parent folder swapped for a link after the listing: the read never leaves the folder", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(join(home, "sub"), { recursive: true });
  await writeFile(join(home, "sub", "notes.txt"), "student's");
  await mkdir(join(dir, "outside"));
  await writeFile(join(dir, "outside", "notes.txt"), "SECRET of the platform");
  const tree = await Tree.open(home);
  t.after(() => tree.close());
  // A listing fooled by a swap during the walk would carry the outside file's identity: take it from
  // a walk of the outside folder, then swap the student's folder for a link to it.
  const outside = await listing(join(dir, "outside"));
  const fooled = { ...outside.files[0]!, path: "sub/notes.txt" };
  await rename(join(home, "sub"), join(home, "sub-away"));
  await symlink(join(dir, "outside"), join(home, "sub"));
  const opened = await tree.openFile(fooled);
  assert.ok("changed" in opened, "the file behind the link was opened");
  const { stream, result } = readListed(tree, fooled);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  assert.equal(Buffer.concat(chunks).length, 0);
  assert.match((await result).changed ?? "", /changed/);
});

test(
  "a FIFO is skipped without being opened, and one swapped in after the listing does not block",
  { timeout: 10_000 },
  async (t) => {
    const dir = await scratch(t);
    execFileSync("mkfifo", [join(dir, "pipe")]);
    await writeFile(join(dir, "later"), "a file for now");
    const tree = await Tree.open(dir);
    t.after(() => tree.close());
    const l = await tree.walk(DEFAULT_LIMITS);
    assert.match(reasonOf(l, "pipe") ?? "listed", /named pipe \(FIFO\)/);
    // Opening a FIFO for reading blocks until a writer comes: the open must be non-blocking.
    const later = l.files.find((f) => f.path === "later")!;
    await rename(join(dir, "later"), join(dir, "was-later"));
    execFileSync("mkfifo", [join(dir, "later")]);
    const opened = await tree.openFile(later);
    assert.ok("changed" in opened);
    assert.match(opened.changed, /named pipe/);
  },
);

test("a socket, a character device and names a zip cannot hold are skipped with the reason", async (t) => {
  const dir = await scratch(t);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(join(dir, "socket"), resolve));
  t.after(() => server.close());
  let device = true;
  try {
    // /dev/null's numbers; making a device needs CAP_MKNOD (root, as in CI).
    execFileSync("mknod", [join(dir, "null"), "c", "1", "3"], { stdio: "ignore" });
  } catch {
    device = false;
  }
  await writeFile(join(dir, "a\\b.txt"), "backslash");
  await writeFile(join(dir, "line\nbreak.txt"), "newline");
  // A name that is not UTF-8 (Latin-1 "é").
  await writeFile(Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xe9])]), "latin-1");
  await writeFile(join(dir, "fine.txt"), "fine");
  const l = await listing(dir);
  assert.deepEqual(
    l.files.map((f) => f.path),
    ["fine.txt"],
  );
  assert.match(reasonOf(l, "socket") ?? "listed", /a socket/);
  if (device) assert.match(reasonOf(l, "null") ?? "listed", /character device/);
  else t.diagnostic("mknod is not allowed here: the character device case was not run");
  assert.match(reasonOf(l, "a\\b.txt") ?? "listed", /backslash/);
  assert.match(reasonOf(l, "line\nbreak.txt") ?? "listed", /control character/);
  assert.match(l.skipped.find((s) => s.path.startsWith("caf"))?.reason ?? "listed", /not UTF-8/);
});

test("each limit stops the walk with a message that names it and its value", async (t) => {
  const dir = await scratch(t);
  await writeFile(join(dir, "small.txt"), "x".repeat(10));
  await writeFile(join(dir, "big.bin"), Buffer.alloc(2 * 1024 * 1024));
  const check = async (limits: Partial<Limits>, limit: keyof Limits, message: RegExp) => {
    await assert.rejects(listing(dir, { ...DEFAULT_LIMITS, ...limits }), (error: Error) => {
      assert.ok(error instanceof LimitError, String(error));
      assert.equal(error.limit, limit);
      assert.match(error.message, message);
      return true;
    });
  };
  await check(
    { maxBytes: 1024 * 1024 },
    "maxBytes",
    /Too much data: .*more than 1 MiB.*"big\.bin" \(2 MiB\)/,
  );
  for (let i = 0; i < 5; i++) await writeFile(join(dir, `f${i}`), "");
  await check(
    { maxFiles: 5 },
    "maxFiles",
    /Too many files: the folder holds more than 5 files and folders, and the limit is 5/,
  );
  await mkdir(join(dir, "a", "b", "c"), { recursive: true });
  await check({ maxDepth: 2 }, "maxDepth", /"a\/b\/c" lies more than 2 folders deep/);
  await writeFile(join(dir, "a", "b", "c", "long-name.txt"), "");
  await check({ maxPathLength: 12 }, "maxPathLength", /A name is too long: ".*" is 1[0-9] bytes long/);
  // Within every limit: listed.
  const l = await listing(dir);
  assert.equal(l.files.length, 8);
});

test("a file changed while it is read is reported: grown, shortened, rewritten in place", async (t) => {
  const dir = await scratch(t);
  const size = 1024 * 1024;
  for (const name of ["grows", "shrinks", "rewritten"])
    await writeFile(join(dir, name), Buffer.alloc(size, 1));
  await writeFile(join(dir, "steady"), Buffer.alloc(size, 2));
  // An old modification time: a write now changes it whatever the clock's granularity.
  await utimes(join(dir, "rewritten"), new Date("2000-01-01"), new Date("2000-01-01"));
  const tree = await Tree.open(dir);
  t.after(() => tree.close());
  const l = await tree.walk(DEFAULT_LIMITS);
  const change: Record<string, () => Promise<void>> = {
    grows: () => appendFile(join(dir, "grows"), "more"),
    shrinks: () => truncate(join(dir, "shrinks"), 1000),
    rewritten: async () => {
      // The same size, other bytes, written in place: only the times tell.
      const handle = await open(join(dir, "rewritten"), "r+");
      await handle.write(Buffer.alloc(10, 9), 0, 10, size - 10);
      await handle.close();
    },
    steady: async () => {},
  };
  const expected: Record<string, RegExp> = {
    grows: /^grew while/,
    shrinks: /^became shorter while it was being read \(\d+ of 1048576 bytes\)/,
    rewritten: /^changed while/,
  };
  for (const file of l.files) {
    const { stream, result } = readListed(tree, file);
    let bytes = 0;
    let changedYet = false;
    for await (const chunk of stream) {
      bytes += (chunk as Buffer).length;
      if (!changedYet) {
        changedYet = true;
        await change[file.path]!();
      }
    }
    const read = await result;
    assert.equal(read.bytes, bytes, file.path);
    assert.ok(read.bytes <= file.size, `${file.path}: never more than listed`);
    if (file.path === "steady") assert.equal(read.changed, undefined);
    else assert.match(read.changed ?? "not reported", expected[file.path]!, file.path);
  }
  // Changed between the listing and the read: the size no longer matches, nothing is read.
  await appendFile(join(dir, "steady"), "x");
  const steady = l.files.find((f) => f.path === "steady")!;
  assert.ok("changed" in (await tree.openFile(steady)));
  // Replaced by another file of the same size: another identity, nothing is read.
  await writeFile(join(dir, "other"), Buffer.alloc(size, 3));
  await rename(join(dir, "other"), join(dir, "rewritten"));
  assert.ok("changed" in (await tree.openFile(l.files.find((f) => f.path === "rewritten")!)));
});
