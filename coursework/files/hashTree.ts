/**
 * The receipt hash of a folder as it is now (manifest.ts), without copying it: how a grading pod
 * checks that the hand-in it grades is the one the receipt names.
 */
import { byPath, manifestHash, type FileRecord } from "./manifest.ts";
import type { Limits } from "../../api/copyPrograms.ts";
import { forEachFile } from "./parallel.ts";
import { readListed } from "./read.ts";
import { Tree, type Skipped } from "./walk.ts";

export interface TreeHash {
  sha256: string;
  files: FileRecord[];
  /** Entries that are not in the hash: links, FIFOs, devices, files changed while read. */
  skipped: Skipped[];
}

export async function hashTree(from: string, limits: Limits): Promise<TreeHash> {
  const tree = await Tree.open(from);
  try {
    const listing = await tree.walk(limits);
    const skipped = [...listing.skipped];
    const read = await forEachFile(listing.files, async (file) => {
      const { stream, result } = readListed(tree, file);
      stream.resume();
      return { file, read: await result };
    });
    const files: FileRecord[] = [];
    for (const { file, read: r } of read) {
      if (r.changed) skipped.push({ path: file.path, reason: `it ${r.changed}` });
      else files.push({ path: file.path, bytes: r.bytes, sha256: r.sha256 });
    }
    files.sort(byPath);
    return { sha256: manifestHash(files), files, skipped };
  } finally {
    await tree.close();
  }
}
