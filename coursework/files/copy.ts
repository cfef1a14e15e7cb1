/**
 * copyTree: the hand-in snapshot. Copies a student's folder (walk.ts: no links followed, no FIFOs or
 * devices, limits) into a new folder and returns the receipt: every file with its size and the SHA-256
 * of the bytes written, the manifest's hash (manifest.ts) and what was skipped and why.
 *
 * The copy is built in a hidden folder beside the destination and renamed into place only when it is
 * whole, so a half copy never looks complete; its files and folders are read-only (0444/0555) and
 * synced to disk before the rename. The destination's parent is the platform's (the collection
 * volume), never the student's.
 */
import { randomBytes } from "node:crypto";
import { chmod, lstat, mkdir, open, readdir, rename, rm, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { Limits } from "../../api/copyPrograms.ts";
import { byPath, manifestHash, type FileRecord } from "./manifest.ts";
import { forEachFile } from "./parallel.ts";
import { readListed } from "./read.ts";
import { Tree, type Skipped } from "./walk.ts";
import { kubeTime } from "../../api/times.ts";

export interface Receipt {
  /** Sorted by path (manifest.ts). */
  files: FileRecord[];
  bytes: number;
  /** SHA-256 of the manifest (manifest.ts): checkable with sha256sum. */
  sha256: string;
  skipped: Skipped[];
  /** When the copy started reading (ISO 8601, seconds). */
  startedAt: string;
  /** With a moment: the files written (or their metadata changed) after it, as their change time says. */
  writtenAfter?: string[];
}

export interface CopyOptions {
  /** The hand-in's moment (its request, or the closing time): files changed after it are named. */
  moment?: Date;
  /**
   * Paths the platform itself keeps in the folder (distribution's manifest): not the student's
   * work, so neither copied nor counted in the receipt.
   */
  platformFiles?: readonly string[];
}

/** The destination exists already: a snapshot is written once. */
export class DestinationExistsError extends Error {
  constructor(to: string) {
    super(`${to} exists already; a hand-in copy is written once and never replaced`);
    this.name = "DestinationExistsError";
  }
}

async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function copyTree(
  from: string,
  to: string,
  limits: Limits,
  options: CopyOptions = {},
): Promise<Receipt> {
  const startedAt = kubeTime(new Date());
  const destination = resolve(to);
  if (await lstat(destination).catch(() => undefined)) throw new DestinationExistsError(destination);
  const tree = await Tree.open(from);
  const partial = join(
    dirname(destination),
    `.${basename(destination)}.partial-${randomBytes(6).toString("hex")}`,
  );
  try {
    const listing = await tree.walk(limits);
    await mkdir(partial, { mode: 0o700 });
    // Parents come before their children in the listing.
    for (const folder of listing.folders) await mkdir(join(partial, folder), { mode: 0o700 });
    const skipped = [...listing.skipped];
    const platformFiles = new Set(options.platformFiles ?? []);
    const work = listing.files.filter((file) => !platformFiles.has(file.path));
    const copied = await forEachFile(work, async (file) => {
      const target = join(partial, file.path);
      // O_EXCL: a fresh file of our own in a folder of our own, never an existing one or a link. Mode
      // 0444 from the start: the descriptor writes all the same.
      const out = await open(target, "wx", 0o444);
      const { stream, result } = readListed(tree, file);
      try {
        // writeFile: every byte of the chunk at the current position (a single write may be short).
        for await (const chunk of stream) await out.writeFile(chunk as Buffer);
        await out.sync();
      } finally {
        await out.close();
      }
      return { file, read: await result, target };
    });
    const files: FileRecord[] = [];
    const writtenAfter: string[] = [];
    const momentMs = options.moment?.getTime();
    for (const { file, read, target } of copied) {
      if (read.changed) {
        // A torn file is worse than none: left out, and the receipt says why.
        await unlink(target);
        skipped.push({ path: file.path, reason: `not copied: it ${read.changed}` });
      } else {
        files.push({ path: file.path, bytes: read.bytes, sha256: read.sha256 });
        // Copied as it was when read, which is after the moment: what was there at the moment is gone.
        if (momentMs !== undefined && (read.changedAtMs ?? 0) > momentMs) writtenAfter.push(file.path);
      }
    }
    // Deepest folders first, so each is synced with its final entries before it becomes read-only.
    for (const folder of [...listing.folders].reverse()) {
      await syncFolder(join(partial, folder));
      await chmod(join(partial, folder), 0o555);
    }
    await syncFolder(partial);
    await chmod(partial, 0o555);
    if (await lstat(destination).catch(() => undefined)) throw new DestinationExistsError(destination);
    await rename(partial, destination);
    await syncFolder(dirname(destination));
    files.sort(byPath);
    skipped.sort(byPath);
    return {
      files,
      bytes: files.reduce((sum, f) => sum + f.bytes, 0),
      sha256: manifestHash(files),
      skipped,
      startedAt,
      ...(momentMs !== undefined ? { writtenAfter: writtenAfter.sort() } : {}),
    };
  } catch (error) {
    await removePartial(partial);
    throw error;
  } finally {
    await tree.close();
  }
}

/** Removes a half copy, read-only folders included (a non-root copier needs write rights back). */
async function removePartial(partial: string): Promise<void> {
  const made = async (path: string): Promise<void> => {
    const stats = await lstat(path).catch(() => undefined);
    if (!stats?.isDirectory()) return;
    await chmod(path, 0o700);
    for (const name of await readdir(path)) await made(join(path, name));
  };
  await made(partial);
  await rm(partial, { recursive: true, force: true });
}
