/** The checkout's root directory: where the harness, the tests, the benchmarks and the scripts find the project's files. */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
