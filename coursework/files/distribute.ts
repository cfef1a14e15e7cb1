/**
 * distribute: publishes an assignment's folder into a student's `assignments/<name>/` by nbgitpuller's
 * rule. A manifest in the student's folder (MANIFEST_NAME) records the SHA-256 of each file as last
 * delivered there. On every (re)publish, per published file:
 *
 * - missing in the student's folder: written;
 * - the same as the new version: left as it is;
 * - the same as last delivered (the student has not touched it): replaced by the new version;
 * - anything else (the student changed it, or had a file of that name before): kept, and reported.
 *
 * Nothing is deleted, and nothing is written through a link: a file or folder the student replaced by
 * a symbolic link (or anything but a regular file) is kept and reported. New versions are written to
 * a temporary file beside the target and renamed over it, after checking that the student's file is
 * still the one that was hashed.
 */
import { randomBytes } from "node:crypto";
import { constants, type BigIntStats } from "node:fs";
import { lstat, open, rename, unlink, type FileHandle } from "node:fs/promises";
import { finished } from "node:stream/promises";
import { inside, NO_PERMISSION, READ_FLAGS, splitPath, UnsafePathError } from "./beneath.ts";
import type { Limits } from "../../api/copyPrograms.ts";
import { manifestHash, type FileRecord } from "./manifest.ts";
import { pathProblem } from "./names.ts";
import { forEachFile } from "./parallel.ts";
import { readListed } from "./read.ts";
import { replaceWithText } from "./writeText.ts";
import { Tree, type ListedFile, type Skipped } from "./walk.ts";

/** The manifest's name in the student's assignment folder. */
export const MANIFEST_NAME = ".userland-assignment.json";
/** A larger manifest is not ours (one entry is about 100 bytes). */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

interface Manifest {
  version: 1;
  /** The published revision last delivered: manifest.ts's hash of the published files. */
  revision: string;
  files: Record<string, { sha256: string; bytes: number }>;
}

export interface DistributeResult {
  /** The published files' manifest hash (manifest.ts). */
  revision: string;
  /** Files published. */
  files: number;
  /** Written because the student had none. */
  written: string[];
  /** Replaced by the new version: the student had not changed them. */
  updated: string[];
  /** Already the new version. */
  unchanged: number;
  /** The student's own version kept, and why. */
  kept: Skipped[];
  /** Entries of the published folder not published (links, FIFOs…; changed while being read). */
  skipped: Skipped[];
  /** Set when the student's manifest could not be used, e.g. "replaced by a symbolic link". */
  manifestProblem?: string;
}

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
const HEX64 = /^[0-9a-f]{64}$/;

function parseManifest(text: string): Manifest | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "not valid JSON";
  }
  const m = value as Partial<Manifest> | null;
  if (
    typeof m !== "object" ||
    m === null ||
    m.version !== 1 ||
    typeof m.files !== "object" ||
    m.files === null
  ) {
    return "not a manifest of version 1";
  }
  const files: Manifest["files"] = {};
  // Every key is the student's to write: only safe paths with well-formed entries count.
  for (const [path, entry] of Object.entries(m.files as Record<string, unknown>)) {
    const e = entry as { sha256?: unknown; bytes?: unknown } | null;
    if (pathProblem(path) || typeof e?.sha256 !== "string" || !HEX64.test(e.sha256)) continue;
    if (typeof e.bytes !== "number" || !Number.isSafeInteger(e.bytes) || e.bytes < 0) continue;
    files[path] = { sha256: e.sha256, bytes: e.bytes };
  }
  return { version: 1, revision: typeof m.revision === "string" ? m.revision : "", files };
}

async function readManifest(student: Tree): Promise<Manifest | string | undefined> {
  return student.inFolder("", false, async (root) => {
    const handle = await open(inside(root, MANIFEST_NAME), READ_FLAGS).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined;
      if (e.code === "ELOOP") return "replaced by a symbolic link";
      if (e.code === "EACCES") return NO_PERMISSION;
      throw e;
    });
    if (handle === undefined || typeof handle === "string") return handle;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) return "not a regular file";
      if (stats.size > MAX_MANIFEST_BYTES) return "too large";
      return parseManifest((await handle.readFile()).toString("utf8"));
    } finally {
      await handle.close();
    }
  });
}

/** The student's regular file `name` in `folder` as a walk would list it. */
function listedFrom(path: string, stats: BigIntStats): ListedFile {
  return {
    path,
    size: Number(stats.size),
    executable: false,
    mtime: new Date(Number(stats.mtimeMs)),
    ino: stats.ino,
    dev: stats.dev,
  };
}

/** SHA-256 of a file, read once through walk.ts's checks; undefined when it changed meanwhile. */
async function hashOf(tree: Tree, file: ListedFile): Promise<string | undefined> {
  const { stream, result } = readListed(tree, file);
  stream.resume();
  await finished(stream);
  const read = await result;
  return read.changed ? undefined : read.sha256;
}

