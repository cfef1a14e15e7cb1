/** Type-check, lint, format and unused-code checks run with every test run, so CI enforces them. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/controlPlane.ts";

const bin = (name: string) => join(repoRoot, "node_modules", ".bin", name);
const run = (command: string, args: string[]) => {
  const result = spawnSync(bin(command), args, { cwd: repoRoot, encoding: "utf8" });
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.slice(-6000) };
};

test("TypeScript strict type-check passes (tsc)", () => {
  const { ok, output } = run("tsc", ["-p", "tsconfig.json"]);
  assert.ok(ok, output);
});

test("ESLint passes", () => {
  const { ok, output } = run("eslint", ["."]);
  assert.ok(ok, output);
});

test("Prettier formatting is applied", () => {
  const { ok, output } = run("prettier", ["--check", "."]);
  assert.ok(ok, output);
});

test("knip finds no unused files, exports or dependencies", () => {
  const { ok, output } = run("knip", []);
  assert.ok(ok, output);
});

test("actionlint finds nothing wrong in .github/workflows", () => {
  // cluster/build.sh prints its cached tools directory (built from cluster/tools/actionlint/go.mod).
  const tools = spawnSync("bash", [join(repoRoot, "cluster", "build.sh")], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  assert.equal(tools.status, 0, tools.stderr.slice(-3000));
  const result = spawnSync(join(tools.stdout.trim(), "actionlint"), ["-no-color"], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
});
