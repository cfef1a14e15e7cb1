/**
 * Walks a student's folder: lists its regular files and folders, records everything else as skipped
 * with the reason, and stops at the first limit passed. Nothing is ever followed or opened through a
 * symbolic link (beneath.ts), a FIFO, socket or device is never opened (opening a FIFO would block),
 * and a listed file is opened later only if it is still the very file that was listed.
 */
import type { BigIntStats } from "node:fs";
import { lstat, open, opendir, type FileHandle } from "node:fs/promises";
import {
  inside,
  NO_PERMISSION,
  openFolder,
  openFolderBeneath,
  openFolderIn,
  READ_FLAGS,
  splitPath,
  UnsafePathError,
} from "./beneath.ts";
import { FolderCache } from "./folders.ts";
import { limitErrors } from "./limits.ts";
import type { Limits } from "../../api/copyPrograms.ts";
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

/** A listed file opened for reading with its stats then, or why it was not. */
export type Opened = { handle: FileHandle; stats: BigIntStats } | { changed: string };

const LINK = "a symbolic link (links are never followed; copy the file itself here)";

/** What a non-regular entry is, in a student's words. */
function kindOf(stats: BigIntStats): string {
  // Each of these is in NO_DATA below.
  if (stats.isSymbolicLink()) return LINK;
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  return "not a regular file";
}

/** Skipped entries that hold no file data (links, FIFOs, sockets, devices): leaving them out loses no work. */
const NO_DATA = new Set(
  [LINK, "a named pipe (FIFO)", "a socket", "a character device", "a block device"].map(
    (kind) => `not copied: it is ${kind}`,
  ),
);

/**
 * Whether leaving `skipped` out of a copy loses none of the student's data. An unreadable file, one
 * that changed while read or a name no archive can hold does: a class's end keeps such a volume.
 */
export const holdsNoData = (skipped: Skipped): boolean => NO_DATA.has(skipped.reason);

const CHANGED = "changed while it was being read (save your work and try again)";

/** A folder opened once: every walk and read happens beneath it. */
export class Tree {
  private readonly root: FileHandle;
  private readonly folders: FolderCache;

  private constructor(root: FileHandle) {
    this.root = root;
    this.folders = new FolderCache((folder, create) => openFolderBeneath(root, folder, create));
  }

  /**
   * Opens `path`; no component of it may be a symbolic link (UnsafePathError). With `create`, missing
   * folders are made.
   */
  static async open(path: string, create = false): Promise<Tree> {
    return new Tree(await openFolder(path, create));
  }

  /**
   * Runs `use` with the folder at `relative` (beneath.ts) open, reused across calls; `create` makes
   * missing folders. `dir` must not be used once `use` has settled.
   */
  async inFolder<T>(relative: string, create: boolean, use: (dir: FileHandle) => Promise<T>): Promise<T> {
    return this.folders.with(relative, create, use);
  }

  async close(): Promise<void> {
    await this.folders.close();
    await this.root.close();
  }

  async walk(limits: Limits): Promise<Listing> {
    const listing: Listing = { files: [], folders: [], skipped: [], bytes: 0 };
    let entries = 0;
    const visit = async (dir: FileHandle, folder: string, depth: number): Promise<void> => {
      // Counted while read: a folder of a million entries stops at the limit, not after all of them.
      const names: Buffer[] = [];
      // Node gives Buffer names for "buffer" (its types allow only text encodings here).
      const options = { encoding: "buffer" } as unknown as { encoding: BufferEncoding };
      for await (const entry of await opendir(`/proc/self/fd/${dir.fd}`, options)) {
        if (++entries > limits.maxFiles) throw limitErrors.files(limits);
        names.push(entry.name as unknown as Buffer);
      }
      names.sort((a, b) => Buffer.compare(a, b));
      for (const raw of names) {
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
          if (e.code === "ENOENT" || e.code === "EACCES") return e.code;
          throw e;
        });
        if (typeof stats === "string") {
          const reason =
            stats === "EACCES" ? `not copied: it ${NO_PERMISSION}` : "removed while it was being read";
          listing.skipped.push({ path, reason });
        } else if (stats.isDirectory()) {
          if (depth + 1 > limits.maxDepth) throw limitErrors.depth(limits, path);
          const child = await openFolderIn(dir, name, path).catch((e: unknown) => {
            if (e instanceof UnsafePathError)
              return e.message.includes(NO_PERMISSION) ? NO_PERMISSION : CHANGED;
            throw e;
          });
          if (typeof child === "string") {
            listing.skipped.push({ path, reason: child === CHANGED ? CHANGED : `not copied: it ${child}` });
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
  async openFile(file: ListedFile): Promise<Opened> {
    const [folder, name] = splitPath(file.path);
    return this.inFolder(folder, false, (dir) => openListed(dir, name, file)).catch((error: unknown) => {
      if (error instanceof UnsafePathError) return { changed: CHANGED };
      throw error;
    });
  }
}

async function openListed(dir: FileHandle, name: string, file: ListedFile): Promise<Opened> {
  const handle = await open(inside(dir, name), READ_FLAGS).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ELOOP") return "link" as const;
    if (e.code === "EACCES") return "denied" as const;
    if (e.code === "ENOENT") return undefined;
    throw e;
  });
  if (handle === "link") return { changed: `was replaced by ${LINK}` };
  if (handle === "denied") return { changed: NO_PERMISSION };
  if (!handle) return { changed: "was removed while it was being read" };
  const stats = await handle.stat({ bigint: true });
  const same = stats.isFile() && stats.ino === file.ino && stats.dev === file.dev;
  if (!same || Number(stats.size) !== file.size) {
    await handle.close();
    return { changed: same || stats.isFile() ? CHANGED : `was replaced by ${kindOf(stats)}` };
  }
  return { handle, stats };
}
