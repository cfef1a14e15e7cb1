/**
 * A class's archive at the end of a term (docs/decisions/0011-coursework.md, "End of term"): every
 * student's volumes and the class's hand-ins as one stored zip written into the collection, with a
 * manifest beside it (per folder: files, bytes, the manifest hash a receipt would show, and whether
 * anything of the student's was left out), then read back by a second pod that recomputes each
 * folder's hash from the zip's own bytes. The operator deletes a student's volumes only when their
 * folders were complete and read back equal.
 *
 * The folders are walked and read exactly as a hand-in or a download is (walk.ts, read.ts,
 * archive.ts): no link is followed, FIFOs, sockets and devices are skipped, names are checked. What a
 * download may leave out silently cannot be left out here: an unreadable file, one that changed while
 * read or a name no zip can hold marks the folder incomplete, so its student is kept.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { open, readFile, rename, writeFile, type FileHandle } from "node:fs/promises";
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32 } from "node:zlib";
import { addTree, ZipWriter } from "./archive.ts";
import { LimitError } from "./limits.ts";
import type { Limits } from "../../api/copyPrograms.ts";
import { byPath, manifestHash, type FileRecord } from "./manifest.ts";
import { checkEntryPath } from "./names.ts";
import { holdsNoData, Tree, type Skipped } from "./walk.ts";

/** A folder to archive: `path` on this machine, `name` its folder in the zip (e.g. students/ada/home). */
export interface ClassFolder {
  name: string;
  path: string;
}

export interface FolderResult {
  name: string;
  files: number;
  bytes: number;
  /** manifest.ts's hash of the files as written (absent when the folder could not be archived). */
  sha256?: string;
  /** Why the folder is not complete in the zip: its student's volumes must be kept. */
  problem?: string;
}

export interface ClassManifest {
  version: 1;
  folders: FolderResult[];
}

export interface WriteResult {
  folders: number;
  incomplete: { name: string; problem: string }[];
  files: number;
  bytes: number;
  /** SHA-256 of the manifest file's bytes: the verifier refuses any other manifest. */
  manifestSha256: string;
}

const describe = (lost: Skipped[]): string => {
  const [first] = lost;
  return `${lost.length} ${lost.length === 1 ? "entry" : "entries"} could not be archived (${first?.path}: ${first?.reason})`;
};

/**
 * Writes `folders` as one stored zip to `zipPath` and the manifest to `manifestPath`, each built
 * under a temporary name, synced and renamed into place. A folder that cannot be walked (missing,
 * behind a link, over `limits`) is listed with its problem and left out; the others still go in.
 */
export async function writeClassArchive(
  folders: readonly ClassFolder[],
  limits: Limits,
  zipPath: string,
  manifestPath: string,
): Promise<WriteResult> {
  const names = new Set<string>();
  for (const f of folders) {
    if (checkEntryPath(f.name) !== f.name || names.has(f.name))
      throw new Error(`folder name ${JSON.stringify(f.name)} is invalid or repeated`);
    names.add(f.name);
  }
  const writer = new ZipWriter(false);
  const now = new Date();
  const trees: Tree[] = [];
  const parts: {
    name: string;
    problem?: string;
    skipped: Skipped[];
    added?: ReturnType<typeof addTree>;
  }[] = [];
  try {
    for (const folder of folders) {
      let tree: Tree | undefined;
      try {
        tree = await Tree.open(folder.path);
        trees.push(tree);
        const listing = await tree.walk(limits);
        writer.addFolder(folder.name, now);
        parts.push({
          name: folder.name,
          skipped: listing.skipped,
          added: addTree(writer, tree, listing, `${folder.name}/`, now),
        });
      } catch (error) {
        const message = (error as Error).message;
        parts.push({
          name: folder.name,
          skipped: [],
          problem: error instanceof LimitError ? `over a limit: ${message}` : message,
        });
      }
    }
    const partial = `${zipPath}.partial`;
    try {
      // flush: synced before it is closed, so the rename below publishes bytes that are on disk.
      await writer.finish(createWriteStream(partial, { mode: 0o440, flush: true }));
    } finally {
      for (const p of parts) await p.added?.closeAhead();
    }
    const results: FolderResult[] = [];
    for (const p of parts) {
      if (!p.added) {
        results.push({ name: p.name, files: 0, bytes: 0, problem: p.problem ?? "not archived" });
        continue;
      }
      const { files, changed } = await p.added.collect();
      const lost = [...p.skipped.filter((s) => !holdsNoData(s)), ...changed];
      results.push({
        name: p.name,
        files: files.length,
        bytes: files.reduce((sum, f) => sum + f.bytes, 0),
        sha256: manifestHash(files),
        ...(lost.length > 0 ? { problem: describe(lost) } : {}),
      });
    }
    const manifest = `${JSON.stringify({ version: 1, folders: results } satisfies ClassManifest)}\n`;
    await writeFile(`${manifestPath}.partial`, manifest, { mode: 0o440, flush: true });
    await rename(`${manifestPath}.partial`, manifestPath);
    await rename(partial, zipPath);
    return {
      folders: results.length,
      incomplete: results.flatMap((r) => (r.problem ? [{ name: r.name, problem: r.problem }] : [])),
      files: results.reduce((sum, r) => sum + r.files, 0),
      bytes: results.reduce((sum, r) => sum + r.bytes, 0),
      manifestSha256: createHash("sha256").update(manifest).digest("hex"),
    };
  } finally {
    for (const tree of trees) await tree.close().catch(() => {});
  }
}

