/**
 * A small text file the platform writes into a student's folder (the delivery record, a released
 * grade): written beside its name and renamed over it, so a reader never sees half of it and a
 * link planted at its name is replaced, never written through; its folders are made without
 * following a link (beneath.ts).
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { resolve } from "node:path";
import { inside, openFolder, splitPath } from "./beneath.ts";

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY } = constants;

/** Replaces `name` in the open folder `dir` with `text`. */
export async function replaceWithText(dir: FileHandle, name: string, text: string): Promise<void> {
  // Short, so that a name of 255 bytes still has a temporary beside it.
  const temporary = `.userland-${randomBytes(8).toString("hex")}.tmp`;
  const out = await open(inside(dir, temporary), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  let renamed = false;
  try {
    try {
      await out.writeFile(text);
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(inside(dir, temporary), inside(dir, name));
    renamed = true;
  } finally {
    if (!renamed) await unlink(inside(dir, temporary)).catch(() => {});
  }
}

/** Writes `text` as the file at `path`, making its missing folders; returns what was written. */
export async function writeTextFile(
  path: string,
  text: string,
): Promise<{ path: string; bytes: number; sha256: string }> {
  const [folder, name] = splitPath(resolve(path));
  const dir = await openFolder(folder, true);
  try {
    await replaceWithText(dir, name, text);
  } finally {
    await dir.close();
  }
  return {
    path: resolve(path),
    bytes: Buffer.byteLength(text),
    sha256: createHash("sha256").update(text).digest("hex"),
  };
}
