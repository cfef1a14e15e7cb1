/**
 * The drawing of the program's imports (files as boxes, imports as arrows, type-only imports
 * included) has no loop, and `api/` imports nothing of the project outside itself: the bottom floor
 * stands on nothing (docs/decisions/0007-one-home-per-concept.md). Test files and test folders are
 * not part of the program; eslint keeps the program from importing them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { FLOOR_PREFIX } from "../../scripts/drawImports.ts";
import {
  floors,
  importGraph,
  importedPaths,
  isTestPath,
  loops,
  programFiles,
} from "../../scripts/importGraph.ts";

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

test("nothing outside test folders imports from one", () => {
  const fromTests = programFiles().flatMap((file) =>
    importedPaths(file, readFileSync(join(repoRoot, file), "utf8"))
      .filter(isTestPath)
      .map((target) => `${file} → ${target}`),
  );
  assert.deepEqual(fromTests, []);
  assert.deepEqual(
    importedPaths("bench/x.ts", 'import { a } from "../test/support/cluster.ts";').filter(isTestPath),
    ["test/support/cluster.ts"],
  );
});

test("a file's floor is the longest chain of imports below it", () => {
  const graph = new Map([
    ["a.ts", ["b.ts", "c.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", []],
  ]);
  assert.deepEqual(Object.fromEntries(floors(graph)), { "a.ts": 2, "b.ts": 1, "c.ts": 0 });
  assert.throws(() => floors(new Map([["a.ts", ["a.ts"]]])), /import loop/);
});

const unescapeXml = (text: string) =>
  text
    .replaceAll("&#45;", "-")
    .replaceAll("&gt;", ">")
    .replaceAll("&lt;", "<")
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&");

/** The boxes of a drawing (title → the top of its box) and its arrows ("importer->imported"). */
function drawn(svg: string): { boxes: Map<string, number>; arrows: string[] } {
  const boxes = new Map<string, number>();
  for (const m of svg.matchAll(
    /<g id="node\d+" class="node">\s*<title>([^<]*)<\/title>(?:(?!<g id="node)[\s\S])*?\s(?:d|points)="M?([^"]*)"/g,
  )) {
    const ys = [...(m[2] ?? "").matchAll(/-?[\d.]+,(-?[\d.]+)/g)].map((c) => Number(c[1]));
    boxes.set(unescapeXml(m[1] ?? ""), Math.min(...ys));
  }
  const arrows = [...svg.matchAll(/<g id="edge\d+" class="edge">\s*<title>([^<]*)<\/title>/g)].map((m) =>
    unescapeXml(m[1] ?? ""),
  );
  return { boxes, arrows };
}

test("docs/imports.svg draws the imports as they are, every arrow pointing down", () => {
  const files = programFiles();
  const graph = importGraph(files, (f) => readFileSync(join(repoRoot, f), "utf8"));
  const { boxes, arrows } = drawn(readFileSync(join(repoRoot, "docs", "imports.svg"), "utf8"));
  const redraw = "docs/imports.svg is out of date: npm run imports:draw";
  const isFloor = (title: string) => title.startsWith(FLOOR_PREFIX);
  assert.deepEqual([...boxes.keys()].filter((t) => !isFloor(t)).sort(), files, redraw);
  const imports = [...graph].flatMap(([file, targets]) => targets.map((target) => `${file}->${target}`));
  assert.deepEqual(arrows.filter((a) => !isFloor(a)).sort(), imports.sort(), redraw);
  // SVG's y grows downwards: an importer's box starts above every box it imports.
  const upwards = imports.filter((arrow) => {
    const [from = "", to = ""] = arrow.split("->");
    return !((boxes.get(from) ?? Infinity) < (boxes.get(to) ?? -Infinity));
  });
  assert.deepEqual(upwards, []);
});

/**
 * The floors between the folders (decision 0007): `api/` stands on nothing, `lib/` on `api/`, and a
 * component (the operator, each service, coursework's programs) on `lib/` and `api/` but never on
 * another component, so what two of them share cannot hide in one of them. `layerViolations` names
 * each import that breaks it.
 */
export function layerViolations(graph: Map<string, string[]>): string[] {
  const component = (file: string) => {
    const [top = "", second = ""] = file.split("/");
    return top === "services" ? `services/${second}` : top;
  };
  const below: Record<string, (target: string) => boolean> = {
    api: (t) => t.startsWith("api/"),
    lib: (t) => t.startsWith("api/") || t.startsWith("lib/"),
  };
  const componentMay = (file: string, target: string) =>
    target.startsWith("api/") || target.startsWith("lib/") || component(target) === component(file);
  const checked = new Set(["api", "lib", "operator", "coursework"]);
  return [...graph].flatMap(([file, targets]) => {
    const own = component(file);
    if (!checked.has(own) && !own.startsWith("services/")) return [];
    const may = below[own] ?? ((t: string) => componentMay(file, t));
    return targets.filter((t) => !may(t)).map((t) => `${file} → ${t}`);
  });
}

test("the layer check finds an import that points up or sideways", () => {
  const graph = new Map([
    ["lib/a.ts", ["api/x.ts", "services/proxy/b.ts"]],
    ["services/proxy/b.ts", ["lib/a.ts", "operator/c.ts", "services/proxy/d.ts"]],
    ["operator/c.ts", ["services/user-manager/e.ts", "api/x.ts"]],
    ["api/x.ts", ["api/y.ts"]],
  ]);
  assert.deepEqual(layerViolations(graph), [
    "lib/a.ts → services/proxy/b.ts",
    "services/proxy/b.ts → operator/c.ts",
    "operator/c.ts → services/user-manager/e.ts",
  ]);
});

test("every import points down: components → lib → api, no component into another", () => {
  const graph = importGraph(programFiles(), (f) => readFileSync(join(repoRoot, f), "utf8"));
  assert.deepEqual(layerViolations(graph), []);
});
