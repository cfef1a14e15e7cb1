/**
 * Work over many items with a bounded number in flight: one sync that writes to hundreds of objects
 * (every student's Submission at a closing time) would take hundreds of round trips one after
 * another, and all at once would swamp the API server.
 */

/**
 * Runs `fn` over `items` with at most `limit` calls in flight. After the first failure no further
 * item is started; the calls already running end, and then the first failure is thrown.
 */
export async function forEachLimited<T>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const iterator = items[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    for (let next = iterator.next(); !next.done && !failure; next = iterator.next()) {
      try {
        await fn(next.value);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
  if (failure) throw failure.error;
}
