/**
 * promtool, built from Prometheus's Go module on demand (cluster/onDemandTools.ts), for the
 * monitoring tests: it parses PromQL and checks rules and /metrics pages as Prometheus itself does,
 * so no PromQL is read by hand here.
 */
import { join } from "node:path";
import { onDemandBinDir } from "../../cluster/onDemandTools.ts";
import { run, type RunResult } from "./support.ts";

let binary: Promise<string> | undefined;

export async function promtool(args: string[], input?: string): Promise<RunResult> {
  binary ??= onDemandBinDir().then((dir) => join(dir, "promtool"));
  return run(await binary, args, { input });
}

/** A label that no expression uses, set on every selector to find the selectors in promtool's output. */
const MARK = "userland_selector_mark";

/**
 * The metric names an expression's selectors read, found by Prometheus's own parser: promtool
 * sets a marker label matcher on every vector and matrix selector and prints the expression
 * back, so each `name{…marker…}` in the output is one selector (label names and values,
 * functions and grouping lists never get the marker). Rejects an expression promtool cannot parse.
 */
export async function selectorNames(expr: string): Promise<string[]> {
  const result = await promtool(["promql", "label-matchers", "set", "--experimental", expr, MARK, "x"]);
  if (result.code !== 0) throw new Error(`promtool cannot parse ${JSON.stringify(expr)}: ${result.stderr}`);
  const names = new Set<string>();
  for (const m of result.stdout.matchAll(
    new RegExp(`([a-zA-Z_:][\\w:]*)?\\{([^{}]*\\b${MARK}="x"[^{}]*)\\}`, "g"),
  )) {
    // A selector without a name before its braces names its metric with __name__ (or none).
    const name = m[1] ?? /__name__="([^"]+)"/.exec(m[2] ?? "")?.[1];
    names.add(name ?? "");
  }
  return [...names];
}

/**
 * The series names a /metrics page (Prometheus text format) declares, from its TYPE lines: a
 * family is declared even before it has samples (a counter with labels nothing has counted yet).
 */
export function exportedSeries(exposition: string): Set<string> {
  const series = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = "", type] = m;
    series.add(name);
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) series.add(name + s);
    if (type === "summary") for (const s of ["_sum", "_count"]) series.add(name + s);
  }
  return series;
}
