/**
 * Walks a student's folder: lists its regular files and folders, records everything else as skipped
 * with the reason, and stops at the first limit passed. Nothing is ever followed or opened through a
 * symbolic link (beneath.ts), a FIFO, socket or device is never opened (opening a FIFO would block),
 * and a listed file is opened later only if it is still the very file that was listed.
 */
import type { BigIntStats } from "node:fs";
import { lstat, open, readdir, type FileHandle } from "node:fs/promises";
import { inside, openFolder, openFolderBeneath, openFolderIn, READ_FLAGS, splitPath } from "./beneath.ts";
import { limitErrors, type Limits } from "./limits.ts";
import { segmentProblem } from "./names.ts";

export interface ListedFile {
  /** Path inside the walked folder, `/`-separated, checked by names.ts. */
  path: string;
  size: number;
  /** Executable by its owner: kept as 0755 in archives. */
  executable: boolean;
  mtime: Date;
  /** Identity and version when listed: a file opened later must still match. */
  ino: bigint;
  dev: bigint;
}

export interface Skipped {
  path: string;
  reason: string;
}

export interface Listing {
  files: ListedFile[];
  /** Every folder, parents before their children. */
  folders: string[];
  skipped: Skipped[];
  /** Sum of the files' sizes. */
  bytes: number;
}

const LINK = "a symbolic link (links are never followed; copy the file itself here)";

/** What a non-regular entry is, in a student's words. */
function kindOf(stats: BigIntStats): string {
  if (stats.isSymbolicLink()) return LINK;
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  return "not a regular file";
}

const CHANGED = "changed while it was being read (save your work and try again)";

/** A folder opened once: every walk and read happens beneath it. */
export class Tree {
  private readonly root: FileHandle;

  private constructor(root: FileHandle) {
    this.root = root;
  }

  /**
   * Opens `path`; no component of it may be a symbolic link (UnsafePathError). With `create`, missing
   * folders are made.
   */
  static async open(path: string, create = false): Promise<Tree> {
    return new Tree(await openFolder(path, create));
  }

  /** Opens the folder at `relative` beneath this one (beneath.ts); the caller closes it. */
  async folder(relative: string, create = false): Promise<FileHandle> {
    return openFolderBeneath(this.root, relative, create);
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  async walk(limits: Limits): Promise<Listing> {
    const listing: Listing = { files: [], folders: [], skipped: [], bytes: 0 };
    let entries = 0;
    const visit = async (dir: FileHandle, folder: string, depth: number): Promise<void> => {
      const names = await readdir(`/proc/self/fd/${dir.fd}`, { encoding: "buffer" });
      names.sort((a, b) => Buffer.compare(a, b));
      for (const raw of names) {
        if (++entries > limits.maxFiles) throw limitErrors.files(limits);
        const name = raw.toString("utf8");
        const path = folder ? `${folder}/${name}` : name;
        if (Buffer.byteLength(path) > limits.maxPathLength) throw limitErrors.pathLength(limits, path);
        // A name that is not UTF-8 cannot be written into a receipt, a manifest or a zip as it is.
        const problem = Buffer.from(name).equals(raw) ? segmentProblem(name) : "a name that is not UTF-8";
        if (problem) {
          listing.skipped.push({ path, reason: `not copied: ${problem}` });
          continue;
        }
        const stats = await lstat(inside(dir, name), { bigint: true }).catch((e: NodeJS.ErrnoException) => {
          if (e.code === "ENOENT") return undefined;
          throw e;
        });
        if (!stats) {
          listing.skipped.push({ path, reason: "removed while it was being read" });
        } else if (stats.isDirectory()) {
          if (depth + 1 > limits.maxDepth) throw limitErrors.depth(limits, path);
          const child = await openFolderIn(dir, name, path).catch(() => undefined);
          if (!child) {
            listing.skipped.push({ path, reason: CHANGED });
            continue;
          }
          try {
            const opened = await child.stat({ bigint: true });
            if (opened.ino !== stats.ino || opened.dev !== stats.dev) {
              listing.skipped.push({ path, reason: CHANGED });
              continue;
            }
            listing.folders.push(path);
            await visit(child, path, depth + 1);
          } finally {
            await child.close();
          }
        } else if (stats.isFile()) {
          const size = Number(stats.size);
          listing.bytes += size;
          if (listing.bytes > limits.maxBytes) throw limitErrors.bytes(limits, path, size);
          listing.files.push({
            path,
            size,
            executable: (stats.mode & 0o100n) !== 0n,
            mtime: new Date(Number(stats.mtimeMs)),
            ino: stats.ino,
            dev: stats.dev,
          });
        } else {
          listing.skipped.push({ path, reason: `not copied: it is ${kindOf(stats)}` });
        }
      }
    };
    await visit(this.root, "", 0);
    return listing;
  }

  /**
   * Opens a listed file for reading, or says why not: it must still be a regular file with the listed
   * identity and size, reached without a link. The caller closes the handle.
   */
  async openFile(
    file: ListedFile,
  ): Promise<{ handle: FileHandle; stats: BigIntStats } | { changed: string }> {
    const [folder, name] = splitPath(file.path);
    const dir = await openFolderBeneath(this.root, folder).catch(() => undefined);
    if (!dir) return { changed: CHANGED };
    try {
      const handle = await open(inside(dir, name), READ_FLAGS).catch((e: NodeJS.ErrnoException) => {
        if (e.code === "ELOOP") return "link" as const;
        if (e.code === "ENOENT") return undefined;
        throw e;
      });
      if (handle === "link") return { changed: `replaced by ${LINK}` };
      if (!handle) return { changed: "removed while it was being read" };
      const stats = await handle.stat({ bigint: true });
      const same = stats.isFile() && stats.ino === file.ino && stats.dev === file.dev;
      if (!same || Number(stats.size) !== file.size) {
        await handle.close();
        return { changed: same || stats.isFile() ? CHANGED : `replaced by ${kindOf(stats)}` };
      }
      return { handle, stats };
    } finally {
      await dir.close();
    }
  }
}
