/**
 * The drawing of the program's imports (files as boxes, imports as arrows, type-only imports
 * included) has no loop, and `api/` imports nothing of the project outside itself: the bottom floor
 * stands on nothing (docs/decisions/0007-one-home-per-concept.md). Test files and test folders are
 * not part of the program; eslint keeps the program from importing them.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";

const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", ".userland", "test"]);

/** The program's TypeScript files, relative to the repository. */
function programFiles(dir = repoRoot): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) files.push(...programFiles(join(dir, entry.name)));
    } else if (entry.name.endsWith(".ts") && !/\.(test|alone)\.ts$/.test(entry.name)) {
      files.push(relative(repoRoot, join(dir, entry.name)));
    }
  }
  return files;
}

/** Each file's relative imports and re-exports that name another program file. */
export function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  const specifier = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"/g;
  for (const file of files) {
    const targets = [...read(file).matchAll(specifier)]
      .map((m) => normalize(join(dirname(file), m[1] ?? "")))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The loops of `graph`: its strongly connected components of more than one file (Tarjan). */
export function loops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    for (;;) {
      const member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

test("the reader of loops finds one, and none where the arrows all point down", () => {
  const files = ["a.ts", "b.ts", "c.ts", "d.ts"];
  const sources: Record<string, string> = {
    "a.ts": 'import { b } from "./b.ts";',
    "b.ts": 'import type { C } from "./c.ts";',
    "c.ts": 'export { a } from "./a.ts";\nimport { d } from "./d.ts";',
    "d.ts": 'import { readFile } from "node:fs";',
  };
  const graph = importGraph(files, (f) => sources[f] ?? "");
  assert.deepEqual(loops(graph), [["a.ts", "b.ts", "c.ts"]]);
  sources["c.ts"] = 'import { d } from "./d.ts";';
  assert.deepEqual(loops(importGraph(files, (f) => sources[f] ?? "")), []);
});

test("the program's imports have no loop, and api/ imports nothing outside api/", () => {
  const files = programFiles();
  assert.ok(files.length > 100, `found only ${files.length} program files`);
  const graph = importGraph(files, (f) => readFileSync(join(repoRoot, f), "utf8"));
  assert.deepEqual(loops(graph), [], "files that import each other, directly or around a loop");
  const apiImports = [...graph]
    .filter(([file]) => file.startsWith("api/"))
    .flatMap(([file, targets]) => targets.filter((t) => !t.startsWith("api/")).map((t) => `${file} → ${t}`));
  assert.deepEqual(apiImports, []);
});
