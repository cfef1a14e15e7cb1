/** The copying pods' program, run as they run it: arguments, exit codes, stdout and the termination message. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { scratch, sha256sumOfFolder } from "../files/test/scratch.ts";

const program = fileURLToPath(new URL("../copy.ts", import.meta.url));

function run(...args: string[]) {
  return runAs([], args);
}

/** `prefix`: e.g. setpriv's arguments, to run as another user. */
function runAs(prefix: string[], args: string[]) {
  const [command, ...rest] = [...prefix, process.execPath, program, ...args];
  const result = spawnSync(command!, rest, { encoding: "buffer" });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr.toString() };
}

test("--help says what it does, its commands, limits and exit codes", () => {
  const { code, stdout } = run("--help");
  assert.equal(code, 0);
  const text = stdout.toString();
  for (const word of [
    "handin <from> <to>",
    "distribute <from> <to>",
    "archive <from>",
    "--max-bytes",
    "Exit codes",
    "symbolic link",
  ]) {
    assert.ok(text.includes(word), word);
  }
});

test("invalid arguments exit 2 with a message that says what is wrong", () => {
  const cases: [string[], RegExp][] = [
    [[], /name a command/],
    [["copy", "a", "b"], /unknown command "copy"/],
    [["handin", "a"], /handin takes two folders/],
    [["archive", "a", "b"], /archive takes one folder/],
    [["handin", "a", "b", "--max-files", "many"], /--max-files must be a positive whole number/],
    [["handin", "a", "b", "--max-bytes", "lots"], /--max-bytes: expected a size/],
    [["handin", "a", "b", "--store"], /--store applies to archive and serve-archive only/],
    [["handin", "a", "b", "--port", "80"], /--port applies to serve-archive and receive-upload only/],
    [["serve-archive", "a"], /serve-archive needs --token-sha256/],
    [["receive-upload", "a"], /receive-upload needs --token-sha256/],
    [["handin", "a", "b", "--student", "ann"], /--student applies to receive-upload and serve-archive only/],
    [["receive-upload", "a", "--store"], /--store applies to archive and serve-archive only/],
    [["handin", "a", "b", "--colour"], /Unknown option '--colour'/],
    [["handin", "a", "b", "--moment", "yesterday"], /--moment must be a time/],
    [["archive", "a", "--moment", "2026-12-07T09:00:00Z"], /--moment applies to handin only/],
  ];
  for (const [args, message] of cases) {
    const { code, stderr } = run(...args);
    assert.equal(code, 2, args.join(" "));
    assert.match(stderr, message, args.join(" "));
  }
});

test("handin prints the receipt and writes it, shortened to 4096 bytes, to the termination log", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  for (let i = 0; i < 200; i++)
    await writeFile(join(home, `exercise-${String(i).padStart(3, "0")}.py`), `print(${i})\n`);
  await symlink("/etc/passwd", join(home, "passwd"));
  const log = join(dir, "termination-log");
  await writeFile(log, "");
  const { code, stdout } = run("handin", home, join(dir, "copy"), "--termination-log", log);
  assert.equal(code, 0);
  const receipt = JSON.parse(stdout.toString()) as { files: unknown[]; sha256: string; skipped: unknown[] };
  assert.equal(receipt.files.length, 200);
  assert.equal(receipt.sha256, sha256sumOfFolder(join(dir, "copy")));
  const message = await readFile(log);
  assert.ok(message.length <= 4096, `${message.length} bytes`);
  const short = JSON.parse(message.toString()) as typeof receipt & { omitted: { files: number } };
  assert.equal(short.sha256, receipt.sha256);
  assert.equal(short.files.length + short.omitted.files, 200);
  assert.equal(short.skipped.length, 1);
});

test("handin leaves out the platform's own manifest of a distributed folder: the receipt is the student's work alone", async (t) => {
  const dir = await scratch(t);
  const materials = join(dir, "materials");
  const home = join(dir, "home");
  await mkdir(materials);
  await writeFile(join(materials, "task.py"), "# write your answer here\n");
  const distributed = run("distribute", materials, home);
  assert.equal(distributed.code, 0, distributed.stderr);
  assert.ok(
    existsSync(join(home, ".userland-assignment.json")),
    "distribution keeps its manifest in the folder",
  );
  await writeFile(join(home, "answer.py"), "print(42)\n");
  const { code, stdout, stderr } = run("handin", home, join(dir, "copy"));
  assert.equal(code, 0, stderr);
  const receipt = JSON.parse(stdout.toString()) as { files: { path: string }[]; skipped: unknown[] };
  assert.deepEqual(
    receipt.files.map((f) => f.path),
    ["answer.py", "task.py"],
  );
  assert.deepEqual(receipt.skipped, []);
  assert.deepEqual((await readdir(join(dir, "copy"))).sort(), ["answer.py", "task.py"]);
});

test("handin --moment: echoed back; a moment in whole seconds stands for its whole second", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  await writeFile(join(home, "a.py"), "print(1)\n");
  // Written in the second the moment names (as the request's time, truncated, would say it).
  const second = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const whole = run("handin", home, join(dir, "copy-1"), "--moment", second);
  assert.equal(whole.code, 0, whole.stderr.toString());
  const one = JSON.parse(whole.stdout.toString()) as {
    moment: string;
    writtenAfter: string[];
    startedAt: string;
  };
  assert.equal(one.moment, second);
  assert.deepEqual(one.writtenAfter, [], "a change in the moment's own second is not after it");
  assert.match(one.startedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const earlier = run("handin", home, join(dir, "copy-2"), "--moment", "2020-01-01T00:00:00.000Z");
  assert.deepEqual((JSON.parse(earlier.stdout.toString()) as typeof one).writtenAfter, ["a.py"]);
});

