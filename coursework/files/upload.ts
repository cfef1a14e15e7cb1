/**
 * An upload into a folder (docs/decisions/0011-coursework.md, "Uploads"): a teacher's files, sent
 * one by one or as zips, are written into a hidden staging folder inside the target and moved into
 * place only when the whole upload is accepted, so a refused upload changes nothing. Uploaded files
 * are added to the folder, replacing files of the same path; nothing else is deleted.
 *
 * The same rules as the copies that read students' folders: every name is checked by names.ts,
 * limits (limits.ts) stop the upload with a message for the teacher, and no path is ever followed
 * through a symbolic link (beneath.ts) when a file is moved into the target. A zip's links, FIFOs,
 * devices, encrypted entries and unknown compression methods are refused, not skipped: the teacher
 * is told what was wrong with their archive.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import yauzl from "yauzl";
import { inside, openFolder, openFolderBeneath, splitPath, UnsafePathError } from "./beneath.ts";
import { limitErrors, LimitError } from "./limits.ts";
import type { Limits, UploadSummary } from "../../api/copyPrograms.ts";
import { manifestHash, type FileRecord } from "./manifest.ts";
import { NameError, pathProblem } from "./names.ts";

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
const NEW_FILE = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** The staging folder's name starts with this; a folder of that name is never uploaded into. */
export const STAGING_PREFIX = ".userland-upload-";

/** Something in the upload itself is wrong (a zip that cannot be read, a name uploaded twice). */
export class UploadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UploadError";
  }
}

/**
 * Where files go: `files` into the target as they are; `students` into the target by the upload's
 * top-level folder, which must name one of the students (their identity or their folder in the
 * collection, as the hand-ins archive names it); files of other top-level folders are reported and
 * not written.
 */
export type UploadLayout =
  | { kind: "files" }
  | {
      kind: "students";
      /** A top-level name the teacher may use (identity or collection folder) → the student's folder. */
      folders: ReadonlyMap<string, string>;
    };

/** What a Unix mode in a zip's external attributes says about the entry, when it is not a file. */
function zipKind(entry: yauzl.Entry): string | undefined {
  // Unix modes are kept in the high 16 bits by Info-ZIP and most tools (made on "Unix", host 3).
  if (entry.versionMadeBy >> 8 !== 3) return undefined;
  const type = (entry.externalFileAttributes >>> 16) & 0o170000;
  if (type === 0 || type === 0o100000 || type === 0o040000) return undefined;
  if (type === 0o120000) return "a symbolic link";
  if (type === 0o010000) return "a named pipe (FIFO)";
  if (type === 0o140000) return "a socket";
  if (type === 0o020000 || type === 0o060000) return "a device";
  return "not a regular file";
}

export class Upload {
  private readonly limits: Limits;
  private readonly root: FileHandle;
  private readonly stagingName: string;
  private readonly staging: FileHandle;
  private readonly records = new Map<string, FileRecord>();
  private readonly folders = new Set<string>();
  private bytes = 0;
  private zips = 0;

  private constructor(limits: Limits, root: FileHandle, stagingName: string, staging: FileHandle) {
    this.limits = limits;
    this.root = root;
    this.stagingName = stagingName;
    this.staging = staging;
  }

  /** Opens the target folder (never through a link) and makes the staging folder inside it. */
  static async begin(target: string, limits: Limits): Promise<Upload> {
    const root = await openFolder(target);
    try {
      const name = `${STAGING_PREFIX}${randomBytes(8).toString("hex")}`;
      await mkdir(inside(root, name), 0o700);
      const staging = await openFolderBeneath(root, name);
      return new Upload(limits, root, name, staging);
    } catch (error) {
      await root.close();
      throw error;
    }
  }

