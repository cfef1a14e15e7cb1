/**
 * `copy.ts receive-upload`, run as an upload pod runs it: one caller sends files and zips, commits,
 * and the program ends. The hostile cases (docs/security.md, "Uploads") each end the upload with
 * nothing written: names that escape, links in a zip or in the target, limits.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { collectionUserFolder } from "../../api/naming.ts";
import { scratch, sha256sumOfFolder } from "../files/test/scratch.ts";

const program = fileURLToPath(new URL("../copy.ts", import.meta.url));

interface Receiver {
  port: number;
  token: string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

async function receive(t: TestContext, into: string, extra: string[] = []): Promise<Receiver> {
  const token = randomBytes(32).toString("base64url");
  const hash = createHash("sha256").update(token).digest("hex");
  const child = spawn(
    process.execPath,
    [program, "receive-upload", into, "--host", "127.0.0.1", "--port", "0", "--token-sha256", hash, ...extra],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = once(child, "exit").then(([code]) => ({ code: code as number | null, stdout, stderr }));
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (\d+)/.exec(stderr);
      if (match) resolve(Number(match[1]));
    });
    void exited.then(({ code }) => reject(new Error(`exited ${code} before listening: ${stderr}`)));
  });
  return { port, token, exited };
}

async function send(
  r: Receiver,
  method: string,
  path: string,
  body?: Buffer | string,
  token = r.token,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port: r.port,
      method,
      path,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    req.once("response", (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => (text += chunk.toString()));
      response.once("end", () =>
        resolve({ status: response.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> }),
      );
    });
    req.once("error", reject);
    req.end(body);
  });
}

/** A zip written by Python's zipfile, which (unlike yazl) stores any name and any Unix mode. */
function pythonZip(path: string, entries: { name: string; data?: string; mode?: number }[]): Buffer {
  execFileSync("python3", [
    "-c",
    `import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for e in json.loads(sys.argv[2]):
        info = zipfile.ZipInfo(e["name"])
        if "mode" in e:
            info.create_system = 3
            info.external_attr = e["mode"] << 16
        z.writestr(info, e.get("data", ""))`,
    path,
    JSON.stringify(entries),
  ]);
  return execFileSync("cat", [path]);
}

/** Every entry of a folder, recursively, as sorted relative paths (folders end in "/"). */
async function listing(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory()) out.push(`${path}/`, ...(await listing(dir, `${path}/`)));
    else out.push(path);
  }
  return out.sort();
}

test("files and a zip sent one by one land in the folder on commit, replacing files of the same path and deleting nothing", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "course", "week1");
  await mkdir(join(target, "data"), { recursive: true });
  await writeFile(join(target, "README.md"), "old\n");
  await writeFile(join(target, "keep.txt"), "kept\n");
  const zip = join(dir, "m.zip");
  execFileSync(
    "bash",
    [
      "-c",
      `mkdir -p z/data && echo a,b > z/data/table.csv && echo nb > z/lab.ipynb && cd z && zip -qr ${zip} .`,
    ],
    { cwd: dir },
  );
  const log = join(dir, "termination-log");
  await writeFile(log, "");
  const r = await receive(t, target, ["--termination-log", log]);

  for (const [method, path, status] of [
    ["PUT", "/file?path=x", 401],
    ["GET", "/file", 405],
    ["PUT", "/elsewhere", 404],
  ] as const)
    assert.equal((await send(r, method, path, "", status === 401 ? "wrong" : r.token)).status, status);
  assert.equal((await send(r, "PUT", "/file?path=README.md", "# Week 1\n")).status, 200);
  assert.equal((await send(r, "PUT", "/file?path=starter%2Fmain.py", "print(1)\n")).status, 200);
  assert.deepEqual((await send(r, "PUT", "/zip", await readFile(zip))).json, { files: 2 });
  const commit = await send(r, "POST", "/commit");
  assert.equal(commit.status, 200);
  const { code, stdout } = await r.exited;
  assert.equal(code, 0);
  assert.deepEqual(await listing(target), [
    "README.md",
    "data/",
    "data/table.csv",
    "keep.txt",
    "lab.ipynb",
    "starter/",
    "starter/main.py",
  ]);
  assert.equal(await readFile(join(target, "README.md"), "utf8"), "# Week 1\n");
  assert.equal(await readFile(join(target, "keep.txt"), "utf8"), "kept\n");
  const summary = JSON.parse(stdout) as { files: number; sha256: string };
  assert.equal(summary.files, 4);
  assert.deepEqual(commit.json, summary);
  // The manifest hash of the four uploaded files, as coreutils computes it.
  const check = join(dir, "check");
  await mkdir(join(check, "starter"), { recursive: true });
  await mkdir(join(check, "data"), { recursive: true });
  await writeFile(join(check, "README.md"), "# Week 1\n");
  await writeFile(join(check, "starter", "main.py"), "print(1)\n");
  await writeFile(join(check, "data", "table.csv"), "a,b\n");
  await writeFile(join(check, "lab.ipynb"), "nb\n");
  assert.equal(summary.sha256, sha256sumOfFolder(check));
  assert.equal((JSON.parse(await readFile(log, "utf8")) as typeof summary).sha256, summary.sha256);
});