function sameVersion(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

type Outcome = "written" | "updated" | "unchanged" | { kept: string } | { sourceChanged: string };

export async function distribute(from: string, to: string, limits: Limits): Promise<DistributeResult> {
  const source = await Tree.open(from);
  try {
    const listing = await source.walk(limits);
    const skipped = [...listing.skipped];
    const published: { file: ListedFile; record: FileRecord }[] = [];
    const hashes = await forEachFile(listing.files, (file) =>
      file.path === MANIFEST_NAME ? Promise.resolve(MANIFEST_NAME) : hashOf(source, file),
    );
    listing.files.forEach((file, i) => {
      const sha256 = hashes[i];
      if (sha256 === MANIFEST_NAME) {
        skipped.push({ path: file.path, reason: "not published: the platform's own manifest has this name" });
      } else if (sha256 === undefined) {
        skipped.push({ path: file.path, reason: "not published: it changed while being read" });
      } else {
        published.push({ file, record: { path: file.path, bytes: file.size, sha256 } });
      }
    });
    const revision = manifestHash(published.map((p) => p.record));
    const student = await Tree.open(to, true);
    try {
      const manifest = await readManifest(student);
      const old = typeof manifest === "object" ? manifest.files : {};
      const result: DistributeResult = {
        revision,
        files: published.length,
        written: [],
        updated: [],
        unchanged: 0,
        kept: [],
        skipped,
        ...(typeof manifest === "string" ? { manifestProblem: manifest } : {}),
      };
      // Entries for files no longer published stay: a later publish may bring them back.
      const next: Manifest = { version: 1, revision, files: { ...old } };
      const outcomes = await forEachFile(published, ({ file, record }) =>
        deliver(source, student, file, record, old[record.path]),
      );
      for (const [i, { record }] of published.entries()) {
        const outcome = outcomes[i]!;
        if (outcome === "written" || outcome === "updated" || outcome === "unchanged") {
          next.files[record.path] = { sha256: record.sha256, bytes: record.bytes };
          if (outcome === "unchanged") result.unchanged++;
          else result[outcome].push(record.path);
        } else if ("kept" in outcome) {
          result.kept.push({ path: record.path, reason: outcome.kept });
        } else {
          result.skipped.push({ path: record.path, reason: outcome.sourceChanged });
        }
      }
      await writeManifest(student, next);
      return result;
    } finally {
      await student.close();
    }
  } finally {
    await source.close();
  }
}

async function deliver(
  source: Tree,
  student: Tree,
  file: ListedFile,
  record: FileRecord,
  last: { sha256: string; bytes: number } | undefined,
): Promise<Outcome> {
  const [folder, name] = splitPath(record.path);
  try {
    return await student.inFolder(folder, true, (parent) =>
      deliverIn(source, student, parent, name, file, record, last),
    );
  } catch (error) {
    if (error instanceof UnsafePathError) return { kept: `not delivered: the folder ${error.message}` };
    throw error;
  }
}

async function deliverIn(
  source: Tree,
  student: Tree,
  parent: FileHandle,
  name: string,
  file: ListedFile,
  record: FileRecord,
  last: { sha256: string; bytes: number } | undefined,
): Promise<Outcome> {
  const stats = await lstat(inside(parent, name), { bigint: true }).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return undefined;
    if (e.code === "EACCES") return "denied" as const;
    throw e;
  });
  if (stats === "denied") return { kept: `kept: the student's folder ${NO_PERMISSION}` };
  if (!stats) return await writeVersion(source, parent, name, file, record, undefined);
  if (stats.isSymbolicLink())
    return { kept: "kept: the student replaced it by a symbolic link (not followed)" };
  if (!stats.isFile()) return { kept: "kept: the student's entry of this name is not a regular file" };
  const size = Number(stats.size);
  // Only a file of a size it could have is read: a student's large file costs nothing.
  const current =
    size === record.bytes || size === last?.bytes
      ? await hashOf(student, listedFrom(record.path, stats))
      : undefined;
  if (current === record.sha256) return "unchanged";
  if (last && current === last.sha256) return await writeVersion(source, parent, name, file, record, stats);
  return {
    kept: last
      ? "kept: the student changed it since it was last delivered"
      : "kept: the student had a file of this name before it was first delivered",
  };
}

/** Writes the new version beside `name` and renames it over; `replacing`: the student's file as hashed. */
async function writeVersion(
  source: Tree,
  parent: FileHandle,
  name: string,
  file: ListedFile,
  record: FileRecord,
  replacing: BigIntStats | undefined,
): Promise<Outcome> {
  // Short, so that a name of 255 bytes still has a temporary beside it.
  const temporary = `.userland-${randomBytes(8).toString("hex")}.tmp`;
  const out = await open(inside(parent, temporary), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  let renamed = false;
  try {
    const { stream, result } = readListed(source, file);
    try {
      // writeFile: every byte of the chunk at the current position (a single write may be short).
      for await (const chunk of stream) await out.writeFile(chunk as Buffer);
      await out.sync();
    } finally {
      await out.close();
    }
    const read = await result;
    if (read.changed || read.sha256 !== record.sha256) {
      return { sourceChanged: "not published: it changed while being delivered; publish again" };
    }
    // The student may have saved meanwhile: replace only the very version that was hashed, or nothing.
    const now = await lstat(inside(parent, name), { bigint: true }).catch(() => undefined);
    if (replacing ? !now || !sameVersion(now, replacing) : now) {
      return { kept: "kept: the student changed it while the new version was being delivered" };
    }
    await rename(inside(parent, temporary), inside(parent, name));
    renamed = true;
    return replacing ? "updated" : "written";
  } finally {
    if (!renamed) await unlink(inside(parent, temporary)).catch(() => {});
  }
}

async function writeManifest(student: Tree, manifest: Manifest): Promise<void> {
  await student.inFolder("", false, (root) =>
    replaceWithText(root, MANIFEST_NAME, `${JSON.stringify(manifest, null, 1)}\n`),
  );
}
