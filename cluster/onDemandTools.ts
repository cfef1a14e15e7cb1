/**
 * The Go tools cluster/build.sh leaves out of its default set (its on_demand list): Prometheus
 * (prometheus, promtool) and Traefik, about a third of a cold build, which four test files use.
 * npm test's set-up builds them (scripts/bootstrap.sh test); test/run.ts run without it starts their
 * build beside its first test files (startOnDemandBuild) and runs those files once it has ended. A
 * file asks for the tools' directory here and, while a build runs, waits for it (build.sh's lock).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./repoRoot.ts";

const buildScript = join(repoRoot, "cluster", "build.sh");

/** The directory with the on-demand tools' binaries (traefik, prometheus, promtool), built if need be. */
export async function onDemandBinDir(): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", [buildScript, "--on-demand"], {
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: unknown) => {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`cluster/build.sh --on-demand failed:\n${stderr.split("\n").slice(-20).join("\n")}`);
  });
  return stdout.trim().split("\n").pop() ?? "";
}

/**
 * Starts building the on-demand tools in the background, niced below the tests beside it, with its
 * progress in `log`. The caller stops it (kill) when the run ends first.
 */
export function startOnDemandBuild(log: number, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn("nice", ["-n", "10", "bash", buildScript, "--on-demand"], {
    stdio: ["ignore", "ignore", log],
    env,
    detached: true, // a process group of its own, so that stopping it stops its go commands too
  });
}