/** Each hostile upload is refused with its message, and the folder is as it was (no staging left). */
const hostile: {
  name: string;
  send: (r: Receiver, dir: string) => Promise<{ status: number; json: Record<string, unknown> }>;
  status: number;
  message: RegExp;
  exit: number;
  args?: string[];
  prepare?: (target: string, dir: string) => Promise<void>;
}[] = [
  {
    name: "a file named ../escape",
    send: (r) => send(r, "PUT", `/file?path=${encodeURIComponent("../escape")}`, "x"),
    status: 422,
    message: /refused the entry name "..\/escape"/,
    exit: 4,
  },
  {
    name: "an absolute file name",
    send: (r) => send(r, "PUT", `/file?path=${encodeURIComponent("/tmp/abs")}`, "x"),
    status: 422,
    message: /an absolute path/,
    exit: 4,
  },
  {
    name: "a zip entry ../escape",
    send: (r, dir) =>
      send(r, "PUT", "/zip", pythonZip(join(dir, "h.zip"), [{ name: "../escape", data: "x" }])),
    status: 422,
    message: /escape/,
    exit: 4,
  },
  {
    name: "a zip entry with a backslash",
    send: (r, dir) =>
      send(r, "PUT", "/zip", pythonZip(join(dir, "h.zip"), [{ name: "a\\b.txt", data: "x" }])),
    status: 422,
    message: /backslash|invalid characters/,
    exit: 4,
  },
  {
    name: "a symbolic link in a zip",
    send: (r, dir) =>
      send(
        r,
        "PUT",
        "/zip",
        pythonZip(join(dir, "h.zip"), [{ name: "passwd", data: "/etc/passwd", mode: 0o120777 }]),
      ),
    status: 422,
    message: /"passwd" is a symbolic link/,
    exit: 4,
  },
  {
    name: "a FIFO in a zip",
    send: (r, dir) =>
      send(r, "PUT", "/zip", pythonZip(join(dir, "h.zip"), [{ name: "pipe", mode: 0o010644 }])),
    status: 422,
    message: /named pipe/,
    exit: 4,
  },
  {
    name: "a file that is no zip",
    send: (r) => send(r, "PUT", "/zip", "not a zip at all"),
    status: 422,
    message: /the zip cannot be read/,
    exit: 4,
  },
  {
    name: "more bytes than the limit, in one file",
    send: (r) => send(r, "PUT", "/file?path=big.bin", randomBytes(3 * 1024 * 1024)),
    status: 413,
    message: /Too much data: the files add up to more than 1 MiB/,
    exit: 3,
    args: ["--max-bytes", "1MiB"],
  },
  {
    name: "a zip whose entries declare more than the limit (a zip bomb)",
    send: (r, dir) =>
      send(
        r,
        "PUT",
        "/zip",
        (execFileSync("bash", ["-c", `head -c 8388608 /dev/zero > b.bin && zip -q bomb.zip b.bin`], {
          cwd: dir,
        }),
        execFileSync("cat", [join(dir, "bomb.zip")])),
      ),
    status: 413,
    message: /Too much data/,
    exit: 3,
    args: ["--max-bytes", "1MiB"],
  },
  {
    name: "more files than the limit, in a zip",
    send: (r, dir) =>
      send(
        r,
        "PUT",
        "/zip",
        pythonZip(
          join(dir, "h.zip"),
          ["a", "b", "c", "d"].map((name) => ({ name, data: name })),
        ),
      ),
    status: 413,
    message: /Too many files/,
    exit: 3,
    args: ["--max-files", "3"],
  },
  {
    name: "a file whose folder in the target is a symbolic link out of it",
    prepare: async (target, dir) => {
      await mkdir(join(dir, "outside"));
      await symlink(join(dir, "outside"), join(target, "linked"));
    },
    send: async (r) => {
      assert.equal((await send(r, "PUT", "/file?path=linked%2Fplanted.txt", "x")).status, 200);
      return send(r, "POST", "/commit");
    },
    status: 422,
    message: /"linked" is a symbolic link/,
    exit: 4,
  },
];

