/**
 * Draws the program's imports (`npm run imports:draw` → docs/imports.svg): files as boxes
 * (coloured by part of the repository, each labelled with its folder), imports as arrows from the
 * importer to the imported file, floor by floor. A file's floor is the longest chain of imports
 * below it (scripts/importGraph.ts), so every arrow points down; a loop could not be drawn at all. Laid out by Graphviz's `dot` (Debian's graphviz, which
 * `bash scripts/bootstrap.sh imports` installs). test/static/imports.test.ts fails when the
 * drawing no longer shows the imports as they are.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../cluster/repoRoot.ts";
import { floors, importGraph, loops, programFiles } from "./importGraph.ts";

const OUTPUT = join(repoRoot, "docs", "imports.svg");
/** The ruler's boxes, one per floor, named so they can never be a file. */
export const FLOOR_PREFIX = "floor ";

/** Box and arrow colours per part of the repository (a service counts as a part), so each reads as one. */
const COLOURS: Record<string, readonly [fill: string, arrow: string]> = {
  api: ["#c6dbef", "#2171b5"],
  bench: ["#fdd0a2", "#d94801"],
  cluster: ["#d9d9d9", "#525252"],
  coursework: ["#c7e9c0", "#238b45"],
  dev: ["#efedf5", "#6a51a3"],
  lib: ["#fff3b0", "#b8860b"],
  operator: ["#fcbba1", "#cb181d"],
  reliability: ["#e5d8bd", "#8c6d31"],
  scripts: ["#d0d1e6", "#3f007d"],
  "services/auth": ["#ccece6", "#00695c"],
  "services/proxy": ["#fde0dd", "#ae017e"],
  "services/user-manager": ["#e0ecf4", "#225ea8"],
};
const OTHER: readonly [string, string] = ["#ffffff", "#888888"];

const part = (file: string) => {
  const segments = file.split("/");
  if (segments.length === 1) return ".";
  return segments[0] === "services" ? segments.slice(0, 2).join("/") : (segments[0] ?? ".");
};

const quote = (text: string) => `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

/** The drawing in Graphviz's language: one rank per floor, the top floor first. */
function dotSource(graph: ReadonlyMap<string, readonly string[]>): string {
  const floor = floors(graph);
  const top = Math.max(0, ...floor.values());
  const colour = (file: string) => COLOURS[part(file)] ?? OTHER;
  const lines = [
    "digraph imports {",
    "  rankdir=TB; ranksep=1.1; nodesep=0.12; outputorder=edgesfirst;",
    '  fontname="Helvetica"; fontsize=20; labelloc=t;',
    `  label=${quote(
      "The program's imports: each box a file, each arrow an import (type-only ones too), from the importer down to what it imports. " +
        "A file's floor is the longest chain of imports below it. Tests and test/ are not drawn. Made by npm run imports:draw.",
    )};`,
    '  node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=11, height=0.3, margin="0.06,0.03"];',
    "  edge [arrowsize=0.5, penwidth=0.6];",
  ];
  // Boxes coloured by part of the repository, labelled with their folder above their name: clusters
  // per folder would keep each folder's boxes apart on every floor and make the drawing three times
  // as wide.
  for (const file of [...graph.keys()].sort()) {
    const slash = file.lastIndexOf("/");
    const label =
      slash < 0
        ? `<<b>${file}</b>>`
        : `<<font point-size="8" color="#444444">${file.slice(0, slash + 1)}</font><br/><b>${file.slice(slash + 1)}</b>>`;
    lines.push(
      `  ${quote(file)} [label=${label}, tooltip=${quote(file)}, fillcolor=${quote(colour(file)[0])}];`,
    );
  }
  // The ruler: one box per floor, top floor first, chained so no two floors share a rank.
  lines.push('  node [shape=plaintext, style="", fontsize=16];');
  for (let f = top; f >= 0; f--) {
    lines.push(`  ${quote(FLOOR_PREFIX + f)};`);
    if (f < top)
      lines.push(`  ${quote(FLOOR_PREFIX + (f + 1))} -> ${quote(FLOOR_PREFIX + f)} [style=invis];`);
  }
  for (let f = top; f >= 0; f--) {
    const members = [...graph.keys()].filter((file) => floor.get(file) === f);
    lines.push(`  { rank=same; ${[FLOOR_PREFIX + f, ...members].map(quote).join("; ")}; }`);
  }
  for (const [file, targets] of graph)
    for (const target of targets)
      lines.push(`  ${quote(file)} -> ${quote(target)} [color=${quote(`${colour(file)[1]}99`)}];`);
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

function main(): void {
  const files = programFiles();
  const graph = importGraph(files, (f) => readFileSync(join(repoRoot, f), "utf8"));
  const found = loops(graph);
  if (found.length > 0)
    throw new Error(`import loops cannot be drawn floor by floor: ${JSON.stringify(found)}`);
  let svg: string;
  try {
    svg = execFileSync("dot", ["-Tsvg"], { input: dotSource(graph), encoding: "utf8", maxBuffer: 64 << 20 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT")
      throw new Error("dot is missing: install graphviz (bash scripts/bootstrap.sh imports)", {
        cause: error,
      });
    throw error;
  }
  writeFileSync(OUTPUT, svg);
  const edges = [...graph.values()].reduce((n, t) => n + t.length, 0);
  console.log(
    `docs/imports.svg: ${graph.size} files, ${edges} imports, ${Math.max(...floors(graph).values()) + 1} floors`,
  );
}

if (import.meta.filename === process.argv[1]) main();