  /** Counts an entry against the limits and checks its name; throws before anything is written. */
  private admit(path: string, kind: "file" | "folder"): void {
    const problem = pathProblem(path);
    if (problem) throw new NameError(path, problem);
    if (path.split("/")[0]?.startsWith(STAGING_PREFIX))
      throw new NameError(path, "a name the upload uses itself");
    if (Buffer.byteLength(path) > this.limits.maxPathLength) throw limitErrors.pathLength(this.limits, path);
    if (path.split("/").length - 1 > this.limits.maxDepth) throw limitErrors.depth(this.limits, path);
    if (kind === "file" && this.records.has(path)) throw new UploadError(`"${path}" is in the upload twice`);
    if (kind === "folder" && this.folders.has(path)) return;
    // Files and folders, as the copies count them: a folder's parents count once each.
    const parents = path.split("/").slice(0, -1);
    const fresh = parents
      .map((_, i) => parents.slice(0, i + 1).join("/"))
      .filter((p) => !this.folders.has(p));
    if (this.records.size + this.folders.size + fresh.length + 1 > this.limits.maxFiles)
      throw limitErrors.files(this.limits);
    for (const p of fresh) this.folders.add(p);
    if (kind === "folder") this.folders.add(path);
  }

  /** A counter in the byte stream: the limit stops the upload at the byte that passes it. */
  private meter(path: string): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        this.bytes += chunk.length;
        if (this.bytes > this.limits.maxBytes) return done(limitErrors.bytes(this.limits, path, this.bytes));
        done(null, chunk);
      },
    });
  }

  /** Writes one file of the upload from `body`; its path is relative, `/`-separated. */
  async addFile(path: string, body: Readable): Promise<FileRecord> {
    this.admit(path, "file");
    const [folder, name] = splitPath(path);
    const parent = await openFolderBeneath(this.staging, folder, true);
    try {
      const out = await open(inside(parent, name), NEW_FILE, 0o644).catch((error: NodeJS.ErrnoException) => {
        if (error.code === "EEXIST") throw new UploadError(`"${path}" is in the upload twice`);
        throw error;
      });
      const hash = createHash("sha256");
      let bytes = 0;
      try {
        await pipeline(body, this.meter(path), async (source: AsyncIterable<Buffer>) => {
          for await (const chunk of source) {
            hash.update(chunk);
            bytes += chunk.length;
            await out.writeFile(chunk);
          }
        });
        await out.sync();
      } finally {
        await out.close();
      }
      const record = { path, bytes, sha256: hash.digest("hex") };
      this.records.set(path, record);
      return record;
    } finally {
      await parent.close();
    }
  }

  /**
   * Receives a zip into the staging folder (it must be read from its end: the central directory),
   * then writes its entries as files of the upload. The zip's own size counts against maxBytes too.
   */
  async addZip(body: Readable): Promise<number> {
    const name = `zip-${++this.zips}`;
    const limit = this.limits.maxBytes;
    let received = 0;
    const out = await open(inside(this.staging, name), NEW_FILE, 0o600);
    try {
      await pipeline(
        body,
        new Transform({
          transform: (chunk: Buffer, _encoding, done) => {
            received += chunk.length;
            if (received > limit) return done(limitErrors.bytes(this.limits, "the zip", received));
            done(null, chunk);
          },
        }),
        async (source: AsyncIterable<Buffer>) => {
          for await (const chunk of source) await out.writeFile(chunk);
        },
      );
    } finally {
      await out.close();
    }
    try {
      return await this.extract(inside(this.staging, name));
    } finally {
      await rm(inside(this.staging, name), { force: true });
    }
  }

  private async extract(zipPath: string): Promise<number> {
    let zip: yauzl.ZipFile;
    try {
      // strictFileNames: a backslash is an error, not silently a folder separator; names are
      // checked again below by names.ts, as every other path is.
      zip = await yauzl.openPromise(zipPath, {
        lazyEntries: true,
        autoClose: false,
        strictFileNames: true,
        validateEntrySizes: true,
      });
    } catch (error) {
      throw new UploadError(`the zip cannot be read: ${(error as Error).message}`);
    }
    let count = 0;
    try {
      for (;;) {
        const entry = await nextEntry(zip);
        if (!entry) break;
        const name = entry.fileName.replace(/\/$/, "");
        const shown = JSON.stringify(entry.fileName.slice(0, 200));
        const kind = zipKind(entry);
        if (kind)
          throw new UploadError(
            `the zip's entry ${shown} is ${kind}: only files and folders can be uploaded`,
          );
        if (entry.isEncrypted())
          throw new UploadError(`the zip's entry ${shown} is encrypted: zip it without a password`);
        if (entry.fileName.endsWith("/")) {
          this.admit(name, "folder");
          await (await openFolderBeneath(this.staging, name, true)).close();
          continue;
        }
        if (!entry.canDecodeFileData())
          throw new UploadError(
            `the zip's entry ${shown} uses a compression method other than deflate: zip it again with a common tool`,
          );
        // The declared size is checked before a byte is inflated; yauzl checks the real size against it.
        if (this.bytes + entry.uncompressedSize > this.limits.maxBytes)
          throw limitErrors.bytes(this.limits, name, this.bytes + entry.uncompressedSize);
        const stream = await zip.openReadStreamPromise(entry);
        await this.addFile(name, stream);
        count++;
      }
    } catch (error) {
      if (error instanceof LimitError || error instanceof NameError || error instanceof UploadError)
        throw error;
      if (error instanceof UnsafePathError) throw error;
      throw new UploadError(`the zip cannot be read: ${(error as Error).message}`);
    } finally {
      zip.close();
    }
    return count;
  }

  /**
   * Moves every staged file into the target (by the layout), replacing files of the same path;
   * refuses, before moving anything, a path whose place in the target is a folder, a link or
   * anything but a file.
   */
  async commit(layout: UploadLayout): Promise<UploadSummary> {
    const moves: { from: string; to: string; record: FileRecord }[] = [];
    const students = new Map<string, { name: string; folder: string; files: number }>();
    const unknown = new Map<string, number>();
    for (const record of this.records.values()) {
      if (layout.kind === "files") {
        moves.push({ from: record.path, to: record.path, record });
        continue;
      }
      const [top, ...rest] = record.path.split("/");
      const folder = rest.length > 0 ? layout.folders.get(top!) : undefined;
      if (folder === undefined) {
        const name = rest.length > 0 ? `${top}/` : top!;
        unknown.set(name, (unknown.get(name) ?? 0) + 1);
        continue;
      }
      const entry = students.get(top!) ?? { name: top!, folder, files: 0 };
      entry.files++;
      students.set(top!, entry);
      moves.push({ from: record.path, to: [folder, ...rest].join("/"), record });
    }
    const targets = new Set<string>();
    for (const move of moves) {
      if (targets.has(move.to)) throw new UploadError(`two files of the upload go to "${move.to}"`);
      targets.add(move.to);
    }
    // First every place is checked (and its folders made), then everything is moved.
    const places: { parent: FileHandle; name: string; from: string }[] = [];
    try {
      for (const move of moves) {
        const [folder, name] = splitPath(move.to);
        const parent = await openFolderBeneath(this.root, folder, true);
        places.push({ parent, name, from: move.from });
        const there = await lstat(inside(parent, name)).catch(() => undefined);
        if (there && !there.isFile())
          throw new UnsafePathError(
            `"${move.to}" exists in the folder and is ${there.isSymbolicLink() ? "a symbolic link" : there.isDirectory() ? "a folder" : "not a file"}: it is not replaced`,
          );
      }
      for (const place of places) {
        const [folder, name] = splitPath(place.from);
        const staged = await openFolderBeneath(this.staging, folder);
        try {
          // rename replaces a file (or a link planted meanwhile) at the name, never writes through it.
          await rename(inside(staged, name), inside(place.parent, place.name));
        } finally {
          await staged.close();
        }
      }
    } finally {
      for (const place of places) await place.parent.close();
    }
    const written = moves.map((m) => ({ ...m.record, path: m.to }));
    return {
      files: written.length,
      bytes: written.reduce((sum, f) => sum + f.bytes, 0),
      sha256: manifestHash(written),
      students: [...students.values()].sort((a, b) => a.name.localeCompare(b.name)),
      unknown: [...unknown.entries()]
        .map(([name, files]) => ({ name, files }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    };
  }

  /** Removes the staging folder (with whatever was not moved) and lets go of the target. */
  async close(): Promise<void> {
    try {
      await this.staging.close();
      await rm(inside(this.root, this.stagingName), { recursive: true, force: true });
    } finally {
      await this.root.close();
    }
  }
}

function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | undefined> {
  return new Promise((resolve, reject) => {
    const cleanUp = () => {
      zip.off("entry", onEntry).off("end", onEnd).off("error", onError);
    };
    const onEntry = (entry: yauzl.Entry) => (cleanUp(), resolve(entry));
    const onEnd = () => (cleanUp(), resolve(undefined));
    const onError = (error: Error) => (cleanUp(), reject(error));
    zip.once("entry", onEntry).once("end", onEnd).once("error", onError);
    zip.readEntry();
  });
}
