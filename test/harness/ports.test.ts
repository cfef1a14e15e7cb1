/**
 * Ports without races (cluster/ports.ts, lib/listen.ts): held ports never come from the kernel's
 * range for outgoing connections nor from another live run, and a component serves on the socket
 * the harness passed to it rather than binding one of its own.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import {
  ephemeralRange,
  heldPort,
  listeningSocket,
  portLockDir,
  portOf,
  socketsFor,
} from "../../cluster/ports.ts";
import { generateSigningKey } from "../../lib/session.ts";

/** A pid that is certainly dead: a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid ?? 0;
}

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(false)));
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });

test("held ports are outside the kernel's ephemeral range, and nobody listens on them", async () => {
  const { first, last } = ephemeralRange();
  const held = await Promise.all(Array.from({ length: 30 }, () => heldPort()));
  try {
    for (const { port } of held) {
      assert.ok(port < first || port > last, `${port} is in the ephemeral range ${first}-${last}`);
      assert.ok(await refused(port), `something listens on ${port}`);
    }
    assert.equal(new Set(held.map((h) => h.port)).size, held.length, "each port once");
  } finally {
    for (const h of held) h.release();
  }
});

test("a port locked by a live process or bound by anyone is skipped; a dead owner's lock is taken over", async (t) => {
  // A range of three ports that nobody else holds now.
  const probe = await heldPort(3);
  probe.release();
  const [a, b, c] = [probe.port, probe.port + 1, probe.port + 2];
  const range = { low: a, high: c };
  const lockFile = (port: number) => join(portLockDir(), `${port}.lock`);
  // a: locked by a live process (the test runner, our parent); b: bound, with no lock.
  writeFileSync(lockFile(a), `${process.ppid}\n`, { flag: "wx" });
  t.after(() => rmSync(lockFile(a), { force: true }));
  const bound = await listeningSocket(b);
  t.after(() => bound.close());

  const got = await heldPort(1, range);
  assert.equal(got.port, c, "neither the locked nor the bound port");
  assert.equal(readFileSync(lockFile(c), "utf8").trim(), String(process.pid), "the lock names its owner");
  await assert.rejects(heldPort(1, range), /no free port/, "the third is held now");
  got.release();
  assert.throws(() => readFileSync(lockFile(c)), /ENOENT/, "released: the lock file is gone");

  // The owner of a's lock dies (its pid is now a dead one): the lock is taken over.
  writeFileSync(lockFile(a), `${await deadPid()}\n`);
  const again = await heldPort(1, { low: a, high: a });
  assert.equal(again.port, a);
  again.release();
});

test("a component serves on the sockets passed to it (LISTEN_FDS), not on its port settings", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "userland-ports-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const keysFile = join(dir, "keys.json");
  writeFileSync(keysFile, JSON.stringify({ keys: [await generateSigningKey()] }), { mode: 0o600 });
  // The settings name a port nobody listens on: the component must not use it.
  const unused = await heldPort();
  t.after(() => unused.release());

  const sockets = { AUTH_PORT: await listeningSocket(), AUTH_ADMIN_PORT: await listeningSocket() };
  const [port, adminPort] = [portOf(sockets.AUTH_PORT), portOf(sockets.AUTH_ADMIN_PORT)];
  const passed = socketsFor(sockets);
  const child = spawn(process.execPath, [join(repoRoot, "services", "auth", "main.ts")], {
    cwd: repoRoot,
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      AUTH_HOST: "127.0.0.1",
      AUTH_PORT: String(unused.port),
      AUTH_ADMIN_HOST: "127.0.0.1",
      AUTH_ADMIN_PORT: "0",
      AUTH_PUBLIC_URL: `http://127.0.0.1:${port}/`,
      AUTH_COOKIE_SECURE: "false",
      AUTH_SESSION_KEYS_FILE: keysFile,
      AUTH_GITHUB_CLIENT_ID: "ports-test",
      AUTH_GITHUB_CLIENT_SECRET: "ports-test",
      ...passed.env,
    },
    stdio: ["ignore", "inherit", "inherit", ...passed.fds],
  });
  passed.close();
  t.after(() => child.kill());

  // The sockets were listening before the child started: the first request waits in their backlog.
  const get = (url: string) => fetch(url, { signal: AbortSignal.timeout(20_000) });
  assert.equal((await get(`http://127.0.0.1:${port}/healthz`)).status, 200, "the public port");
  const metrics = await get(`http://127.0.0.1:${adminPort}/metrics`);
  assert.equal(metrics.status, 200, "the admin port");
  assert.match(await metrics.text(), /process_cpu_seconds_total/);
  assert.ok(await refused(unused.port), "AUTH_PORT's own port is not bound");
});
