import assert from "node:assert/strict";
import { test } from "node:test";
import { desiredHash, isSubset, parseQuantity } from "../compare.ts";

test("fields the API server adds are not differences; changed, removed list entries and selector keys are", () => {
  const desired = {
    replicas: 1,
    template: { spec: { containers: [{ name: "a", image: "x:1" }] } },
    selector: { app: "a" },
  };
  const actual = {
    replicas: 1,
    progressDeadlineSeconds: 600,
    template: {
      spec: {
        containers: [{ name: "a", image: "x:1", imagePullPolicy: "IfNotPresent" }],
        dnsPolicy: "ClusterFirst",
      },
    },
    selector: { app: "a" },
  };
  assert.equal(isSubset(desired, actual), true);
  assert.equal(isSubset(desired, { ...actual, replicas: 3 }), false);
  assert.equal(isSubset(desired, { ...actual, template: { spec: { containers: [] } } }), false);
  assert.equal(
    isSubset(desired, { ...actual, selector: { app: "a", other: "b" } }),
    false,
    "an extra selector key changes routing",
  );
  assert.equal(
    isSubset({ labels: { a: "1" } }, { labels: { a: "1", added: "by someone" } }),
    true,
    "label maps may grow",
  );
});

test("quantities compare by value", () => {
  assert.equal(parseQuantity("500m"), 0.5);
  assert.equal(parseQuantity("1Gi"), 2 ** 30);
  assert.equal(parseQuantity("1e3"), 1000);
  assert.equal(parseQuantity("abc"), undefined);
  assert.equal(isSubset({ cpu: "0.5", memory: "1024Mi" }, { cpu: "500m", memory: "1Gi" }), true);
  assert.equal(isSubset({ cpu: "1" }, { cpu: "500m" }), false);
});

test("the desired hash ignores key order and sees every change", () => {
  assert.equal(desiredHash({ a: 1, b: { c: 2 } }), desiredHash({ b: { c: 2 }, a: 1 }));
  assert.notEqual(desiredHash({ a: 1 }), desiredHash({ a: 1, args: ["x"] }));
});
