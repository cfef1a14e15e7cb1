/**
 * Every path a document names exists (issue 40): a file moved or renamed (test/esc/*.test.ts became
 * *.alone.ts) left decisions and guides citing files that were gone. A path is a backticked word
 * that starts with one of the repository's tracked top folders (`operator/controller.ts`,
 * `test/node/*.test.ts`, where a pattern must match a file), or a relative Markdown link; each is
 * looked up from the repository's root and from the document's own folder.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, globSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";

/** The paths `markdown` names: backticked repository paths and relative link targets. */
export function namedPaths(markdown: string, topFolders: ReadonlySet<string>): string[] {
  const paths: string[] = [];
  for (const [, word = ""] of markdown.matchAll(/`([^`\s]+)`/g)) {
    // A line or an anchor after the path (`a.ts:12`, `b.md#why`) and closing punctuation are not the path.
    const path = word.replace(/[:#].*$/, "").replace(/[),.;]+$/, "");
    if (!/^[\w.-]+(\/[\w.*-]+)+\/?$/.test(path)) continue;
    if (topFolders.has(path.split("/")[0] ?? "")) paths.push(path);
  }
  for (const [, target = ""] of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const path = target.replace(/#.*$/, "");
    if (path && !/^[a-z]+:/i.test(path) && /^[\w./-]+$/.test(path)) paths.push(path);
  }
  return paths;
}

/** Whether `path`, named in the document `doc`, names something in the tree at `root`. */
export function exists(root: string, doc: string, path: string): boolean {
  const bases = [root, join(root, dirname(doc))];
  if (path.includes("*")) return bases.some((base) => globSync(path, { cwd: base }).length > 0);
  return bases.some((base) => existsSync(normalize(join(base, path))));
}

test("the check finds a path that is gone, and passes what is there", () => {
  const tops = new Set(["test", "docs"]);
  const doc =
    "see `test/static/docPaths.test.ts:10`, `test/esc/userland.test.ts`, `test/static/*.test.ts`, `test/none/*.ts`, [0001](decisions/0001-layout-and-toolchain.md), [web](https://example.org/a), `npm test`";
  const paths = namedPaths(doc, tops);
  assert.deepEqual(paths, [
    "test/static/docPaths.test.ts",
    "test/esc/userland.test.ts",
    "test/static/*.test.ts",
    "test/none/*.ts",
    "decisions/0001-layout-and-toolchain.md",
  ]);
  assert.deepEqual(
    paths.filter((p) => !exists(repoRoot, "docs/testing.md", p)),
    ["test/esc/userland.test.ts", "test/none/*.ts"],
  );
});

test("every path the documents name exists", () => {
  const docs = execFileSync("git", ["ls-files", "*.md"], { cwd: repoRoot, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  // The tracked folders only: a run's own outputs (.userland/, artifacts/) exist once something ran,
  // and a fresh clone has none of them.
  const tracked = execFileSync("git", ["ls-files"], { cwd: repoRoot, encoding: "utf8" }).split("\n");
  const topFolders = new Set(tracked.filter((f) => f.includes("/")).map((f) => f.slice(0, f.indexOf("/"))));
  assert.ok(docs.length > 10, `git lists only ${docs.length} Markdown files`);
  const missing = docs.flatMap((doc) =>
    namedPaths(readFileSync(join(repoRoot, doc), "utf8"), topFolders)
      .filter((path) => !exists(repoRoot, doc, path))
      .map((path) => `${doc}: ${path}`),
  );
  assert.deepEqual(missing, [], "paths the documents name that do not exist");
});
