/**
 * The chart's Grafana dashboard (charts/userland/dashboards/userland.json) as its queries: read by
 * test/chart/metrics.test.ts (each names an exported metric) and run against a real Prometheus by
 * test/node/platform.test.ts (each panel shows a live class's data).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chartDir } from "./support.ts";

interface Target {
  expr?: string;
}
interface Panel {
  title?: string;
  type: string;
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query?: string } }[] };
}

export const dashboardFile = join(chartDir, "dashboards", "userland.json");
export const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as Dashboard;

/** One query of the dashboard: `where` names it, `panel` is its panel's title (none for a variable). */
export interface DashboardQuery {
  where: string;
  panel?: string;
  expr: string;
}

/** Every query of the dashboard, named by where it is. */
export function dashboardQueries(): DashboardQuery[] {
  const queries: DashboardQuery[] = [];
  const walk = (panels: Panel[]) => {
    for (const panel of panels) {
      if (panel.type === "row") {
        walk(panel.panels ?? []);
        continue;
      }
      assert.ok(panel.targets?.length, `panel "${panel.title}" has a query`);
      for (const [i, target] of (panel.targets ?? []).entries()) {
        assert.ok(target.expr, `panel "${panel.title}" query ${i} has an expression`);
        queries.push({ where: `panel "${panel.title}"`, panel: panel.title ?? "", expr: target.expr });
      }
    }
  };
  walk(dashboard.panels);
  for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
    const q = typeof variable.query === "string" ? variable.query : variable.query?.query;
    assert.ok(q, `variable ${variable.name} has a query`);
    queries.push({ where: `variable $${variable.name}`, expr: q });
  }
  return queries;
}

/**
 * A Grafana query as the PromQL Grafana sends: its range variables become `range` (a duration),
 * a variable's label_values(selector, label) is the selector whose series it lists, and the
 * dashboard's own variables take `variables`' values (left as they are when not given: PromQL
 * takes "$namespace" inside a label value as it is).
 */
export function promqlOf(query: string, range = "5m", variables: Record<string, string> = {}): string {
  let promql = query
    .replace(/\$__(rate_interval|interval|range)\b/g, range)
    .replace(/^label_values\((.*),\s*[a-zA-Z_]\w*\)$/, "$1");
  for (const [name, value] of Object.entries(variables)) promql = promql.replaceAll(`$${name}`, value);
  return promql;
}
