/**
 * Safe redirects: the unit rules of redirects.ts, then the same cases end to end through a real
 * login (GitHub stand-in) and logout, checking the Location the browser finally gets.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { checkRedirect, createRedirectPolicy, parseHostPattern, safeRedirect } from "../redirects.ts";
import {
  listen,
  newKeysFile,
  startAuth,
  tempDir,
  type Listener,
  type RunningAuth,
  type TempDir,
} from "./support/auth.ts";
import { Browser } from "./support/browser.ts";
import { startGitHubStandIn, type GitHubStandIn } from "./support/githubStandIn.ts";
import { ALLOWED_HOSTS, redirectCases } from "./support/redirectCases.ts";

describe("redirects.ts", () => {
  const publicUrl = new URL("https://auth.example.org/");
  const policy = createRedirectPolicy({ publicUrl, allowedHosts: ALLOWED_HOSTS.split(",") });

  for (const c of redirectCases) {
    test(`${c.expect === null ? "refuses" : "allows"} ${JSON.stringify(c.rd)} (${c.why})`, () => {
      const expected = c.expect === null ? publicUrl.href : new URL(c.expect, publicUrl).href;
      assert.equal(safeRedirect(c.rd, policy), expected);
      assert.equal(checkRedirect(c.rd, policy) === undefined, c.expect === null);
    });
  }

  test("the service's own host is always allowed, including when it is not listed", () => {
    const own = createRedirectPolicy({ publicUrl, allowedHosts: [] });
    assert.equal(safeRedirect("https://auth.example.org/x", own), "https://auth.example.org/x");
    assert.equal(safeRedirect("https://example.org/", own), publicUrl.href);
  });

  test("non-strings fall back to the default", () => {
    for (const value of [undefined, null, 42, ["/a"], { href: "/a" }])
      assert.equal(safeRedirect(value, policy), publicUrl.href);
    assert.equal(safeRedirect(`/${"a".repeat(5000)}`, policy), publicUrl.href, "overlong");
  });

  test("the default redirect must itself be allowed", () => {
    const custom = createRedirectPolicy({
      publicUrl,
      allowedHosts: ["example.org"],
      defaultRedirect: new URL("https://example.org/home"),
    });
    assert.equal(safeRedirect("//evil.com", custom), "https://example.org/home");
    assert.throws(
      () =>
        createRedirectPolicy({ publicUrl, allowedHosts: [], defaultRedirect: new URL("https://evil.com/") }),
      /not on an allowed redirect host/,
    );
  });

  test("host patterns are validated", () => {
    assert.deepEqual(parseHostPattern("*.Example.org"), {
      wildcard: true,
      hostname: "example.org",
      port: "",
    });
    assert.deepEqual(parseHostPattern("example.org:8443"), {
      wildcard: false,
      hostname: "example.org",
      port: "8443",
    });
    for (const bad of [
      "*.org",
      "https://example.org",
      "example.org/",
      "*example.org",
      "exa mple.org",
      "a.*.example.org",
      "example.org:99999",
      "",
    ]) {
      assert.throws(() => parseHostPattern(bad), Error, bad);
    }
  });
});

describe("safe redirects end to end", () => {
  let dir: TempDir;
  let listener: Listener;
  let github: GitHubStandIn;
  let auth: RunningAuth;

  before(async () => {
    dir = await tempDir();
    listener = await listen();
    github = await startGitHubStandIn([{ login: "student", id: 7, orgs: [], emails: [] }]);
    github.signInAs("student");
    auth = await startAuth(listener, {
      AUTH_SESSION_KEYS_FILE: (await newKeysFile(dir)).file,
      AUTH_GITHUB_CLIENT_ID: github.clientId,
      AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
      AUTH_GITHUB_URL: github.url,
      AUTH_GITHUB_API_URL: github.url,
      AUTH_ALLOWED_REDIRECT_HOSTS: ALLOWED_HOSTS,
    });
  });
  after(async () => {
    await auth?.close();
    await listener?.close();
    await github?.close();
    await dir?.remove();
  });

  for (const c of redirectCases) {
    test(`after login and logout, rd=${JSON.stringify(c.rd)} ${c.expect === null ? "falls back" : "is honoured"} (${c.why})`, async () => {
      const expected = c.expect === null ? auth.url : new URL(c.expect, auth.url).href;
      const browser = new Browser();
      const login = new URL("login", auth.url);
      login.searchParams.set("rd", c.rd);
      const { url: callback } = await browser.navigate(login, {
        stopAt: (u) => u.pathname === "/callback/github",
      });
      assert.equal(callback.pathname, "/callback/github");
      const done = await browser.fetch(callback);
      assert.equal(done.status, 302);
      assert.equal(done.headers.get("location"), expected, "after login");

      const logout = await browser.fetch(new URL("logout", auth.url), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ rd: c.rd }),
      });
      assert.equal(logout.status, 303);
      assert.equal(logout.headers.get("location"), expected, "after logout");
    });
  }
});
