/**
 * Reads a listed file exactly once: its bytes flow to one consumer (a file being written, a zip entry)
 * and into a SHA-256 on the way, so the hash is the hash of the bytes the consumer got. A file that a
 * student changes meanwhile is detected (size, modification and change times before and after, more
 * bytes than listed) and reported as changed; at most the listed size is ever passed on, so a growing
 * file cannot push a copy past its limit.
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { ListedFile, Opened, Tree } from "./walk.ts";

export interface ReadResult {
  /** Bytes passed on. */
  bytes: number;
  /** SHA-256 (hex) of exactly those bytes. */
  sha256: string;
  /** Why what was passed on may not be the file as listed; undefined when it is. */
  changed?: string;
  /**
   * The file's change time (ctime, ms) when it was opened: the last write or metadata change before
   * the bytes read. A student can set a file's mtime back (touch -d); its ctime only the kernel sets.
   */
  changedAtMs?: number;
}

const CHUNK = 256 * 1024;

/**
 * `stream` yields the file's bytes (opened on the first read); `result` settles once the stream has
 * ended, or rejects with the stream's error.
 */
export function readListed(
  tree: Tree,
  file: ListedFile,
  /** The file opened ahead (archive.ts), else it is opened on the first read. */
  openedAhead?: Promise<Opened>,
): { stream: Readable; result: Promise<ReadResult> } {
  let started = false;
  let settle!: (result: ReadResult) => void;
  let fail!: (error: unknown) => void;
  const result = new Promise<ReadResult>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  // A failure is the stream's error, which its consumer sees; `result` must not be an unhandled one too.
  result.catch(() => {});
  async function* chunks(): AsyncGenerator<Buffer> {
    const hash = createHash("sha256");
    let bytes = 0;
    started = true;
    const opened = await (openedAhead ?? tree.openFile(file));
    if ("changed" in opened) {
      settle({ bytes, sha256: hash.digest("hex"), changed: opened.changed });
      return;
    }
    const { handle, stats: before } = opened;
    let changed: string | undefined;
    try {
      // One byte more than listed is asked for: a file that grew says so without another read.
      let grew = false;
      for (;;) {
        const remaining = file.size - bytes;
        const want = Math.min(CHUNK, remaining + 1);
        const buffer = Buffer.allocUnsafe(want);
        const { bytesRead } = await handle.read(buffer, 0, want, bytes);
        grew = bytesRead > remaining;
        const take = Math.min(bytesRead, remaining);
        if (take > 0) {
          const chunk = buffer.subarray(0, take);
          hash.update(chunk);
          bytes += take;
          yield chunk;
        }
        // A regular file's read returns less than asked only at its end.
        if (grew || bytesRead < want) break;
      }
      const after = await handle.stat({ bigint: true });
      if (bytes < file.size)
        changed = `became shorter while it was being read (${bytes} of ${file.size} bytes)`;
      else if (grew || after.size !== before.size) changed = "grew while it was being read";
      else if (after.mtimeNs !== before.mtimeNs || after.ctimeNs !== before.ctimeNs) {
        changed = "changed while it was being read";
      }
    } catch (error) {
      fail(error);
      throw error;
    } finally {
      await handle.close();
    }
    settle({
      bytes,
      sha256: hash.digest("hex"),
      changedAtMs: Number(before.ctimeNs / 1_000_000n),
      ...(changed ? { changed: `${changed} (save your work and try again)` } : {}),
    });
  }
  const stream = Readable.from(chunks(), { objectMode: false, highWaterMark: CHUNK });
  stream.once("error", fail);
  // Destroyed by its consumer before the end: the result says so instead of never settling.
  stream.once("close", () => {
    fail(new Error(`reading ${file.path} stopped before its end`));
    if (!started)
      void openedAhead?.then((o) => ("handle" in o ? o.handle.close() : undefined)).catch(() => {});
  });
  return { stream, result };
}
