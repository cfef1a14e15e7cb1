import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, fitName, legacyUserlandNameFor, shortHash, slug, userlandNameFor } from "../naming.ts";

const dns1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

test("identities that collide after case folding or character stripping get different Userlands", () => {
  const groups = [
    ["Koba1t", "koba1t", "KOBA1T"],
    ["a.b@uni.ac.jp", "a-b@uni.ac.jp", "a_b@uni.ac.jp", "a b@uni.ac.jp"],
    ["github:123", "github-123", "github_123", "github:123 "],
  ];
  for (const group of groups) {
    for (const name of [(u: string) => userlandNameFor(u, "code"), legacyUserlandNameFor]) {
      const names = group.map(name);
      assert.equal(new Set(names).size, group.length, `${group.join(", ")} → ${names.join(", ")}`);
    }
  }
});

test("one name per (user, Template) pair: a student's Templates never collide, nor do two students", () => {
  const users = ["Koba1t", "koba1t", "a.b@uni.ac.jp", "a-b@uni.ac.jp", "github:123", "x".repeat(256)];
  // Templates whose shown part (8 characters) is the same, and a user whose slug swallows a template's.
  const templates = ["code-server", "code-serverless", "phpmyadmin", "cloud9", "c", "jupyter"];
  const seen = new Map<string, string>();
  for (const user of [...users, "koba1t-code", "koba1t-c"]) {
    for (const template of templates) {
      const name = userlandNameFor(user, template);
      const pair = `${JSON.stringify(user)} × ${template}`;
      assert.equal(seen.get(name), undefined, `${pair} and ${seen.get(name)} → ${name}`);
      seen.set(name, pair);
      assert.notEqual(name, legacyUserlandNameFor(user), "never the name of the older rule");
    }
  }
  assert.equal(seen.size, (users.length + 2) * templates.length);
});

test("Userland names are readable, stable DNS-1035 labels of at most 31 characters", () => {
  for (const user of ["Koba1t", "a.b@uni.ac.jp", "github:123", "123456", "---", "ü", "x".repeat(256)]) {
    for (const template of ["code", "a-24-character-template", "x", "phpmyadmin"]) {
      const name = userlandNameFor(user, template);
      assert.match(name, dns1035, `${user} × ${template}`);
      assert.ok(name.length <= 31, `${name} (${name.length})`);
      assert.equal(userlandNameFor(user, template), name, "stable");
    }
    const legacy = legacyUserlandNameFor(user);
    assert.match(legacy, dns1035, user);
    assert.ok(legacy.length <= 31, `${legacy} (${legacy.length})`);
  }
  assert.match(userlandNameFor("Koba1t", "code-server"), /^koba1t-code-ser-[a-z2-7]{10}$/);
  assert.match(userlandNameFor("Koba1t", "phpmyadmin"), /^koba1t-phpmyadm-[a-z2-7]{10}$/);
  assert.match(userlandNameFor("123", "code"), /^u-123-code-/);
  // Names the user-manager gave before one student could hold several Templates' environments
  // (deployed Userlands carry them): the older rule must stay exactly as it was.
  assert.equal(legacyUserlandNameFor("Koba1t"), "koba1t-diqpq3fpyd");
  assert.equal(legacyUserlandNameFor("a.b@uni.ac.jp"), "a-b-uni-ac-jp-kjdqxjsoes");
  assert.match(legacyUserlandNameFor("123"), /^u-123-/);
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
