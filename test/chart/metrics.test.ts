/**
 * The Grafana dashboard and the alerts name only metrics the components really export: the whole
 * local platform (dev/platform.ts: each component's real main.ts) is started, every component's
 * /metrics is scraped, and every query of the dashboard (charts/userland/dashboards/userland.json)
 * and of the rendered PrometheusRule must read series that one of them declares.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { startPlatform, type Platform } from "../../dev/platform.ts";
import { eventually } from "../support/cluster.ts";
import { exportedSeries, metricNames } from "./promql.ts";
import { chartDir, parseManifests, renderChart } from "./support.ts";

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

const dashboardFile = join(chartDir, "dashboards", "userland.json");
const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as Dashboard;

/** Every query of the dashboard, named by where it is. */
function dashboardQueries(): { where: string; expr: string }[] {
  const queries: { where: string; expr: string }[] = [];
  const walk = (panels: Panel[]) => {
    for (const panel of panels) {
      if (panel.type === "row") {
        walk(panel.panels ?? []);
        continue;
      }
      assert.ok(panel.targets?.length, `panel "${panel.title}" has a query`);
      for (const [i, target] of (panel.targets ?? []).entries()) {
        assert.ok(target.expr, `panel "${panel.title}" query ${i} has an expression`);
        queries.push({ where: `panel "${panel.title}"`, expr: target.expr });
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

const dir = join(repoRoot, ".userland", `metrics-${randomBytes(3).toString("hex")}`);
let platform: Platform;
/** Every series name any component declares on its /metrics page. */
let exported: Set<string>;
/** The series each component declares, for messages. */
const byComponent = new Map<string, Set<string>>();

/** A component's URL from its log line (every component's admin server listens on port 0 here). */
function urlFromLog(component: string, key: string): string | undefined {
  const log = readFileSync(join(platform.logsDir, `${component}.log`), "utf8");
  return new RegExp(`"${key}":"(http://127\\.0\\.0\\.1:\\d+)"`).exec(log)?.[1];
}

before(async () => {
  platform = await startPlatform({ dir, log: () => undefined });
  const endpoints = {
    operator: await eventually("the operator's admin address", () => urlFromLog("operator", "http")),
    proxy: await eventually("the proxy's admin address", () => urlFromLog("proxy", "adminUrl")),
    auth: await eventually("the auth service's admin address", () => urlFromLog("auth", "adminUrl")),
    "user-manager": await eventually("the user-manager's admin address", () =>
      urlFromLog("user-manager", "adminUrl"),
    ),
  };
  // What Prometheus scrapes is never on the ports browsers reach (the Ingress routes these).
  for (const [component, base] of Object.entries({
    auth: platform.authUrl,
    "user-manager": platform.userManagerUrl,
    proxy: platform.url,
  }))
    assert.doesNotMatch(
      await (await fetch(new URL("/metrics", base), { redirect: "manual" })).text(),
      /^# TYPE userland_/m,
      `${component}'s public port shows no metrics`,
    );
  exported = new Set();
  for (const [component, base] of Object.entries(endpoints)) {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200, `${component} serves /metrics`);
    const series = exportedSeries(await response.text());
    assert.ok(series.size > 0, `${component} declares metrics`);
    byComponent.set(component, series);
    for (const s of series) exported.add(s);
  }
});

after(async () => {
  await platform?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function unknownMetrics(queries: { where: string; expr: string }[]): string[] {
  const problems: string[] = [];
  for (const { where, expr } of queries) {
    const names = metricNames(expr);
    if (names.length === 0) problems.push(`${where}: "${expr}" names no metric`);
    for (const name of names.filter((n) => !exported.has(n)))
      problems.push(`${where}: ${name} is exported by no component`);
  }
  return problems;
}

test("every query of the dashboard names a metric a component exports", () => {
  const queries = dashboardQueries();
  assert.ok(queries.length >= 20, `the dashboard has ${queries.length} queries`);
  assert.deepEqual(unknownMetrics(queries), []);
});

test("the dashboard covers environments, proxy, user management and the operator", () => {
  const used = new Set(dashboardQueries().flatMap(({ expr }) => metricNames(expr)));
  const wanted = [
    "userland_operator_userlands", // environments by phase
    "userland_proxy_starts_total", // starts
    "userland_operator_culled_total", // idle culls
    "userland_proxy_requests_total", // requests/s and errors
    "userland_proxy_upstream_errors_total",
    "userland_proxy_upstream_response_seconds_bucket", // upstream latency
    "userland_proxy_websockets_open",
    "userland_user_manager_http_requests_total", // requests and roster imports
    "userland_user_manager_userlands_created_total",
    "userland_operator_workqueue_depth",
    "userland_operator_reconcile_duration_seconds_bucket",
    "userland_operator_reconcile_total", // reconcile errors
    "userland_operator_leader",
  ];
  assert.deepEqual(
    wanted.filter((m) => !used.has(m)),
    [],
  );
  // The scrape found each component's own metrics, so a component that failed to start is no pass.
  for (const [component, prefix] of Object.entries({
    operator: "userland_operator_",
    proxy: "userland_proxy_",
    auth: "userland_auth_",
    "user-manager": "userland_user_manager_",
  }))
    assert.ok(
      [...(byComponent.get(component) ?? [])].some((s) => s.startsWith(prefix)),
      `${component} exports ${prefix}*`,
    );
});

test("the chart's dashboard ConfigMap carries the dashboard file unchanged", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", { monitoring: { dashboards: { enabled: true } } }),
  );
  const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "userland-dashboards");
  assert.ok(configMap, "the dashboards ConfigMap is rendered");
  assert.equal(configMap.metadata.labels?.grafana_dashboard, "1");
  const data = configMap.data as Record<string, string>;
  assert.deepEqual(JSON.parse(data["userland.json"] ?? ""), dashboard);
  const off = parseManifests(await renderChart("userland", "ide"));
  assert.equal(off.filter((o) => o.metadata.name === "userland-dashboards").length, 0, "off by default");
});

test("every alert names only metrics a component exports (or the scrape's own up)", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", { monitoring: { prometheusRule: { enabled: true } } }),
  );
  const rule = objects.find((o) => o.kind === "PrometheusRule");
  assert.ok(rule, "the PrometheusRule is rendered");
  const groups = (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups;
  const queries = groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
  exported.add("up"); // Prometheus's own series for every scraped target
  assert.deepEqual(unknownMetrics(queries), []);
});
