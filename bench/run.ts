/**
 * How a benchmark script runs its measurements: a failure is printed and makes the exit code 1,
 * `cleanup` (clusters, relays, files) runs either way, and the process then exits, since handles
 * a failed step left open would keep it alive.
 */
export async function runBench(
  name: string,
  cleanup: () => Promise<void>,
  measure: () => Promise<void>,
): Promise<never> {
  try {
    await measure();
  } catch (error) {
    console.error(`${name} failed:`, error);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
  process.exit(process.exitCode ?? 0);
}
