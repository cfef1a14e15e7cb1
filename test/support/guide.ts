/**
 * The shell commands of a Markdown guide (deploy/README.md), as a reader would copy them: every
 * ```sh block of a section, comments dropped and `\` continuations joined, grouped by the section's
 * own heading and its subsections; and its examples in other languages (guideBlocks). Tests replay them, so the
 * guide cannot drift from what works.
 */
import { readFileSync } from "node:fs";

export interface GuideStep {
  /** The heading the commands are under, e.g. "### Rotating the session keys". */
  heading: string;
  /** Each code block's commands, in order. */
  blocks: string[][];
}

/** The commands of the section whose heading starts with `heading` (e.g. "## 1. Install"). */
export function guideCommands(file: string, heading: string): GuideStep[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const start = lines.findIndex((l) => l.startsWith(heading));
  if (start < 0) throw new Error(`${file} has no section "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const steps: GuideStep[] = [{ heading: lines[start] ?? heading, blocks: [] }];
  let inBlock = false;
  let pending = "";
  for (const line of lines.slice(start + 1)) {
    const depth = /^(#+) /.exec(line)?.[1]?.length;
    if (!inBlock && depth !== undefined) {
      if (depth <= level) break;
      steps.push({ heading: line, blocks: [] });
      continue;
    }
    if (/^```(sh|bash|shell)\s*$/.test(line)) {
      inBlock = true;
      steps.at(-1)?.blocks.push([]);
      continue;
    }
    if (inBlock && line.startsWith("```")) {
      inBlock = false;
      continue;
    }
    if (!inBlock) continue;
    const text = line.replace(/\s+#.*$/, "").trimEnd();
    if (text.trim() === "" || text.trim().startsWith("#")) continue;
    if (text.endsWith("\\")) {
      pending += `${text.slice(0, -1).trim()} `;
      continue;
    }
    steps.at(-1)?.blocks.at(-1)?.push(`${pending}${text.trim()}`);
    pending = "";
  }
  for (const step of steps) step.blocks = step.blocks.filter((b) => b.length > 0);
  const withCommands = steps.filter((s) => s.blocks.length > 0);
  if (withCommands.length === 0) throw new Error(`${file}: no commands under "${heading}"`);
  return withCommands;
}

/**
 * The text of every code block in `language` (yaml, nginx, ...) directly under the section whose
 * heading starts with `heading` (up to the next heading of any level): a guide's examples.
 */
export function guideBlocks(file: string, heading: string, language: string): string[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const start = lines.findIndex((l) => l.startsWith(heading));
  if (start < 0) throw new Error(`${file} has no section "${heading}"`);
  const blocks: string[] = [];
  let current: string[] | undefined;
  for (const line of lines.slice(start + 1)) {
    if (current === undefined && /^#+ /.test(line)) break;
    if (current === undefined && line.trimEnd() === `\`\`\`${language}`) current = [];
    else if (current !== undefined && line.startsWith("```")) {
      blocks.push(current.join("\n"));
      current = undefined;
    } else current?.push(line);
  }
  if (blocks.length === 0) throw new Error(`${file}: no ${language} block under "${heading}"`);
  return blocks;
}