export interface VerifyResult {
  folders: number;
  verified: number;
  /** Folders not verified, and why (incomplete when written, or read back different). */
  unverified: { name: string; reason: string }[];
  entries: number;
  /** The zip file's size and SHA-256 as read back. */
  bytes: number;
  sha256: string;
}

export class ArchiveFormatError extends Error {}

interface Entry {
  name: string;
  crc: number;
  size: number;
  offset: number;
}

const LOCAL = 0x04034b50;
const CENTRAL = 0x02014b50;
const END = 0x06054b50;
const END64 = 0x06064b50;
const LOCATOR64 = 0x07064b50;
const MAX16 = 0xffff;
const MAX32 = 0xffffffff;

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  if (bytesRead !== length) throw new ArchiveFormatError(`the zip ends early (at ${position + bytesRead})`);
  return buffer;
}

const u64 = (b: Buffer, at: number): number => {
  const value = b.readBigUInt64LE(at);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ArchiveFormatError("a size beyond 2^53");
  return Number(value);
};

/** The central directory's entries (ZIP64 included). Only stored, unencrypted entries are accepted. */
async function centralDirectory(file: FileHandle, size: number): Promise<Entry[]> {
  const tailLength = Math.min(size, 22 + MAX16);
  const tail = await readAt(file, size - tailLength, tailLength);
  let end = -1;
  for (let i = tailLength - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === END) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new ArchiveFormatError("no end of central directory: not a zip");
  let count = tail.readUInt16LE(end + 10);
  let cdSize = tail.readUInt32LE(end + 12);
  let cdOffset = tail.readUInt32LE(end + 16);
  if (count === MAX16 || cdSize === MAX32 || cdOffset === MAX32) {
    const locatorAt = size - tailLength + end - 20;
    const locator = await readAt(file, locatorAt, 20);
    if (locator.readUInt32LE(0) !== LOCATOR64) throw new ArchiveFormatError("no ZIP64 locator");
    const record = await readAt(file, u64(locator, 8), 56);
    if (record.readUInt32LE(0) !== END64) throw new ArchiveFormatError("no ZIP64 end record");
    count = u64(record, 32);
    cdSize = u64(record, 40);
    cdOffset = u64(record, 48);
  }
  if (cdOffset + cdSize > size) throw new ArchiveFormatError("the central directory lies beyond the file");
  const cd = await readAt(file, cdOffset, cdSize);
  const entries: Entry[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 46 > cd.length || cd.readUInt32LE(at) !== CENTRAL)
      throw new ArchiveFormatError(`central directory entry ${i} is damaged`);
    const flags = cd.readUInt16LE(at + 8);
    const method = cd.readUInt16LE(at + 10);
    const nameLength = cd.readUInt16LE(at + 28);
    const extraLength = cd.readUInt16LE(at + 30);
    const commentLength = cd.readUInt16LE(at + 32);
    let compressed = cd.readUInt32LE(at + 20);
    let size = cd.readUInt32LE(at + 24);
    let offset = cd.readUInt32LE(at + 42);
    const name = cd.toString("utf8", at + 46, at + 46 + nameLength);
    // ZIP64: the fields at their maximum are in the extra field 0x0001, in this order.
    const extra = cd.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
    for (let e = 0; e + 4 <= extra.length;) {
      const id = extra.readUInt16LE(e);
      const length = extra.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let f = e + 4;
        const next = () => {
          const value = u64(extra, f);
          f += 8;
          return value;
        };
        if (size === MAX32) size = next();
        if (compressed === MAX32) compressed = next();
        if (offset === MAX32) offset = next();
      }
      e += 4 + length;
    }
    if (flags & 1) throw new ArchiveFormatError(`${name}: encrypted`);
    if (method !== 0 || compressed !== size)
      throw new ArchiveFormatError(
        `${name}: not stored (method ${method}): a class archive stores its files`,
      );
    entries.push({ name, crc: cd.readUInt32LE(at + 16), size, offset });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** Hashes `length` bytes at `start` of the file: SHA-256 and CRC-32. */
