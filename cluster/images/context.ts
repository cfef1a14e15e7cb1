/**
 * Lists a Docker build context: the files and symbolic links under a directory that its
 * .dockerignore leaves in, by the rules Docker and buildah apply (moby's patternmatcher: patterns
 * cleaned like paths, `*` and `?` within one path segment, `**` across segments, a pattern also
 * matching everything under a directory it matches, the last matching pattern deciding, `!` taking
 * back). Prints the paths relative to the directory, sorted, each ended by a NUL. Directories that
 * are left out and that no `!` pattern can reach into are not read (node_modules, .userland).
 *
 *   node cluster/images/context.ts <dir>
 *
 * cluster/images/platform.sh copies exactly these files into the context it builds from (and
 * hashes them for the image's tag); buildah then applies the same .dockerignore to them again.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";

interface Pattern {
  /** A `!` pattern: files it matches are back in. */
  exception: boolean;
  /** The cleaned pattern, e.g. "**\/test". */
  text: string;
  regex: RegExp;
}

/** The regular expression of a pattern, as moby's patternmatcher builds it. */
export function patternRegex(pattern: string): RegExp {
  let out = "^";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] ?? "";
    if (ch === "*") {
      if (pattern[i + 1] === "*") {
        i++;
        if (pattern[i + 1] === "/") i++; // "**/" is "**"
        out += i + 1 >= pattern.length ? ".*" : "(.*/)?";
      } else {
        out += "[^/]*";
      }
    } else if (ch === "?") {
      out += "[^/]";
    } else if (ch === "\\" && i + 1 < pattern.length) {
      i++;
      out += (pattern[i] ?? "").replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&"); // a literal character
    } else if (ch === "[" || ch === "]" || ch === "^" || ch === "-") {
      out += ch; // character classes are the same in Go's and JavaScript's syntax
    } else {
      out += ch.replace(/[.+(){}|$/]/g, "\\$&");
    }
  }
  return new RegExp(out + "$", "s");
}

/** Reads a .dockerignore the way moby's ignorefile.ReadAll does. */
export function parseDockerignore(text: string): Pattern[] {
  const patterns: Pattern[] = [];
  for (const raw of text.replace(/^\uFEFF/, "").split(/\r?\n/)) {
    let line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const exception = line.startsWith("!");
    if (exception) line = line.slice(1).trim();
    if (line === "") throw new Error(`.dockerignore: "${raw}" is not a pattern`);
    line = posix.normalize(line).replace(/\/+$/, "");
    if (line.length > 1 && line.startsWith("/")) line = line.slice(1);
    patterns.push({ exception, text: line, regex: patternRegex(line) });
  }
  return patterns;
}

/** Whether a path (relative, "/"-separated) is left out: the last pattern matching it or a parent wins. */
export function excluded(patterns: Pattern[], path: string): boolean {
  const parents: string[] = [];
  const parts = path.split("/");
  for (let i = 1; i < parts.length; i++) parents.push(parts.slice(0, i).join("/"));
  let out = false;
  for (const p of patterns) {
    if (p.exception !== out) continue; // only a pattern that would change the answer is tried
    if (p.regex.test(path) || parents.some((parent) => p.regex.test(parent))) out = !p.exception;
  }
  return out;
}

/** Whether some `!` pattern could take back a path below the left-out directory `dir`. */
function reachable(patterns: Pattern[], dir: string): boolean {
  const depth = dir.split("/").length;
  return patterns.some((p) => {
    if (!p.exception) return false;
    if (p.text.includes("**")) return true;
    const segments = p.text.split("/");
    return segments.length > depth && patternRegex(segments.slice(0, depth).join("/")).test(dir);
  });
}

/** The context's files and links, relative to `root`, sorted by their bytes (like `LC_ALL=C sort`). */
export function listContext(root: string, patterns: Pattern[]): string[] {
  const files: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      const out = excluded(patterns, path);
      if (entry.isDirectory()) {
        if (!out || reachable(patterns, path)) walk(path);
      } else if (!out && (entry.isFile() || entry.isSymbolicLink())) {
        files.push(path);
      }
    }
  };
  walk("");
  return files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

if (import.meta.main) {
  const root = process.argv[2];
  if (root === undefined) {
    console.error("usage: node cluster/images/context.ts <dir>");
    process.exit(2);
  }
  let text = "";
  try {
    text = readFileSync(join(root, ".dockerignore"), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  process.stdout.write(
    listContext(root, parseDockerignore(text))
      .map((f) => f + "\0")
      .join(""),
  );
}