test("write-file: folders made, the file replaced by a rename (a planted link replaced, not followed), a linked folder refused", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "home", "assignments", "calc", "feedback", "grade.md");
  const first = run("write-file", target, "--text", "# Calculator\nScore: 7 of 8\n");
  assert.equal(first.code, 0, first.stderr.toString());
  assert.equal(await readFile(target, "utf8"), "# Calculator\nScore: 7 of 8\n");
  const result = JSON.parse(first.stdout.toString()) as { bytes: number; sha256: string };
  assert.equal(result.bytes, 27);
  assert.equal(result.sha256, createHash("sha256").update("# Calculator\nScore: 7 of 8\n").digest("hex"));
  // The student plants a link at the name, to a file of the teacher's: the link goes, the file stays.
  await writeFile(join(dir, "outside.txt"), "not yours");
  await rm(target);
  await symlink(join(dir, "outside.txt"), target);
  assert.equal(run("write-file", target, "--text", "Score: 8 of 8\n").code, 0);
  assert.equal(await readFile(join(dir, "outside.txt"), "utf8"), "not yours");
  assert.equal((await lstat(target)).isSymbolicLink(), false);
  assert.equal(await readFile(target, "utf8"), "Score: 8 of 8\n");
  // A link among the folders: refused (4), nothing written where it points.
  await mkdir(join(dir, "elsewhere"));
  await symlink(join(dir, "elsewhere"), join(dir, "home", "linked"));
  assert.equal(run("write-file", join(dir, "home", "linked", "grade.md"), "--text", "x").code, 4);
  assert.deepEqual(await readdir(join(dir, "elsewhere")), []);
  assert.equal(run("write-file", target).code, 2, "write-file needs --text");
});

test("a limit exits 3 and a linked folder 4, each with a JSON error in the termination log", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  await writeFile(join(home, "big.bin"), Buffer.alloc(3 * 1024 * 1024));
  const log = join(dir, "termination-log");
  await writeFile(log, "");
  const over = run("handin", home, join(dir, "copy"), "--max-bytes", "2MiB", "--termination-log", log);
  assert.equal(over.code, 3);
  assert.match(over.stderr, /Too much data: the files add up to more than 2 MiB/);
  const error = JSON.parse(await readFile(log, "utf8")) as {
    error: { kind: string; limit: string; value: number };
  };
  assert.deepEqual(
    [error.error.kind, error.error.limit, error.error.value],
    ["limit", "maxBytes", 2 * 1024 * 1024],
  );
  await symlink(home, join(dir, "linked"));
  const linked = run("distribute", home, join(dir, "linked", "hw1"), "--termination-log", log);
  assert.equal(linked.code, 4);
  assert.match(linked.stderr, /is a symbolic link/);
  assert.equal((JSON.parse(await readFile(log, "utf8")) as typeof error).error.kind, "refused");
  const taken = run("handin", home, join(dir, "linked"));
  assert.equal(taken.code, 4);
  assert.match(taken.stderr, /exists already/);
});

test("archive writes the zip to stdout and its summary to stderr", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  await writeFile(join(home, "a.txt"), "hello");
  const { code, stdout, stderr } = run("archive", home, "--store");
  assert.equal(code, 0);
  assert.equal(stdout.subarray(0, 4).toString("latin1"), "PK\x03\x04");
  assert.ok(stdout.includes(Buffer.from("hello")), "stored, not deflated");
  const summary = JSON.parse(stderr) as { files: { path: string }[] };
  assert.deepEqual(
    summary.files.map((f) => f.path),
    ["a.txt"],
  );
});

test("files and folders the copier may not read are skipped with the reason, as a non-root pod runs", async (t) => {
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/setpriv")) {
    t.skip("needs root and setpriv to run the copier as another user");
    return;
  }
  const dir = await scratch(t);
  await chmod(dir, 0o777);
  const home = join(dir, "home");
  await mkdir(join(home, "closed"), { recursive: true });
  await mkdir(join(home, "unsearchable"));
  await writeFile(join(home, "closed", "inside.txt"), "x");
  await writeFile(join(home, "unsearchable", "inside.txt"), "x");
  await writeFile(join(home, "private.txt"), "x");
  await writeFile(join(home, "public.txt"), "public");
  await chmod(join(home, "closed"), 0o000);
  await chmod(join(home, "unsearchable"), 0o744);
  await chmod(join(home, "private.txt"), 0o600);
  const nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
  const { code, stdout, stderr } = runAs(nobody, ["handin", home, join(dir, "copy")]);
  assert.equal(code, 0, stderr);
  const receipt = JSON.parse(stdout.toString()) as {
    files: { path: string }[];
    skipped: { path: string; reason: string }[];
  };
  assert.deepEqual(
    receipt.files.map((f) => f.path),
    ["public.txt"],
  );
  const reasons = Object.fromEntries(receipt.skipped.map((s) => [s.path, s.reason]));
  for (const path of ["closed", "unsearchable/inside.txt", "private.txt"]) {
    assert.match(reasons[path] ?? "not skipped", /could not be read \(no permission/, path);
  }
  assert.deepEqual(await readdir(join(dir, "copy")), ["public.txt", "unsearchable"]);
});
