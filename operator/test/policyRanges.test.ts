/** The check of environments' addresses against the NetworkPolicies' pod ranges (operator/policyRanges.ts). */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { createLogger } from "../../lib/logger.ts";
import type { EventRecorder } from "../../lib/events.ts";
import { POD_OUTSIDE_RANGES, PolicyRangeCheck } from "../policyRanges.ts";

const ada: Userland = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name: "ada", namespace: "course" },
  spec: { user: "ada", templateName: "code" },
};

function recorder() {
  const warnings: { name?: string; reason: string }[] = [];
  const events = {
    warning: (target: { metadata: { name?: string } }, reason: string) =>
      warnings.push({ name: target.metadata.name, reason }),
  } as unknown as EventRecorder;
  return { events, warnings };
}

test("an address inside the ranges says nothing; the first outside is a Warning, once", () => {
  const { events, warnings } = recorder();
  const check = new PolicyRangeCheck(["198.19.0.0/16", "fd00::/8"], events, createLogger("test", "silent"));
  check.observe("198.19.128.4", () => ada);
  check.observe("fd00::4", () => ada);
  check.observe(undefined, () => ada);
  assert.deepEqual(warnings, []);
  check.observe("10.244.1.5", () => ada);
  check.observe("10.244.1.6", () => ada);
  assert.deepEqual(warnings, [{ name: "ada", reason: POD_OUTSIDE_RANGES }]);
});

test("without ranges (not rendered by the chart) nothing is checked", () => {
  const { events, warnings } = recorder();
  new PolicyRangeCheck([], events, createLogger("test", "silent")).observe("10.244.1.5", () => ada);
  assert.deepEqual(warnings, []);
});
