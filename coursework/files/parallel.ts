/**
 * Work on many files at once: small files cost system calls more than bytes, and a few in flight
 * keep the thread pool and the disk busy (10,000 files one by one took twice as long).
 */
import pLimit from "p-limit";

/** How many files are read or written at once. */
const FILES_AT_ONCE = 8;

/**
 * `work` for each item, at most FILES_AT_ONCE at a time; results in the items' order. On a failure,
 * waits for the work in flight to end (the caller may then remove what it wrote) and throws the first.
 */
export async function forEachFile<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const limit = pLimit(FILES_AT_ONCE);
  let failed = false;
  const settled = await Promise.allSettled(
    items.map((item) =>
      limit(async () => {
        if (failed) throw new Error("stopped after an earlier failure");
        try {
          return await work(item);
        } catch (error) {
          failed = true;
          throw error;
        }
      }),
    ),
  );
  const failure = settled.find((s) => s.status === "rejected");
  if (failure) throw failure.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<R>).value);
}
