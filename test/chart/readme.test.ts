/**
 * charts/userland/README.md's table of values is the one scripts/chartReadme.ts generates from
 * values.yaml and values.schema.json (run `npm run generate` after changing a value), like the CRDs.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { README, generatedReadme, valueRows } from "../../scripts/chartReadme.ts";
import { chartDir } from "./support.ts";

const valuesYaml = readFileSync(join(chartDir, "values.yaml"), "utf8");
const schemaJson = readFileSync(join(chartDir, "values.schema.json"), "utf8");

/** Every value's dotted key: the leaves of values.yaml (a non-empty map is no value of its own). */
function leafKeys(value: unknown, path: string[] = []): string[] {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0)
    return Object.entries(value).flatMap(([k, v]) => leafKeys(v, [...path, k]));
  return [path.join(".")];
}

test("the README's values table is up to date (npm run generate)", () => {
  assert.equal(readFileSync(README, "utf8"), generatedReadme(), "run `npm run generate`");
});

test("the table has one row per value, with its default and schema type", () => {
  const rows = valueRows(valuesYaml, schemaJson);
  assert.deepEqual(
    rows.map((r) => r.key),
    leafKeys(parse(valuesYaml)),
  );
  const row = (key: string) => rows.find((r) => r.key === key);
  assert.deepEqual(row("operator.replicas"), {
    key: "operator.replicas",
    type: "integer",
    default: "2",
    description: "More than one replica runs hot standbys; a coordination.k8s.io Lease picks the leader.",
  });
  assert.equal(row("operator.podDisruptionBudget.maxUnavailable")?.type, "integer or string");
  assert.equal(row("monitoring.dashboards.labels.grafana_dashboard")?.default, '"1"');
});

test("a changed default or comment changes the table", () => {
  const changed = valuesYaml
    .replace("  replicas: 2\n  workers: 48", "  replicas: 3\n  workers: 48")
    .replace("runs hot standbys", "run as hot standbys");
  const row = valueRows(changed, schemaJson).find((r) => r.key === "operator.replicas");
  assert.equal(row?.default, "3");
  assert.match(row?.description ?? "", /run as hot standbys/);
});
