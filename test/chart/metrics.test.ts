/**
 * The Grafana dashboard and the alerts name only metrics the components really export: the whole
 * local platform (dev/platform.ts: each component's real main.ts) is started, every component's
 * /metrics is scraped and passes `promtool check metrics`, and every query of the dashboard
 * (charts/userland/dashboards/userland.json), of the rendered PrometheusRule and of its promtool
 * unit tests (alerts.promtool.yaml) must read series that one of them declares. Prometheus's own
 * parser (promtool) finds the metric names in each query.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { startPlatform, type Platform } from "../../dev/platform.ts";
import { parse } from "yaml";
import { eventually } from "../support/cluster.ts";
import { exportedSeries, promtool, selectorNames } from "./promtool.ts";
import { dashboard, dashboardQueries, promqlOf } from "./dashboard.ts";
import { parseManifests, renderChart } from "./support.ts";

const dir = join(repoRoot, ".userland", `metrics-${randomBytes(3).toString("hex")}`);
let platform: Platform;
/** Each component's /metrics page as scraped. */
const pages = new Map<string, string>();
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
    const page = await response.text();
    pages.set(component, page);
    const series = exportedSeries(page);
    assert.ok(series.size > 0, `${component} declares metrics`);
    byComponent.set(component, series);
    for (const s of series) exported.add(s);
  }
});

after(async () => {
  await platform?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The findings `promtool check metrics` reports on prom-client's default metrics, not ours. */
const PROM_CLIENT_GAUGES =
  /^userland_[a-z_]+_nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

async function unknownMetrics(queries: { where: string; expr: string }[]): Promise<string[]> {
  const problems: string[] = [];
  for (const { where, expr } of queries) {
    const names = await selectorNames(promqlOf(expr));
    if (names.length === 0) problems.push(`${where}: "${expr}" names no metric`);
    for (const name of names.filter((n) => !exported.has(n)))
      problems.push(`${where}: ${name || "a selector without a metric name"} is exported by no component`);
  }
  return problems;
}

test("every component's /metrics page passes promtool check metrics", async () => {
  assert.equal(pages.size, 4);
  for (const [component, page] of pages) {
    const result = await promtool(["check", "metrics"], page);
    // prom-client's process metrics name three gauges *_total (its collectDefaultMetrics, under
    // each component's prefix); they are prom-client's names, so those three findings alone pass.
    const all = (result.stdout + result.stderr).split("\n").filter((l) => l.trim() !== "");
    assert.deepEqual(
      all.filter((l) => !PROM_CLIENT_GAUGES.test(l)),
      [],
      `${component}: promtool check metrics`,
    );
    assert.ok(result.code === 0 || all.length > 0, `${component}: promtool exited ${result.code} silently`);
  }
  // promtool does find problems: a counter without _total is refused.
  const broken = "# HELP broken A counter.\n# TYPE broken counter\nbroken 1\n";
  const refused = await promtool(["check", "metrics"], broken);
  assert.notEqual(refused.code, 0, "promtool check metrics refuses a counter without _total");
  assert.match(refused.stdout + refused.stderr, /_total/);
});

test("every query of the dashboard names a metric a component exports", async () => {
  const queries = dashboardQueries();
  assert.ok(queries.length >= 20, `the dashboard has ${queries.length} queries`);
  assert.deepEqual(await unknownMetrics(queries), []);
  // The check can fail: a query of a metric no component exports is reported.
  assert.deepEqual(
    await unknownMetrics([{ where: "probe", expr: "sum(rate(userland_nothing_total[5m]))" }]),
    ["probe: userland_nothing_total is exported by no component"],
  );
});

test("the dashboard covers environments, proxy, user management and the operator", async () => {
  const used = new Set<string>();
  for (const { expr } of dashboardQueries()) for (const n of await selectorNames(promqlOf(expr))) used.add(n);
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
  assert.deepEqual(await unknownMetrics(queries), []);
});

test("the alerts' promtool unit tests feed only series a component exports (or up)", () => {
  const file = join(repoRoot, "test", "chart", "alerts.promtool.yaml");
  const unitTests = parse(readFileSync(file, "utf8")) as {
    tests: { name: string; input_series?: { series: string }[] }[];
  };
  const names = unitTests.tests.flatMap((t) =>
    (t.input_series ?? []).map((s) => ({
      test: t.name,
      name: /^[a-zA-Z_:][\w:]*/.exec(s.series)?.[0] ?? "",
    })),
  );
  assert.ok(names.length > 0);
  const known = new Set([...exported, "up"]);
  assert.deepEqual(
    names.filter((n) => !known.has(n.name)).map((n) => `${n.test}: ${n.name}`),
    [],
  );
});
