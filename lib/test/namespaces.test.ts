/** USERLAND_WATCH_NAMESPACES: one parser for the operator, the proxy and the user-manager. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../config.ts";
import { oldest, parseWatchNamespaces, ServedNamespaces } from "../namespaces.ts";
import { loadOperatorConfig } from "../../operator/config.ts";
import { loadUserManagerConfig } from "../../services/user-manager/config.ts";

test("a list, every namespace, or unset (the own namespace)", () => {
  assert.deepEqual(parseWatchNamespaces("course-a, course-b,course-a"), {
    all: false,
    names: ["course-a", "course-b"],
  });
  assert.deepEqual(parseWatchNamespaces("*"), { all: true });
  const own = new ServedNamespaces(undefined, "platform");
  assert.equal(own.single, "platform");
  assert.deepEqual(own.collections("userland.dev", "v1alpha1", "userlands"), [
    "/apis/userland.dev/v1alpha1/namespaces/platform/userlands",
  ]);
  const two = new ServedNamespaces(parseWatchNamespaces("a,b"), "platform");
  assert.equal(two.single, undefined);
  assert.equal(two.serves("b"), true);
  assert.equal(two.serves("platform"), false);
  const all = new ServedNamespaces({ all: true }, "platform");
  assert.deepEqual(all.collections("", "v1", "services"), ["/api/v1/services"]);
  assert.equal(all.serves("anything"), true);
  // Messages name where a missing object was looked for.
  assert.equal(own.describe(), 'namespace "platform"');
  assert.equal(two.describe(), 'namespaces "a", "b"');
  assert.equal(all.describe(), "any namespace");
});

test("names that are not namespaces, and * among names, fail at start-up saying what to set", () => {
  for (const [raw, why] of [
    ["Course-A", /not a namespace name: "Course-A"/],
    ["a,,b", /an empty name/],
    ["*,course-a", /"\*" cannot be combined with names/],
    ["a_b", /not a namespace name/],
    [`${"x".repeat(64)}`, /not a namespace name/],
  ] as const) {
    assert.throws(() => parseWatchNamespaces(raw), why);
    for (const load of [loadOperatorConfig, loadUserManagerConfig]) {
      assert.throws(
        () => load({ USERLAND_WATCH_NAMESPACES: raw }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems.some(
            (p) => p.startsWith("USERLAND_WATCH_NAMESPACES=") && /comma-separated list/.test(p),
          ),
      );
    }
  }
  assert.deepEqual(loadOperatorConfig({ USERLAND_WATCH_NAMESPACES: "*" }).watchNamespaces, { all: true });
  assert.equal(loadOperatorConfig({}).watchNamespaces, undefined);
});

test("of one name in several namespaces the oldest counts, then the namespace's name", () => {
  const t = (namespace: string, at: string) => ({
    metadata: { name: "code", namespace, creationTimestamp: at },
  });
  const a = t("b-course", "2026-01-01T00:00:00Z");
  const b = t("a-course", "2026-02-01T00:00:00Z");
  const c = t("a-course", "2026-01-01T00:00:00Z");
  assert.equal(oldest([b, a]), a);
  assert.equal(oldest([a, c, b]), c);
  assert.equal(oldest([]), undefined);
});
