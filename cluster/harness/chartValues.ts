/**
 * Settings the harness takes from the chart's values.yaml, so what the benchmarks and the soak
 * measure is what the chart deploys.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { repoRoot } from "../repoRoot.ts";

/** The proxy's Node.js options as the chart sets them (NODE_OPTIONS from proxy.nodeOptions), split. */
export function chartProxyNodeOptions(): string[] {
  const values = parse(readFileSync(join(repoRoot, "charts", "userland", "values.yaml"), "utf8")) as {
    proxy?: { nodeOptions?: string };
  };
  return (values.proxy?.nodeOptions ?? "").split(/\s+/).filter(Boolean);
}
