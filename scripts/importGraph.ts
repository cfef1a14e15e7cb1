/**
 * The program's imports as a graph: files as nodes, relative imports and re-exports (type-only ones
 * included) as edges. One reading shared by the static tests (test/static/imports.test.ts: no loop,
 * api/ standing on nothing) and the drawing (scripts/drawImports.ts → docs/imports.svg). Test files
 * and test folders are not part of the program.
 */
import { readdirSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { repoRoot } from "../cluster/repoRoot.ts";

const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", ".userland", "test"]);

/** Test folders hold no program; `*.test.ts` and `*.alone.ts` are tests wherever they are. */
export function isTestPath(file: string): boolean {
  return file.split("/").includes("test") || /\.(test|alone)\.ts$/.test(file);
}

/** The program's TypeScript files, relative to the repository, sorted. */
export function programFiles(dir = repoRoot): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) files.push(...programFiles(join(dir, entry.name)));
    } else if (entry.name.endsWith(".ts") && !/\.(test|alone)\.ts$/.test(entry.name)) {
      files.push(relative(repoRoot, join(dir, entry.name)));
    }
  }
  return files.sort();
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"/g;

/** The repository paths `file`'s relative imports and re-exports name, whatever they are. */
export function importedPaths(file: string, source: string): string[] {
  return [...source.matchAll(SPECIFIER)].map((m) => normalize(join(dirname(file), m[1] ?? "")));
}

/** Each file's relative imports and re-exports that name another program file. */
export function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = importedPaths(file, read(file)).filter((target) => known.has(target));
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

/**
 * Each file's floor: the longest chain of imports below it (0 for a file importing nothing of the
 * project). An importer is always on a higher floor than what it imports, so drawn floor by floor
 * every arrow points down. Only for a graph without loops.
 */
export function floors(graph: ReadonlyMap<string, readonly string[]>): Map<string, number> {
  const floor = new Map<string, number>();
  const visiting = new Set<string>();
  const of = (file: string): number => {
    const known = floor.get(file);
    if (known !== undefined) return known;
    if (visiting.has(file)) throw new Error(`import loop through ${file}`);
    visiting.add(file);
    const value = Math.max(-1, ...(graph.get(file) ?? []).map(of)) + 1;
    visiting.delete(file);
    floor.set(file, value);
    return value;
  };
  for (const file of graph.keys()) of(file);
  return floor;
}
