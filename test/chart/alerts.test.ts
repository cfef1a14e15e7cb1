/**
 * The chart's PrometheusRule as Prometheus reads it: `promtool check rules` on the rendered rule
 * groups, and `promtool test rules` with alerts.promtool.yaml, where every alert has a test that
 * fires it from series and one that keeps it quiet. Each alert's tests are shown able to fail: with
 * its expression made never true, its firing tests fail; made always true, its quiet tests fail.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parse, stringify } from "yaml";
import { promtool } from "./promtool.ts";
import { parseManifests, renderChart } from "./support.ts";

interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleGroup {
  name: string;
  rules: AlertingRule[];
}
interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts?: unknown[];
}
interface UnitTest {
  name: string;
  alert_rule_test?: AlertTest[];
  [key: string]: unknown;
}
interface UnitTestFile {
  rule_files: string[];
  tests: UnitTest[];
  [key: string]: unknown;
}

const unitTests = parse(
  readFileSync(join(import.meta.dirname, "alerts.promtool.yaml"), "utf8"),
) as UnitTestFile;

let dir: string;
let groups: RuleGroup[];
let alerts: string[];

before(async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", { monitoring: { prometheusRule: { enabled: true } } }),
  );
  const rule = objects.find((o) => o.kind === "PrometheusRule");
  assert.ok(rule, "the PrometheusRule is rendered");
  groups = (rule.spec as { groups: RuleGroup[] }).groups;
  alerts = groups.flatMap((g) => g.rules.map((r) => r.alert));
  dir = mkdtempSync(join(tmpdir(), "userland-alerts-"));
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs `promtool test rules` on `tests` against `ruleGroups`, both written to the scratch directory. */
async function testRules(name: string, ruleGroups: RuleGroup[], tests: UnitTest[]) {
  writeFileSync(join(dir, `${name}.rules.yaml`), stringify({ groups: ruleGroups }));
  const file = join(dir, `${name}.test.yaml`);
  writeFileSync(file, stringify({ ...unitTests, rule_files: [`${name}.rules.yaml`], tests }));
  return promtool(["test", "rules", file]);
}

/** The tests that check `alert`, each keeping only its checks of `alert` that `which` selects. */
function testsOf(alert: string, which: (t: AlertTest) => boolean): UnitTest[] {
  return unitTests.tests.flatMap((t) => {
    const checks = (t.alert_rule_test ?? []).filter((c) => c.alertname === alert && which(c));
    return checks.length > 0 ? [{ ...t, alert_rule_test: checks }] : [];
  });
}
const fires = (c: AlertTest) => (c.exp_alerts ?? []).length > 0;

/** The rule groups with `alert`'s expression (and wait) replaced. */
function withAlert(alert: string, expr: string): RuleGroup[] {
  return groups.map((g) => ({
    ...g,
    rules: g.rules.map((r) => (r.alert === alert ? { ...r, expr, for: "0s" } : r)),
  }));
}

test("promtool check rules accepts the rendered rule groups", async () => {
  const file = join(dir, "check.rules.yaml");
  writeFileSync(file, stringify({ groups }));
  const result = await promtool(["check", "rules", file]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, new RegExp(`SUCCESS: ${alerts.length} rules found`));
  // --lint-fatal also refuses duplicate rules and other lint findings.
  const lint = await promtool(["check", "rules", "--lint=all", "--lint-fatal", file]);
  assert.equal(lint.code, 0, lint.stdout + lint.stderr);
});

test("every alert has a promtool test that fires it and a scenario that keeps it quiet", () => {
  assert.ok(alerts.length >= 9, `${alerts.length} alerts`);
  for (const alert of alerts) {
    assert.ok(testsOf(alert, fires).length > 0, `${alert} has a test that fires it`);
    // A quiet scenario: a test whose series never fire the alert at any checked time (a firing
    // test's early checks, while the alert is pending, do not count).
    const quiet = unitTests.tests.filter((t) => {
      const checks = (t.alert_rule_test ?? []).filter((c) => c.alertname === alert);
      return checks.length > 0 && !checks.some(fires);
    });
    assert.ok(quiet.length > 0, `${alert} has a test that keeps it quiet`);
  }
  const tested = new Set(unitTests.tests.flatMap((t) => (t.alert_rule_test ?? []).map((c) => c.alertname)));
  assert.deepEqual(
    [...tested].filter((a) => !alerts.includes(a)),
    [],
    "every tested alert is in the chart",
  );
});

test("promtool test rules: every alert fires from its series and stays quiet in the other tests", async () => {
  const result = await testRules("all", groups, unitTests.tests);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /SUCCESS/);
});

test("each alert's tests can fail: never true fails its firing tests, always true its quiet ones", async () => {
  for (const alert of alerts) {
    const never = await testRules(`${alert}-never`, withAlert(alert, "vector(1) < 0"), testsOf(alert, fires));
    assert.notEqual(never.code, 0, `${alert}: the firing tests fail when it never fires`);
    assert.match(never.stdout + never.stderr, new RegExp(`alertname: ${alert}`));
    const always = await testRules(
      `${alert}-always`,
      withAlert(alert, "vector(1) > 0"),
      testsOf(alert, (c) => !fires(c)),
    );
    assert.notEqual(always.code, 0, `${alert}: the quiet tests fail when it always fires`);
    assert.match(always.stdout + always.stderr, new RegExp(`alertname: ${alert}`));
  }
});
