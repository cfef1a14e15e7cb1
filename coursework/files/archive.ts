/**
 * Streams a folder as a zip (students on Windows and macOS open it without installing anything),
 * written by yazl: entries are stored or deflated as they are read, ZIP64 is used where sizes or the
 * count need it, and no file is ever held in memory as a whole. The folder is walked first (walk.ts),
 * so a folder over a limit fails before the first byte is written; every entry name is checked by
 * names.ts before yazl sees it (yazl itself turns a backslash into a folder separator).
 *
 * A file that changes while being read is still in the zip (its entry is already begun), with the
 * bytes read up to its listed size, and the summary lists it under `changed`.
 */
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ZipFile } from "yazl";
import type { Limits } from "../../api/copyPrograms.ts";
import { byPath, manifestHash, type FileRecord } from "./manifest.ts";
import { checkEntryPath } from "./names.ts";
import { readListed, type ReadResult } from "./read.ts";
import { Tree, type Listing, type Opened, type Skipped } from "./walk.ts";

/** Files opened ahead of the one being written. */
const OPEN_AHEAD = 8;

export interface ArchiveSummary {
  /** Every file in the zip with the size and SHA-256 of its entry's bytes, sorted by path. */
  files: FileRecord[];
  bytes: number;
  /** manifest.ts's hash of `files`: the same as a hand-in receipt's for the same files. */
  sha256: string;
  skipped: Skipped[];
  /** Files whose entry may not be the file as listed, and why. */
  changed: Skipped[];
}

/** A zip being written to `output`; every name passes names.ts first. */
export class ZipWriter {
  private readonly zip = new ZipFile();
  private readonly compress: boolean;
  private readonly failed: Promise<never>;
  private fail!: (error: unknown) => void;

  constructor(compress = true) {
    this.compress = compress;
    this.failed = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    this.failed.catch(() => {});
    this.zip.on("error", (error: unknown) => this.fail(error));
  }

  addFolder(path: string, mtime: Date): void {
    this.zip.addEmptyDirectory(`${checkEntryPath(path)}/`, { mtime, mode: 0o40755 });
  }

  /** `open` is called when the entry's turn comes, so at most one file is open at a time. */
  addFile(path: string, options: { mtime: Date; executable: boolean }, open: () => Readable): void {
    this.zip.addReadStreamLazy(
      checkEntryPath(path),
      { mtime: options.mtime, mode: options.executable ? 0o100755 : 0o100644, compress: this.compress },
      (callback) => {
        const stream = open();
        // yazl pipes the stream without listening for its errors: a failed read fails the zip.
        stream.once("error", (error) => this.fail(error));
        callback(null, stream);
      },
    );
  }

  /** Ends the zip and resolves once `output` has taken all of it; rejects on the first failure. */
  async finish(output: Writable): Promise<void> {
    const written = pipeline(this.zip.outputStream as Readable, output);
    this.zip.end();
    await Promise.race([written, this.failed]);
  }
}

/**
 * Adds a walked folder's entries to `writer` under `prefix` (e.g. "students/ada/home/"; "" for the
 * root). The files are read when the zip reaches them; `collect` (after `writer.finish`) gives each
 * file's record, paths relative to the folder, so its manifest hash is a receipt's for the same files.
 */
export function addTree(
  writer: ZipWriter,
  tree: Tree,
  listing: Listing,
  prefix: string,
  mtime: Date,
  /** The name in the zip (and in the records) of a path of the folder; default: the path itself. */
  entryName: (path: string) => string = (path) => path,
): { collect: () => Promise<{ files: FileRecord[]; changed: Skipped[] }>; closeAhead: () => Promise<void> } {
  for (const folder of listing.folders) writer.addFolder(`${prefix}${entryName(folder)}`, mtime);
  const reads: Promise<{ path: string; read: ReadResult }>[] = [];
  // yazl takes one entry at a time: the next files are opened (and checked) while one is written,
  // else each small file waits for its own open and fstat in turn.
  const ahead = new Map<number, Promise<Opened>>();
  const openAhead = (from: number) => {
    for (let i = from; i < Math.min(from + OPEN_AHEAD, listing.files.length); i++) {
      if (!ahead.has(i)) ahead.set(i, tree.openFile(listing.files[i]!));
    }
  };
  listing.files.forEach((file, i) => {
    writer.addFile(`${prefix}${entryName(file.path)}`, file, () => {
      openAhead(i);
      const opened = ahead.get(i)!;
      ahead.delete(i);
      const { stream, result } = readListed(tree, file, opened);
      reads.push(result.then((read) => ({ path: entryName(file.path), read })));
      return stream;
    });
  });
  return {
    closeAhead: async () => {
      for (const opened of ahead.values()) {
        await opened.then((o) => ("handle" in o ? o.handle.close() : undefined)).catch(() => {});
      }
    },
    collect: async () => {
      const files: FileRecord[] = [];
      const changed: Skipped[] = [];
      for (const { path, read } of await Promise.all(reads)) {
        files.push({ path, bytes: read.bytes, sha256: read.sha256 });
        if (read.changed) changed.push({ path, reason: read.changed });
      }
      files.sort(byPath);
      return { files, changed };
    },
  };
}

export async function archiveTree(
  root: string,
  limits: Limits,
  output: Writable,
  options: {
    compress?: boolean;
    /** Top-level folders named otherwise in the zip (and its summary): a hand-ins zip's students. */
    topFolderNames?: ReadonlyMap<string, string>;
  } = {},
): Promise<ArchiveSummary> {
  const tree = await Tree.open(root);
  try {
    const listing = await tree.walk(limits);
    const writer = new ZipWriter(options.compress ?? true);
    const names = options.topFolderNames;
    const renamed = (path: string) => {
      const slash = path.indexOf("/");
      const top = slash < 0 ? path : path.slice(0, slash);
      const name = names?.get(top);
      return name === undefined ? path : name + (slash < 0 ? "" : path.slice(slash));
    };
    const added = addTree(writer, tree, listing, "", new Date(), names ? renamed : undefined);
    try {
      await writer.finish(output);
    } finally {
      await added.closeAhead();
    }
    const { files, changed } = await added.collect();
    return {
      files,
      bytes: files.reduce((sum, f) => sum + f.bytes, 0),
      sha256: manifestHash(files),
      skipped: listing.skipped,
      changed,
    };
  } finally {
    await tree.close();
  }
}
