/** The one local-path check (lib/localPath.ts) and the form-origin check (lib/formOrigin.ts). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { formFromOwnSite } from "../formOrigin.ts";
import { localPath } from "../localPath.ts";

test("localPath keeps paths on this site, re-serialized, and refuses everything else", () => {
  assert.equal(localPath("/lab?x=1#y"), "/lab?x=1#y");
  assert.equal(localPath("/a/../b"), "/b");
  assert.equal(localPath("/%2F%2Fevil.example/"), "/%2F%2Fevil.example/");
  for (const bad of [
    "//evil.example/",
    "/\\evil.example",
    "https://evil.example/",
    "/\t/evil.example",
    "/a\nb",
    "javascript:alert(1)",
    "/caf\u00e9",
    "/\u20ac",
    "",
    `/${"a".repeat(5000)}`,
    undefined,
    42,
  ])
    assert.equal(localPath(bad), undefined, JSON.stringify(bad));
});

test("formFromOwnSite: Origin decides, else Sec-Fetch-Site; neither is not a browser page", () => {
  const own = (origin: string) => origin === "https://code.example.org";
  assert.ok(formFromOwnSite({ origin: "https://code.example.org" }, own));
  assert.ok(!formFromOwnSite({ origin: "https://evil.example", "sec-fetch-site": "same-origin" }, own));
  assert.ok(formFromOwnSite({ origin: "null", "sec-fetch-site": "same-origin" }, own));
  assert.ok(!formFromOwnSite({ origin: "null" }, own));
  assert.ok(!formFromOwnSite({ "sec-fetch-site": "cross-site" }, own));
  assert.ok(!formFromOwnSite({ "sec-fetch-site": "same-site" }, own));
  assert.ok(formFromOwnSite({}, own));
});