for (const h of hostile) {
  test(`refused: ${h.name}`, async (t) => {
    const dir = await scratch(t);
    const target = join(dir, "target");
    await mkdir(target);
    await writeFile(join(target, "before.txt"), "before\n");
    await h.prepare?.(target, dir);
    const before = await listing(target);
    const r = await receive(t, target, h.args);
    const answer = await h.send(r, dir);
    assert.equal(answer.status, h.status, JSON.stringify(answer.json));
    assert.match(String(answer.json.error), h.message);
    assert.equal((await r.exited).code, h.exit);
    assert.deepEqual(await listing(target), before);
    assert.equal(existsSync(join(dir, "escape")), false);
    assert.equal(existsSync(join(dir, "outside", "planted.txt")), false);
  });
}

test("feedback laid out by student: folders named by identity or collection folder land in that student's folder; others are reported, not written", async (t) => {
  const dir = await scratch(t);
  const target = join(dir, "feedback", "a1");
  await mkdir(target, { recursive: true });
  const zip = join(dir, "fb.zip");
  const ada = collectionUserFolder("ada@uni.example");
  pythonZip(zip, [
    { name: "ada@uni.example/notes.md", data: "good\n" },
    { name: `${ada}/marks.csv`, data: "10\n" },
    { name: "Bob/notes.md", data: "ok\n" },
    { name: "mallory/notes.md", data: "?\n" },
    { name: "loose.txt", data: "?\n" },
  ]);
  const r = await receive(t, target, ["--student", "ada@uni.example", "--student", "Bob"]);
  assert.equal((await send(r, "PUT", "/zip", await readFile(zip))).status, 200);
  const commit = await send(r, "POST", "/commit");
  assert.equal(commit.status, 200);
  assert.equal((await r.exited).code, 0);
  const bob = collectionUserFolder("Bob");
  assert.deepEqual(await listing(target), [
    `${ada}/`,
    `${ada}/marks.csv`,
    `${ada}/notes.md`,
    `${bob}/`,
    `${bob}/notes.md`,
  ]);
  assert.deepEqual(commit.json.students, [
    { name: ada, folder: ada, files: 1 },
    { name: "ada@uni.example", folder: ada, files: 1 },
    { name: "Bob", folder: bob, files: 1 },
  ]);
  assert.deepEqual(commit.json.unknown, [
    { name: "loose.txt", files: 1 },
    { name: "mallory/", files: 1 },
  ]);
});
