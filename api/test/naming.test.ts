import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, fitName, shortHash, slug, userlandNameFor } from "../naming.ts";

const dns1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

test("identities that collide after case folding or character stripping get different Userlands", () => {
  const groups = [
    ["Koba1t", "koba1t", "KOBA1T"],
    ["a.b@uni.ac.jp", "a-b@uni.ac.jp", "a_b@uni.ac.jp", "a b@uni.ac.jp"],
    ["github:123", "github-123", "github_123", "github:123 "],
  ];
  for (const group of groups) {
    const names = group.map(userlandNameFor);
    assert.equal(new Set(names).size, group.length, `${group.join(", ")} → ${names.join(", ")}`);
  }
});

test("Userland names are readable, stable DNS-1035 labels of at most 31 characters", () => {
  for (const user of ["Koba1t", "a.b@uni.ac.jp", "github:123", "123456", "---", "ü", "x".repeat(256)]) {
    const name = userlandNameFor(user);
    assert.match(name, dns1035, user);
    assert.ok(name.length <= 31, `${name} (${name.length})`);
    assert.equal(userlandNameFor(user), name, "stable");
  }
  assert.match(userlandNameFor("Koba1t"), /^koba1t-[a-z2-7]{10}$/);
  assert.match(userlandNameFor("123"), /^u-123-/);
});

test("child names follow ESC and stay within Kubernetes limits", () => {
  const short = childNames("vscode", "koba1t");
  assert.equal(short.deployment, "vscode-koba1t");
  assert.equal(short.service, "vscode-koba1t-svc");
  assert.equal(short.pvc("home"), "vscode-koba1t-pvc-home");
  const long = childNames("a-24-character-template", "x".repeat(200));
  assert.ok(long.service.length <= 63, long.service);
  assert.ok(long.userlandLabel.length <= 63);
  assert.notEqual(
    childNames("t", "x".repeat(200) + "a").deployment,
    childNames("t", "x".repeat(200) + "b").deployment,
    "shortened names keep a hash of the whole",
  );
});

test("helpers", () => {
  assert.equal(slug("A.B@Uni", 20), "a-b-uni");
  assert.equal(fitName("abc", 63), "abc");
  assert.equal(shortHash("x").length, 10);
  assert.match(shortHash("x", 16), /^[a-z2-7]{16}$/);
});
