/**
 * Type-check, lint, format and unused-code checks run with every test run, so CI enforces them.
 *
 * They run side by side (each is a process of its own). tsc and Prettier keep what they learnt
 * under .userland/checks, so a run after a run checks again only what changed: tsc's incremental
 * build info records every file's hash and what depends on it, and Prettier's cache holds each
 * file's content hash with Prettier's version and options; both give the result a full check gives.
 * ESLint keeps no cache: its typed rules read other files' types, which its cache does not follow.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { suite, test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";

const bin = (name: string) => join(repoRoot, "node_modules", ".bin", name);
const caches = join(repoRoot, ".userland", "checks");
mkdirSync(caches, { recursive: true });

const run = (command: string, args: string[]): Promise<{ ok: boolean; stdout: string; output: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) =>
      resolve({ ok: code === 0, stdout, output: `${stdout}${stderr}`.slice(-6000) }),
    );
  });

suite("static checks", { concurrency: true }, () => {
  test("TypeScript strict type-check passes (tsc)", async () => {
    const { ok, output } = await run(bin("tsc"), [
      "-p",
      "tsconfig.json",
      "--incremental",
      "--tsBuildInfoFile",
      join(caches, "tsconfig.tsbuildinfo"),
    ]);
    assert.ok(ok, output);
  });

  test("ESLint passes", async () => {
    const { ok, output } = await run(bin("eslint"), ["."]);
    assert.ok(ok, output);
  });

  test("Prettier formatting is applied", async () => {
    const { ok, output } = await run(bin("prettier"), [
      "--check",
      "--cache",
      "--cache-strategy",
      "content",
      "--cache-location",
      join(caches, "prettier-cache"),
      ".",
    ]);
    assert.ok(ok, output);
  });

  test("knip finds no unused files, exports or dependencies", async () => {
    const { ok, output } = await run(bin("knip"), []);
    assert.ok(ok, output);
  });

  test("actionlint finds nothing wrong in .github/workflows", async () => {
    // cluster/build.sh prints its cached tools directory (actionlint pinned in cluster/tools/go.mod).
    const tools = await run("bash", [join(repoRoot, "cluster", "build.sh")]);
    assert.ok(tools.ok, tools.output.slice(-3000));
    const result = await run(join(tools.stdout.trim(), "actionlint"), ["-no-color"]);
    assert.ok(result.ok, result.output);
  });
});
