import assert from "node:assert/strict";
import test from "node:test";
import { contentSecurityPolicy, pageSecurityHeaders } from "../pageHeaders.ts";

const directives = (csp: string) => new Map(csp.split("; ").map((d) => [d.split(" ")[0], d]));

test("a page without options: nothing from elsewhere, no script, forms to itself, never framed", () => {
  const csp = directives(contentSecurityPolicy());
  assert.equal(csp.get("default-src"), "default-src 'none'");
  assert.equal(csp.get("form-action"), "form-action 'self'");
  assert.equal(csp.get("frame-ancestors"), "frame-ancestors 'none'");
  assert.equal(csp.get("base-uri"), "base-uri 'none'");
  assert.equal(csp.has("script-src"), false);
  assert.equal(csp.has("connect-src"), false);
  const headers = pageSecurityHeaders();
  assert.equal(headers["x-frame-options"], "DENY");
  assert.equal(headers["referrer-policy"], "same-origin");
  assert.equal(headers["cache-control"], undefined, "caching is the caller's");
});

test("a script by its hash, polling its own origin, forms to named origins", () => {
  const csp = directives(
    contentSecurityPolicy({
      scriptHash: "sha256-abc",
      connectSelf: true,
      formTargets: ["https://auth.example.org"],
    }),
  );
  assert.equal(csp.get("script-src"), "script-src 'sha256-abc'");
  assert.equal(csp.get("connect-src"), "connect-src 'self'");
  assert.equal(csp.get("form-action"), "form-action 'self' https://auth.example.org");
});

test("unrestricted forms leave form-action out (the auth service's sign-out ends where rd says)", () => {
  assert.equal(directives(contentSecurityPolicy({ formTargets: "unrestricted" })).has("form-action"), false);
  assert.equal(pageSecurityHeaders({ referrer: "no-referrer" })["referrer-policy"], "no-referrer");
});
