/**
 * Open folders of a Tree, kept for reuse: reading 10,000 files otherwise opens and closes every
 * folder of every path again (a system call each, about half of a small file's cost). A folder is
 * closed only when no one uses it (its fd number, once closed, may name another file, and the paths
 * built from it with it), and at most `max` unused ones stay open.
 */
import type { FileHandle } from "node:fs/promises";

interface Entry {
  opened: Promise<FileHandle>;
  users: number;
}

export class FolderCache {
  private readonly entries = new Map<string, Entry>();
  private readonly open: (folder: string, create: boolean) => Promise<FileHandle>;
  private readonly max: number;

  constructor(open: (folder: string, create: boolean) => Promise<FileHandle>, max = 32) {
    this.open = open;
    this.max = max;
  }

  /** Runs `use` with the folder open; a failed open is not kept (the next use tries again). */
  async with<T>(folder: string, create: boolean, use: (dir: FileHandle) => Promise<T>): Promise<T> {
    let entry = this.entries.get(folder);
    if (entry) this.entries.delete(folder);
    else entry = { opened: this.open(folder, create), users: 0 };
    // Last in the map: the most recently used.
    this.entries.set(folder, entry);
    entry.users++;
    try {
      const dir = await entry.opened.catch((error: unknown) => {
        if (this.entries.get(folder) === entry) this.entries.delete(folder);
        throw error;
      });
      return await use(dir);
    } finally {
      entry.users--;
      await this.trim();
    }
  }

  private async trim(): Promise<void> {
    for (const [folder, entry] of this.entries) {
      if (this.entries.size <= this.max) return;
      if (entry.users > 0) continue;
      this.entries.delete(folder);
      await close(entry);
    }
  }

  /** Closes every folder; nothing may be in use. */
  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map(close));
  }
}

async function close(entry: Entry): Promise<void> {
  const dir = await entry.opened.catch(() => undefined);
  await dir?.close();
}
