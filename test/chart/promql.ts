/**
 * Just enough PromQL and Prometheus text format to check that a dashboard or an alert names only
 * metrics the components export: the metric names in an expression, and the series names a
 * /metrics page declares.
 */

/** PromQL's functions, aggregations and keywords: names in an expression that are no metric. */
const NOT_METRICS = new Set([
  ...["sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile"],
  ...["count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right"],
  ...["and", "or", "unless", "bool", "offset", "vector", "scalar", "rate", "irate", "increase"],
  ...["delta", "idelta", "deriv", "histogram_quantile", "label_values", "label_replace"],
  ...["time", "abs", "absent", "clamp_min", "clamp_max", "round", "inf", "nan"],
]);

/**
 * The metric names an expression reads. Strings, label matchers, ranges and grouping lists are
 * removed first, so that label names and values are not taken for metrics.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    // Grafana's label_values(metric, label): the second argument is a label.
    .replace(/\blabel_values\(([^,)]*),[^)]*\)/g, "$1")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w$.])([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)) {
    const name = m[1] ?? "";
    if (!NOT_METRICS.has(name.toLowerCase())) names.add(name);
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
