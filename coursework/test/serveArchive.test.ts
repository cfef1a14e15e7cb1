/** `copy.ts serve-archive`, run as an archive pod runs it: one caller, one transfer, then it ends. */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { request, type IncomingMessage } from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { extract, scratch, sha256sumOfFolder } from "../files/test/scratch.ts";

const program = fileURLToPath(new URL("../copy.ts", import.meta.url));

interface Served {
  port: number;
  token: string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** Starts the server on a free loopback port; resolves once it listens. */
async function serve(t: TestContext, from: string, extra: string[] = []): Promise<Served> {
  const token = randomBytes(32).toString("base64url");
  const hash = createHash("sha256").update(token).digest("hex");
  const child = spawn(
    process.execPath,
    [program, "serve-archive", from, "--host", "127.0.0.1", "--port", "0", "--token-sha256", hash, ...extra],
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

function get(port: number, options: { token?: string; method?: string; path?: string } = {}) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      method: options.method ?? "GET",
      path: options.path ?? "/archive.zip",
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
    });
    req.once("response", resolve).once("error", reject).end();
  });
}

async function body(response: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of response) text += (chunk as Buffer).toString();
  return text;
}

test("one GET with the right token streams the folder as a zip, then the program exits 0 with the summary", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(join(home, "week1"), { recursive: true });
  await writeFile(join(home, "week1", "answer.py"), "print(42)\n");
  await writeFile(join(home, "notes.md"), "# notes\n");
  // A hostile student's links and FIFO: never followed or opened, left out of the zip.
  await symlink("/etc/passwd", join(home, "passwd"));
  await symlink("..", join(home, "up"));
  execFileSync("mkfifo", [join(home, "pipe")]);
  const log = join(dir, "termination-log");
  await writeFile(log, "");
  const served = await serve(t, home, ["--termination-log", log]);

  for (const [options, status] of [
    [{}, 401],
    [{ token: "wrong" }, 401],
    [{ token: `${served.token}x` }, 401],
    [{ token: served.token, method: "POST" }, 405],
    [{ token: served.token, path: "/archive.zip/../etc" }, 404],
    [{ token: served.token, path: "/" }, 404],
  ] as const) {
    const response = await get(served.port, options);
    assert.equal(response.statusCode, status, JSON.stringify(options));
    await body(response);
  }

  const response = await get(served.port, { token: served.token });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers["content-type"], "application/zip");
  const zip = join(dir, "work.zip");
  await pipeline(response, createWriteStream(zip));
  const { code, stdout } = await served.exited;
  assert.equal(code, 0);
  extract(zip, join(dir, "out"));
  assert.equal(sha256sumOfFolder(join(dir, "out")), sha256sumOfFolder(join(home)));
  const listed = execFileSync("unzip", ["-Z1", zip], { encoding: "utf8" }).trim().split("\n").sort();
  assert.deepEqual(listed, ["notes.md", "week1/", "week1/answer.py"]);
  const summary = JSON.parse(stdout) as { sha256: string; skipped: { path: string }[] };
  assert.equal(summary.sha256, sha256sumOfFolder(join(dir, "out")));
  assert.deepEqual(summary.skipped.map((s) => s.path).sort(), ["passwd", "pipe", "up"]);
  assert.equal((JSON.parse(await readFile(log, "utf8")) as typeof summary).sha256, summary.sha256);
});

test("a second caller is refused while the first transfer runs, and the first gets the whole zip at its own pace", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  // Bigger than the socket buffers: the server must wait for the first caller to read.
  await writeFile(join(home, "data.bin"), randomBytes(16 * 1024 * 1024));
  const served = await serve(t, home, ["--store"]);
  const first = await get(served.port, { token: served.token });
  assert.equal(first.statusCode, 200);
  first.pause();
  const second = await get(served.port, { token: served.token });
  assert.equal(second.statusCode, 410);
  assert.match(await body(second), /served already/);
  const zip = join(dir, "work.zip");
  await pipeline(first, createWriteStream(zip));
  assert.equal((await served.exited).code, 0);
  extract(zip, join(dir, "out"));
  assert.equal(sha256sumOfFolder(join(dir, "out")), sha256sumOfFolder(home));
  await assert.rejects(get(served.port, { token: served.token }), /ECONNREFUSED/);
});

test("a caller that leaves mid-transfer makes it exit 1; a limit is a 413 with the student's message and exit 3", async (t) => {
  const dir = await scratch(t);
  const home = join(dir, "home");
  await mkdir(home);
  await writeFile(join(home, "data.bin"), randomBytes(16 * 1024 * 1024));
  const served = await serve(t, home, ["--store"]);
  const response = await get(served.port, { token: served.token });
  assert.equal(response.statusCode, 200);
  response.destroy();
  const left = await served.exited;
  assert.equal(left.code, 1);
  assert.match(left.stdout, /closed the connection before the end/);

  const limited = await serve(t, home, ["--max-bytes", "1MiB"]);
  const refused = await get(limited.port, { token: limited.token });
  assert.equal(refused.statusCode, 413);
  assert.match(await body(refused), /limit/i);
  assert.equal((await limited.exited).code, 3);

  const linked = join(dir, "linked");
  await symlink(home, linked);
  const behindLink = await serve(t, linked);
  const unsafe = await get(behindLink.port, { token: behindLink.token });
  assert.equal(unsafe.statusCode, 422);
  assert.match(await body(unsafe), /symbolic link/);
  assert.equal((await behindLink.exited).code, 4);
});

test("nobody fetching it within --wait exits 5; a missing or malformed token hash is a usage error", async (t) => {
  const dir = await scratch(t);
  const served = await serve(t, dir, ["--wait", "1"]);
  const { code, stdout } = await served.exited;
  assert.equal(code, 5);
  assert.match(stdout, /nobody fetched the archive within 1 s/);
  for (const args of [
    ["serve-archive", dir],
    ["serve-archive", dir, "--token-sha256", "abc"],
    ["archive", dir, "--port", "80"],
  ]) {
    const child = spawn(process.execPath, [program, ...args], { stdio: "ignore" });
    const [exit] = (await once(child, "exit")) as [number | null];
    assert.equal(exit, 2, args.join(" "));
  }
});
