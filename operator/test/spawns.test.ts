import assert from "node:assert/strict";
import { test } from "node:test";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { Spawns } from "../spawns.ts";

const t0 = Date.parse("2026-01-02T03:04:05Z");
const userland = (name = "ada", template = "code"): Userland => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name, namespace: "ns", creationTimestamp: new Date(t0) },
  spec: { user: name, templateName: template },
});

test("a new Userland's spawn runs from its creation to Ready and is recorded once, also from a stale cache", () => {
  const spawns = new Spawns();
  const u = userland();
  assert.equal(spawns.observe(u, undefined, "Starting", t0 + 2000), undefined);
  assert.equal(spawns.oldestSeconds(t0 + 5000), 5);
  assert.deepEqual(spawns.observe(u, undefined, "Ready", t0 + 7500), { template: "code", seconds: 7.5 });
  assert.equal(spawns.oldestSeconds(t0 + 8000), 0, "done: no longer waiting");
  assert.equal(
    spawns.observe(u, undefined, "Ready", t0 + 8000),
    undefined,
    "the cache had not seen Ready yet",
  );
  assert.equal(spawns.observe(u, "Ready", "Ready", t0 + 9000), undefined);
});

test("a new Userland found Ready at once, e.g. by a new leader, counts from its creation", () => {
  const spawns = new Spawns();
  assert.deepEqual(spawns.observe(userland(), undefined, "Ready", t0 + 3000), {
    template: "code",
    seconds: 3,
  });
});

test("starting again (enabled, recovered, pod lost) counts from when the operator saw it start", () => {
  const spawns = new Spawns();
  const u = userland("bob", "jupyter");
  for (const from of ["Stopped", "Failed", "Ready"] as const) {
    spawns.observe(u, from, "Starting", t0 + 100_000);
    assert.deepEqual(spawns.observe(u, "Starting", "Ready", t0 + 112_000), {
      template: "jupyter",
      seconds: 12,
    });
    spawns.observe(u, "Ready", "Ready", t0 + 113_000);
  }
});

test("a spawn already under way when this leader came has an unknown start: it is watched, not recorded", () => {
  const spawns = new Spawns();
  const u = userland();
  spawns.observe(u, "Starting", "Starting", t0 + 50_000);
  assert.equal(spawns.oldestSeconds(t0 + 60_000), 10, "a lower bound of the wait");
  assert.equal(spawns.observe(u, "Starting", "Ready", t0 + 70_000), undefined);
});

test("stopping, failing or deleting ends a spawn without recording it", () => {
  const spawns = new Spawns();
  const [a, b, c] = [userland("a"), userland("b"), userland("c")];
  for (const u of [a, b, c]) spawns.observe(u, undefined, "Starting", t0 + 1000);
  spawns.observe(a, undefined, "Stopped", t0 + 2000);
  spawns.observe(b, undefined, "Failed", t0 + 2000);
  spawns.forget(c);
  assert.equal(spawns.oldestSeconds(t0 + 3000), 0);
  assert.equal(
    spawns.observe(b, "Failed", "Ready", t0 + 4000),
    undefined,
    "recovered without starting again",
  );
});
