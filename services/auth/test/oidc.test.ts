/**
 * OpenID Connect login end to end against a real oidc-provider on loopback: authorization endpoint,
 * callback, token exchange, ID token validation, session cookie, /whoami and /forward-auth, and the
 * ways a login must fail.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SESSION_COOKIE } from "../../../lib/session.ts";
import { loadSigningKeys } from "../../../lib/session.ts";
import { createTransactionSealer } from "../transaction.ts";
import { startAuthWithOidc, type AuthWithOidc, type RunningAuth } from "./support/auth.ts";
import { Browser, parseSetCookie } from "./support/browser.ts";
import type { TestOidcProvider } from "./support/oidcProvider.ts";

const accounts = {
  alice: {
    preferred_username: "alice",
    email: "alice@uni.example.org",
    email_verified: true,
    groups: ["students"],
  },
  bob: {
    preferred_username: "bob",
    email: "bob@elsewhere.example.com",
    email_verified: true,
    groups: ["students"],
  },
  carol: {
    preferred_username: "carol",
    email: "carol@uni.example.org",
    email_verified: true,
    groups: ["staff"],
  },
  dave: {
    preferred_username: "dave",
    email: "dave@uni.example.org",
    email_verified: false,
    groups: ["students"],
  },
  spacey: {
    preferred_username: " spacey",
    email: "spacey@uni.example.org",
    email_verified: true,
    groups: ["students"],
  },
  unicode: {
    preferred_username: "jörg",
    email: "joerg@uni.example.org",
    email_verified: true,
    groups: ["students"],
  },
};

const APP = "https://code.apps.example.test/lab?x=1";

describe("OIDC login against a real oidc-provider", () => {
  let env: AuthWithOidc;
  let idp: TestOidcProvider;
  let auth: RunningAuth;
  let keysFile: string;

  before(async () => {
    env = await startAuthWithOidc(accounts, {
      AUTH_OIDC_SCOPES: "openid,profile,email,groups",
      AUTH_ALLOWED_REDIRECT_HOSTS: "*.apps.example.test",
      AUTH_ALLOWED_DOMAINS: "uni.example.org",
      AUTH_ALLOWED_GROUPS: "students",
      AUTH_SESSION_TTL: "2h",
    });
    ({ idp, auth, keysFile } = env);
  });
  after(async () => {
    await env?.close();
  });

  /** Starts a login for `account` and walks the browser up to (not into) the callback. */
  async function toCallback(browser: Browser, account: string, rd = APP): Promise<URL> {
    idp.signInAs(account);
    const login = new URL("login", auth.url);
    login.searchParams.set("rd", rd);
    const { url } = await browser.navigate(login, { stopAt: (u) => u.pathname === "/callback/oidc" });
    assert.equal(url.pathname, "/callback/oidc", "the provider redirected back to the callback");
    assert.ok(url.searchParams.get("code"), "with a code");
    return url;
  }

  test("a full login sets a session cookie that /whoami and /forward-auth accept", async () => {
    const browser = new Browser();
    const callback = await toCallback(browser, "alice");
    const response = await browser.fetch(callback);
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), APP, "back to where the user was going");
    const cookie = response.headers
      .getSetCookie()
      .map(parseSetCookie)
      .find((c) => c.name === SESSION_COOKIE);
    assert.ok(cookie, "session cookie set");
    assert.ok(cookie.attributes.has("httponly"));
    assert.equal(cookie.attributes.get("samesite")?.toLowerCase(), "lax");
    assert.equal(cookie.attributes.get("path"), "/");
    assert.equal(cookie.attributes.get("max-age"), String(2 * 3600));
    assert.ok(
      !browser.cookieNames().some((n) => n.startsWith("userland_login_")),
      "transaction cookie cleared",
    );

    const whoami = await browser.fetch(new URL("whoami", auth.url));
    assert.equal(whoami.status, 200);
    const body = (await whoami.json()) as { user: string; expiresAt: string };
    assert.equal(body.user, "alice");
    const ttl = Date.parse(body.expiresAt) - Date.now();
    assert.ok(
      ttl > 2 * 3600_000 - 60_000 && ttl <= 2 * 3600_000 + 5_000,
      `expiry about 2h ahead, got ${ttl} ms`,
    );

    const fa = await browser.fetch(new URL("forward-auth", auth.url));
    assert.equal(fa.status, 200);
    assert.equal(fa.headers.get("x-user"), "alice");

    // Already signed in: /login goes straight back without visiting the provider.
    const again = await browser.fetch(new URL(`login?rd=${encodeURIComponent(APP)}`, auth.url));
    assert.equal(again.status, 302);
    assert.equal(again.headers.get("location"), APP);
  });

  test("without a session /whoami is 401 and /forward-auth is 401 with a login hint", async () => {
    const browser = new Browser();
    assert.equal((await browser.fetch(new URL("whoami", auth.url))).status, 401);
    const fa = await browser.fetch(new URL("forward-auth", auth.url), {
      headers: {
        "x-forwarded-proto": "https",
        "x-forwarded-host": "code.apps.example.test",
        "x-forwarded-uri": "/lab?x=1",
      },
    });
    assert.equal(fa.status, 401);
    assert.equal(fa.headers.get("x-user"), null);
    const hint = new URL(fa.headers.get("x-auth-login-url") ?? "");
    assert.equal(hint.href.startsWith(`${auth.url}login`), true);
    assert.equal(hint.searchParams.get("rd"), APP);

    const offsite = await browser.fetch(new URL("forward-auth", auth.url), {
      headers: {
        "x-forwarded-proto": "https",
        "x-forwarded-host": "evil.example.com",
        "x-forwarded-uri": "/",
      },
    });
    assert.equal(
      new URL(offsite.headers.get("x-auth-login-url") ?? "").searchParams.get("rd"),
      null,
      "no off-site return URL in the hint",
    );

    const traefik = await browser.fetch(new URL("forward-auth?redirect=true", auth.url), {
      headers: {
        "x-forwarded-proto": "https",
        "x-forwarded-host": "code.apps.example.test",
        "x-forwarded-uri": "/",
      },
    });
    assert.equal(traefik.status, 302);
    assert.equal(
      new URL(traefik.headers.get("location") ?? "").searchParams.get("rd"),
      "https://code.apps.example.test/",
    );
  });

  test("a callback with the wrong state gives an error page, not a session", async () => {
    const browser = new Browser();
    const callback = await toCallback(browser, "alice");
    const forged = new URL(callback);
    forged.searchParams.set("state", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    const response = await browser.fetch(forged);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /Sign-in link expired/);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);

    const noState = new URL(callback);
    noState.searchParams.delete("state");
    assert.equal((await browser.fetch(noState)).status, 400);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });

  test("a replayed code is refused by the provider and gives an error page", async () => {
    const browser = new Browser();
    const callback = await toCallback(browser, "alice");
    const txCookies = [...browser.jar.entries()].filter(([n]) => n.startsWith("userland_login_"));
    assert.equal(txCookies.length, 1);
    assert.equal((await browser.fetch(callback)).status, 302, "first use logs in");

    // Replay with the transaction cookie restored, as an attacker holding both would: the
    // provider refuses the used code at the token endpoint.
    const attacker = new Browser();
    for (const [name, c] of txCookies) attacker.setCookie(name, c.value, c.path);
    const exchangesBefore = idp.codeExchanges;
    const replay = await attacker.fetch(callback);
    assert.equal(replay.status, 400);
    assert.match(await replay.text(), /invalid_grant/);
    assert.equal(idp.codeExchanges, exchangesBefore + 1, "the replay reached the token endpoint");
    assert.equal(attacker.cookie(SESSION_COOKIE), undefined);

    // Replay in the same browser: the transaction is gone, so it never reaches the provider.
    const again = await browser.fetch(callback);
    assert.equal(again.status, 400);
    assert.match(await again.text(), /Sign-in link expired/);
  });

  test("an ID token with a different nonce is refused", async () => {
    const browser = new Browser();
    idp.signInAs("alice");
    const start = await browser.fetch(new URL(`login?rd=${encodeURIComponent(APP)}`, auth.url));
    assert.equal(start.status, 302);
    const [name, stored] = [...browser.jar.entries()].find(([n]) => n.startsWith("userland_login_")) ?? [];
    assert.ok(name && stored);
    // Re-seal the transaction with another nonce (the test holds the same keys as the service),
    // so everything matches except the nonce the provider puts in the ID token.
    const sealer = createTransactionSealer(await loadSigningKeys(keysFile), 600);
    const tx = await sealer.open(stored.value);
    assert.ok(tx?.nonce);
    browser.setCookie(
      name,
      await sealer.seal({ ...tx, nonce: "a-different-nonce-than-the-provider-got" }),
      stored.path,
    );

    const { response, url } = await browser.navigate(start.headers.get("location") ?? "");
    assert.equal(url.pathname, "/callback/oidc");
    assert.equal(response.status, 400);
    assert.match(await response.text(), /Sign-in failed/);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });

  test("a modified transaction cookie is refused", async () => {
    const browser = new Browser();
    const callback = await toCallback(browser, "alice");
    const [name, stored] = [...browser.jar.entries()].find(([n]) => n.startsWith("userland_login_")) ?? [];
    assert.ok(name && stored);
    const parts = stored.value.split(".");
    parts[3] = `${parts[3]?.slice(0, -2)}AA`; // the ciphertext
    browser.setCookie(name, parts.join("."), stored.path);
    assert.equal((await browser.fetch(callback)).status, 400);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });

  const refusals: [string, RegExp][] = [
    ["bob", /e-mail domain \(elsewhere\.example\.com\) is not one of the domains allowed/],
    ["carol", /not a member of any group/],
    ["dave", /no verified e-mail address/],
    ["spacey", /contains characters this platform cannot use/],
    ["unicode", /contains characters this platform cannot use/],
  ];
  for (const [account, why] of refusals) {
    test(`allow-lists and identity rules refuse ${account} with a 403 page that says why`, async () => {
      const browser = new Browser();
      const response = await browser.fetch(await toCallback(browser, account));
      assert.equal(response.status, 403);
      assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
      assert.match(await response.text(), why);
      assert.equal(browser.cookie(SESSION_COOKIE), undefined);
    });
  }

  test("tampered and expired session cookies are refused", async () => {
    const browser = new Browser();
    await browser.fetch(await toCallback(browser, "alice"));
    const token = browser.cookie(SESSION_COOKIE);
    assert.ok(token);
    const [h, p, s] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: "root" })).toString("base64url");
    const expired = Buffer.from(
      JSON.stringify({ ...claims, exp: Math.floor(Date.now() / 1000) - 3600 }),
    ).toString("base64url");
    for (const bad of [
      `${h}.${forged}.${s}`,
      `${h}.${expired}.${s}`,
      `${h}.${p}.${s.slice(0, -4)}AAAA`,
      "garbage",
      "",
    ]) {
      const other = new Browser();
      other.setCookie(SESSION_COOKIE, bad);
      assert.equal(
        (await other.fetch(new URL("whoami", auth.url))).status,
        401,
        `whoami refuses ${bad.slice(0, 20)}`,
      );
      const fa = await other.fetch(new URL("forward-auth", auth.url));
      assert.equal(fa.status, 401);
      assert.equal(fa.headers.get("x-user"), null);
    }
  });

  test("logout clears the session cookie and redirects only to a safe place", async () => {
    const browser = new Browser();
    await browser.fetch(await toCallback(browser, "alice"));
    assert.ok(browser.cookie(SESSION_COOKIE));
    const confirm = await browser.fetch(
      new URL(`logout?rd=${encodeURIComponent("https://evil.example.com/")}`, auth.url),
    );
    assert.equal(confirm.status, 200);
    const page = await confirm.text();
    assert.match(page, /<form method="post"/);
    assert.doesNotMatch(page, /evil\.example\.com/);

    const response = await browser.fetch(new URL("logout", auth.url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ rd: "https://evil.example.com/" }),
    });
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), auth.url);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
    assert.equal((await browser.fetch(new URL("whoami", auth.url))).status, 401);

    const back = await new Browser().fetch(new URL("logout", auth.url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ rd: APP }),
    });
    assert.equal(back.headers.get("location"), APP);
  });

  test("an error from the provider shows its message", async () => {
    const browser = new Browser();
    const callback = await toCallback(browser, "alice");
    const denied = new URL(callback);
    denied.searchParams.delete("code");
    denied.searchParams.set("error", "access_denied");
    denied.searchParams.set("error_description", "the <b>user</b> said no");
    const response = await browser.fetch(denied);
    assert.equal(response.status, 400);
    const text = await response.text();
    assert.match(text, /access_denied: the &#60;b&#62;user&#60;\/b&#62; said no/, "escaped");
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });

  test("metrics count logins by provider and result; health and keys are served", async () => {
    const metrics = await auth.metricsText();
    assert.match(metrics, /userland_auth_logins_total\{provider="oidc",result="success"\} [1-9]/);
    assert.match(metrics, /userland_auth_logins_total\{provider="oidc",result="refused"\} [1-9]/);
    assert.match(metrics, /userland_auth_logins_total\{provider="oidc",result="error"\} [1-9]/);
    assert.equal((await fetch(new URL("healthz", auth.url))).status, 200);
    assert.equal((await fetch(new URL("readyz", auth.url))).status, 200);
    // The public port has no /metrics: main.ts serves it on the admin port (config.test.ts).
    assert.equal((await fetch(new URL("metrics", auth.url))).status, 404);
    const jwks = (await (await fetch(new URL(".well-known/jwks.json", auth.url))).json()) as {
      keys: Record<string, unknown>[];
    };
    assert.equal(jwks.keys.length, 1);
    assert.equal(jwks.keys[0]?.d, undefined, "no private key material");
  });
});
