/** TypeScript file names in one style, camelCase (issue 25): `sessionRoutes.ts`, never `session-routes.ts`. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";

const CAMEL_CASE = /^[a-z][a-zA-Z0-9]*(\.[a-z]+)*\.ts$/;

test("every TypeScript file the repository tracks is named in camelCase", () => {
  const files = execFileSync("git", ["ls-files", "*.ts"], { cwd: repoRoot, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  assert.ok(files.length > 100, `git lists only ${files.length} TypeScript files`);
  const others = files.filter((f) => !CAMEL_CASE.test(f.slice(f.lastIndexOf("/") + 1)));
  assert.deepEqual(others, []);
  assert.equal(CAMEL_CASE.test("session-routes.ts"), false, "the rule refuses kebab-case");
});
