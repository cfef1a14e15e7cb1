/**
 * The service's edges: provider choice, cookie attributes with default (Secure) settings, headers,
 * and behaviour while the OpenID provider is unreachable.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SESSION_COOKIE } from "../../../lib/session.ts";
import { listen, newKeysFile, startAuth, tempDir } from "./support/auth.ts";
import { Browser, parseSetCookie } from "./support/browser.ts";
import { startGitHubStandIn } from "./support/githubStandIn.ts";

describe("auth endpoints", () => {
  test("with two providers /login offers a choice; cookies are Secure by default", async (t) => {
    const dir = await tempDir();
    t.after(() => dir.remove());
    const github = await startGitHubStandIn([{ login: "student", id: 7, orgs: [], emails: [] }]);
    t.after(() => github.close());
    const closed = await listen();
    const deadIssuer = closed.url.replace(/\/$/, "");
    await closed.close(); // a loopback port nobody listens on: the IdP is "down"
    const listener = await listen();
    t.after(() => listener.close());
    const auth = await startAuth(listener, {
      AUTH_SESSION_KEYS_FILE: (await newKeysFile(dir)).file,
      AUTH_COOKIE_SECURE: "true",
      AUTH_GITHUB_CLIENT_ID: github.clientId,
      AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
      AUTH_GITHUB_URL: github.url,
      AUTH_GITHUB_API_URL: github.url,
      AUTH_GITHUB_USER_PREFIX: "github:",
      AUTH_OIDC_ISSUER: deadIssuer,
      AUTH_OIDC_ALLOW_HTTP: "true",
      AUTH_OIDC_CLIENT_ID: "c",
      AUTH_OIDC_CLIENT_SECRET: "s",
      AUTH_OIDC_USER_PREFIX: "uni:",
      AUTH_OIDC_DISPLAY_NAME: "Uni <SSO>",
    });
    t.after(() => auth.close());

    const browser = new Browser();
    const chooser = await browser.fetch(new URL("login?rd=/lab", auth.url));
    assert.equal(chooser.status, 200);
    const page = await chooser.text();
    assert.match(page, /Uni &#60;SSO&#62;/, "display name, escaped");
    assert.match(page, /provider=github/);
    assert.match(page, /provider=oidc/);
    assert.equal(chooser.headers.get("cache-control"), "no-store");
    assert.equal(chooser.headers.get("x-frame-options"), "DENY");
    assert.match(chooser.headers.get("content-security-policy") ?? "", /default-src 'none'/);

    assert.equal(
      (await browser.fetch(new URL("login?provider=saml", auth.url))).status,
      400,
      "unknown provider",
    );

    // The identity provider is down: not ready, and login says so instead of crashing.
    assert.equal((await fetch(new URL("readyz", auth.url))).status, 503);
    const down = await browser.fetch(new URL("login?provider=oidc", auth.url));
    assert.equal(down.status, 503);
    assert.match(await down.text(), /cannot be reached/);
    assert.equal((await fetch(new URL("healthz", auth.url))).status, 200, "alive all the same");

    // GitHub still works; the transaction and session cookies carry the expected attributes.
    github.signInAs("student");
    const start = await browser.fetch(new URL("login?provider=github&rd=/lab", auth.url));
    assert.equal(start.status, 302);
    const tx = start.headers.getSetCookie().map(parseSetCookie)[0];
    assert.ok(tx && tx.name.startsWith("userland_login_"));
    assert.ok(tx.attributes.has("httponly") && tx.attributes.has("secure"));
    assert.equal(tx.attributes.get("path"), "/callback/");
    assert.equal(tx.attributes.get("max-age"), "600");
    assert.equal(tx.attributes.get("samesite")?.toLowerCase(), "lax");
    assert.equal(tx.attributes.get("domain"), undefined, "host-only");

    const { url: callback } = await browser.navigate(start.headers.get("location") ?? "", {
      stopAt: (u) => u.pathname === "/callback/github",
    });
    const done = await browser.fetch(callback);
    assert.equal(done.status, 302);
    assert.equal(done.headers.get("location"), new URL("/lab", auth.url).href);
    const session = done.headers
      .getSetCookie()
      .map(parseSetCookie)
      .find((c) => c.name === SESSION_COOKIE);
    assert.ok(session && session.attributes.has("secure"), "Secure unless AUTH_COOKIE_SECURE=false");
    assert.ok(session.attributes.has("httponly"));
    assert.equal(session.attributes.get("max-age"), String(12 * 3600), "default TTL 12h");
    const whoami = (await (await browser.fetch(new URL("whoami", auth.url))).json()) as { user: string };
    assert.equal(whoami.user, "github:student");

    // A bare POST (no form) logs out too, and lands on the default page.
    const logout = await browser.fetch(new URL("logout", auth.url), { method: "POST" });
    assert.equal(logout.status, 303);
    assert.equal(logout.headers.get("location"), auth.url);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });
});