async function hashRange(
  path: string,
  start: number,
  length: number,
): Promise<{ sha256: string; crc: number }> {
  const sha = createHash("sha256");
  let crc = 0;
  if (length > 0) {
    await pipeline(createReadStream(path, { start, end: start + length - 1 }), async (chunks) => {
      for await (const chunk of chunks as AsyncIterable<Buffer>) {
        sha.update(chunk);
        crc = crc32(chunk, crc);
      }
    });
  }
  return { sha256: sha.digest("hex"), crc };
}

async function fileHash(path: string): Promise<string> {
  const sha: Hash = createHash("sha256");
  await pipeline(createReadStream(path), sha);
  return sha.digest("hex");
}

/**
 * Reads the zip at `zipPath` back: every entry through its local header (which must agree with the
 * central directory), its bytes hashed and CRC-checked, and each folder's manifest hash recomputed
 * and compared with the manifest, whose own SHA-256 must be `manifestSha256` (the writer's, as the
 * operator recorded it). A folder is verified only when it was complete and everything matches.
 */
export async function verifyClassArchive(
  zipPath: string,
  manifestPath: string,
  manifestSha256: string,
): Promise<VerifyResult> {
  const manifestBytes = await readFile(manifestPath);
  if (createHash("sha256").update(manifestBytes).digest("hex") !== manifestSha256)
    throw new ArchiveFormatError("the manifest is not the one written with the archive");
  const manifest = JSON.parse(manifestBytes.toString("utf8")) as ClassManifest;
  const records = new Map<string, FileRecord[]>(manifest.folders.map((f) => [f.name, []]));
  const bad = new Map<string, string>();
  const file = await open(zipPath, "r");
  let entries: Entry[];
  let size: number;
  try {
    size = (await file.stat()).size;
    entries = await centralDirectory(file, size);
    for (const entry of entries) {
      const folder = entry.name.endsWith("/") ? entry.name.slice(0, -1) : entry.name;
      checkEntryPath(folder);
      const segments = folder.split("/");
      const owner = segments
        .map((_, i) => segments.slice(0, i + 1).join("/"))
        .find((prefix) => records.has(prefix));
      if (owner === undefined) throw new ArchiveFormatError(`${entry.name}: in no folder of the manifest`);
      const local = await readAt(file, entry.offset, 30);
      if (local.readUInt32LE(0) !== LOCAL) throw new ArchiveFormatError(`${entry.name}: no local header`);
      const nameLength = local.readUInt16LE(26);
      const localName = (await readAt(file, entry.offset + 30, nameLength)).toString("utf8");
      if (localName !== entry.name)
        throw new ArchiveFormatError(`${entry.name}: the local header names ${JSON.stringify(localName)}`);
      if (entry.name.endsWith("/")) continue;
      const start = entry.offset + 30 + nameLength + local.readUInt16LE(28);
      if (start + entry.size > size)
        throw new ArchiveFormatError(`${entry.name}: its data lies beyond the file`);
      const read = await hashRange(zipPath, start, entry.size);
      if (read.crc !== entry.crc) {
        bad.set(owner, `${entry.name.slice(owner.length + 1)}: its CRC-32 does not match`);
        continue;
      }
      records
        .get(owner)!
        .push({ path: entry.name.slice(owner.length + 1), bytes: entry.size, sha256: read.sha256 });
    }
  } finally {
    await file.close();
  }
  const unverified: VerifyResult["unverified"] = [];
  for (const folder of manifest.folders) {
    const files = records.get(folder.name)!.sort(byPath);
    const duplicate = files.some((f, i) => i > 0 && files[i - 1]!.path === f.path);
    const reason =
      folder.problem ??
      bad.get(folder.name) ??
      (duplicate
        ? "a file is in the zip twice"
        : folder.sha256 !== manifestHash(files) ||
            folder.files !== files.length ||
            folder.bytes !== files.reduce((sum, f) => sum + f.bytes, 0)
          ? "the files read back differ from the files written"
          : undefined);
    if (reason) unverified.push({ name: folder.name, reason });
  }
  return {
    folders: manifest.folders.length,
    verified: manifest.folders.length - unverified.length,
    unverified,
    entries: entries.length,
    bytes: size,
    sha256: await fileHash(zipPath),
  };
}

/** Sends a file as it is (a class's zip, served by an archive pod) and returns its size and SHA-256. */
export async function sendFile(path: string, output: Writable): Promise<{ bytes: number; sha256: string }> {
  const sha = createHash("sha256");
  let bytes = 0;
  // Opened (and refused, if missing) before the first byte goes out, so the caller gets the message.
  const file = await open(path, "r");
  await pipeline(
    file.createReadStream(),
    async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        sha.update(chunk);
        bytes += chunk.length;
        yield chunk;
      }
    },
    output,
  );
  return { bytes, sha256: sha.digest("hex") };
}
