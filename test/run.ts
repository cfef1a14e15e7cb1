/**
 * The one test command (`npm test`): starts a real control plane once for the whole run, runs every
 * test file with node's test runner against it, and tears the control plane down at the end, also
 * when the run is interrupted. Arguments are passed to `node --test` (e.g. a file to run alone).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ControlPlane, repoRoot } from "./cluster/controlPlane.ts";
import { CLUSTER_INFO_ENV } from "./support/cluster.ts";
import { writeFileSync } from "node:fs";

const defaultPatterns = [
  "test/**/*.test.ts",
  "operator/**/*.test.ts",
  "services/**/*.test.ts",
  "lib/**/*.test.ts",
  "api/**/*.test.ts",
];

const args = process.argv.slice(2);
const patterns = args.filter((a) => !a.startsWith("-"));
const flags = args.filter((a) => a.startsWith("-"));

// USERLAND_TEST_CLUSTER_DIR lets two test runs in one checkout keep their control planes apart.
const controlPlane = new ControlPlane({
  dir: process.env.USERLAND_TEST_CLUSTER_DIR ?? join(repoRoot, ".userland", "test-cluster"),
});
let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await controlPlane
      .stop({ keepFiles: code !== 0 })
      .catch((e: unknown) => console.error("stopping control plane:", e));
  }
  process.exit(code);
}

const info = await controlPlane.start().catch(async (error: unknown) => {
  console.error(`could not start the test control plane: ${(error as Error).message}`);
  return shutdown(1);
});
const infoFile = join(controlPlane.dir, "cluster.json");
writeFileSync(infoFile, JSON.stringify(info, null, 2));

const child = spawn(
  process.execPath,
  [
    "--test",
    "--test-reporter=spec",
    `--test-concurrency=${process.env.TEST_CONCURRENCY ?? "2"}`,
    "--test-timeout=600000",
    ...flags,
    ...(patterns.length > 0 ? patterns : defaultPatterns),
  ],
  { stdio: "inherit", cwd: repoRoot, env: { ...process.env, [CLUSTER_INFO_ENV]: infoFile } },
);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    child.kill(signal);
    void shutdown(130);
  });
}
child.on("exit", (code, signal) => void shutdown(code ?? (signal ? 1 : 0)));
