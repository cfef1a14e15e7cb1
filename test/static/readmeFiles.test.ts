/**
 * Each component's README lists its program files (issue 25): every non-test `.ts` file of
 * `operator/` and `services/<name>/` is named in that folder's README.md by its path inside the
 * component, in backticks (`main.ts`, `route/router.ts`), so a new or moved file cannot leave the
 * list behind.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { programFiles } from "../../scripts/importGraph.ts";

/** The folders with a README of their own that lists their files. */
function components(): string[] {
  const services = readdirSync(join(repoRoot, "services"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `services/${entry.name}`);
  return ["operator", ...services];
}

/** The program files of `component` that its README does not name, as `component: file`. */
export function unlisted(component: string, files: readonly string[], readme: string): string[] {
  const named = new Set([...readme.matchAll(/`([^`\s]+\.ts)`/g)].map((m) => m[1]));
  return files
    .filter((file) => file.startsWith(`${component}/`))
    .map((file) => file.slice(component.length + 1))
    .filter((file) => !named.has(file))
    .map((file) => `${component}: ${file}`);
}

test("the check finds a file its README does not name", () => {
  const files = ["services/x/main.ts", "services/x/route/router.ts", "services/y/main.ts"];
  assert.deepEqual(unlisted("services/x", files, "| `main.ts` | entry |\n`router.ts`"), [
    "services/x: route/router.ts",
  ]);
  assert.deepEqual(unlisted("services/x", files, "`main.ts`, `route/router.ts`"), []);
});

test("every component README names each of its program files", () => {
  const files = programFiles();
  const missing: string[] = [];
  for (const component of components()) {
    const readmePath = join(repoRoot, component, "README.md");
    assert.ok(existsSync(readmePath), `${component} has no README.md`);
    missing.push(...unlisted(component, files, readFileSync(readmePath, "utf8")));
  }
  assert.deepEqual(missing, [], "files to add to their component's README.md (`path` in backticks)");
});
