/**
 * The canonical manifest of a set of files and its hash: the hash a receipt shows, a distribution's
 * revision. The manifest is exactly what `sha256sum` prints for the files, sorted by the bytes of their
 * UTF-8 paths (`LC_ALL=C sort`), so anyone can check a copy with standard tools:
 *
 *   cd copy && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
 *
 * (names.ts refuses the backslashes and newlines that sha256sum would escape).
 */
import { createHash } from "node:crypto";

export interface FileRecord {
  path: string;
  bytes: number;
  sha256: string;
}

/** Orders paths by their UTF-8 bytes, as `LC_ALL=C sort` does (JavaScript's < compares UTF-16). */
export function byPath(a: { path: string }, b: { path: string }): number {
  return Buffer.compare(Buffer.from(a.path), Buffer.from(b.path));
}

export function manifestText(files: readonly FileRecord[]): string {
  return [...files]
    .sort(byPath)
    .map((f) => `${f.sha256}  ${f.path}\n`)
    .join("");
}

export function manifestHash(files: readonly FileRecord[]): string {
  return createHash("sha256").update(manifestText(files)).digest("hex");
}
