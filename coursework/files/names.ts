/**
 * The one check of a path inside a copy or an archive (`notes/week 1.ipynb`), used by every reader and
 * writer of such paths: the walk (names it lists), the zip writer (names it stores) and the
 * distribution's manifest (names a student could have edited). A path is relative, separated by `/`,
 * and every segment is a plain name: nothing a reader on Linux or Windows could take to mean another
 * folder.
 */

/** Longest path, in UTF-8 bytes; zip's own field holds 65535, Linux's PATH_MAX is 4096. */
export const MAX_PATH_BYTES = 4096;
/** Longest segment, in UTF-8 bytes: NAME_MAX on Linux's file systems. */
const MAX_SEGMENT_BYTES = 255;

/** Why `segment` (one name, no `/`) cannot be stored, or undefined when it can. */
export function segmentProblem(segment: string): string | undefined {
  if (segment === "") return "an empty name";
  if (segment === "." || segment === "..") return `the name ${JSON.stringify(segment)} (it means a folder)`;
  if (segment.includes("/")) return "a slash in a name";
  if (segment.includes("\\")) return "a backslash in its name (Windows reads it as a folder separator)";
  // NUL ends a name for the kernel; newlines and other control characters forge lines of the manifest
  // that a teacher checks with sha256sum, and of terminals.
  if (hasControlCharacter(segment)) return "a control character in its name (such as a newline)";
  if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) return `a name longer than ${MAX_SEGMENT_BYTES} bytes`;
  return undefined;
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** Why `path` cannot name an entry, or undefined when it can. */
export function pathProblem(path: string): string | undefined {
  if (path.startsWith("/")) return "an absolute path";
  if (/^[a-zA-Z]:/.test(path)) return "a drive letter (an absolute path on Windows)";
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `a path longer than ${MAX_PATH_BYTES} bytes`;
  for (const segment of path.split("/")) {
    const problem = segmentProblem(segment);
    if (problem) return problem;
  }
  return undefined;
}

export class NameError extends Error {
  constructor(path: string, problem: string) {
    super(`refused the entry name ${JSON.stringify(path.slice(0, 200))}: ${problem}`);
    this.name = "NameError";
  }
}

/** Throws NameError unless `path` is a safe relative entry path. */
export function checkEntryPath(path: string): string {
  const problem = pathProblem(path);
  if (problem) throw new NameError(path, problem);
  return path;
}
