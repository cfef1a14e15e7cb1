/**
 * Hostile input against the auth service (in-process, with a real OpenID provider and the GitHub
 * stand-in on loopback), and what a captured session cookie is worth: replayed after logout to the
 * auth service and to the real proxy (real control plane), and what ends it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  SESSION_COOKIE,
  createSessionSigner,
  generateSigningKey,
  parseSigningKeys,
} from "../../lib/session.ts";
import { listen, newKeysFile, startAuth, tempDir } from "../../services/auth/test/support/auth.ts";
import { Browser } from "../../services/auth/test/support/browser.ts";
import { startGitHubStandIn } from "../../services/auth/test/support/githubStandIn.ts";
import { startOidcProvider } from "../../services/auth/test/support/oidcProvider.ts";
import { send, startProxy, startUpstream, testKeys } from "../../services/proxy/test/support.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { createTemplate, createUserland, markReady, simpleTemplateSpec } from "../support/resources.ts";

const ALLOWED = "example.org,*.apps.example.org";

interface Row {
  name: string;
  run: () => Promise<void>;
}

test("hostile input against the auth service; what a captured session is worth", async (t) => {
  const dir = await tempDir();
  t.after(() => dir.remove());
  const { file: keysFile, keys: signingJwks } = await newKeysFile(dir);
  const listener = await listen();
  t.after(() => listener.close());
  const github = await startGitHubStandIn([
    { login: "mallory", id: 66, orgs: [], emails: [] },
    { login: "victim", id: 77, orgs: [], emails: [] },
  ]);
  t.after(() => github.close());
  const idp = await startOidcProvider({
    redirectUri: `${listener.url}callback/oidc`,
    accounts: { mallory: { preferred_username: "mallory" } },
  });
  t.after(() => idp.close());
  const auth = await startAuth(listener, {
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_SESSION_TTL: "1h",
    AUTH_ALLOWED_REDIRECT_HOSTS: ALLOWED,
    AUTH_GITHUB_CLIENT_ID: github.clientId,
    AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
    AUTH_GITHUB_URL: github.url,
    AUTH_GITHUB_API_URL: github.url,
    AUTH_GITHUB_USER_PREFIX: "github:",
    AUTH_OIDC_ISSUER: idp.issuer,
    AUTH_OIDC_CLIENT_ID: idp.clientId,
    AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
    AUTH_OIDC_ALLOW_HTTP: "true",
    AUTH_OIDC_USER_PREFIX: "uni:",
  });
  t.after(() => auth.close());
  const at = (path: string) => new URL(path, auth.url);

  // Mallory signs in with GitHub; her browser holds a real session cookie.
  github.signInAs("mallory");
  const malloryBrowser = new Browser();
  await malloryBrowser.navigate(at("login?provider=github"));
  const malloryToken = malloryBrowser.cookie(SESSION_COOKIE);
  assert.ok(malloryToken, "mallory is signed in");
  const withSession = () => {
    const b = new Browser();
    b.setCookie(SESSION_COOKIE, malloryToken);
    return b;
  };

  const rows: Row[] = [];
  const row = (name: string, run: () => Promise<void>) => rows.push({ name, run });

  // --- Open redirects: after login (already signed in), after logout, and in forward-auth's hint ----
  const unsafe: [string, string][] = [
    ["//evil.test/", "scheme-relative"],
    ["///evil.test/", "triple slash"],
    ["\\evil.test", "backslash"],
    ["/\\evil.test", "slash backslash"],
    ["\\/evil.test", "backslash slash"],
    ["/\t/evil.test", "tab between slashes (sent as %09)"],
    ["/\n/evil.test", "newline between slashes (sent as %0A)"],
    ["/\r\n/evil.test", "CRLF between slashes"],
    [" //evil.test", "leading space"],
    ["\u0000//evil.test", "leading NUL"],
    ["%2F%2Fevil.test", "percent-encoded slashes without a leading slash"],
    ["https://example.org.evil.test/", "allowed host as a prefix"],
    ["https://evilexample.org/", "allowed host as a suffix"],
    ["https://example.org@evil.test/", "allowed host as userinfo"],
    ["https://example.org%2F@evil.test/", "encoded slash in userinfo"],
    ["https://user:pw@example.org/", "userinfo on an allowed host"],
    ["https://evil.test#@example.org", "fragment that looks like userinfo"],
    ["https://evil.test?@example.org", "query that looks like userinfo"],
    ["https://evil.test\\@example.org/", "backslash before @"],
    ["https:evil.test", "scheme without slashes"],
    ["https://example.org./", "trailing dot"],
    ["https://\u0435xample.org/", "Cyrillic look-alike"],
    ["https://xn--xample-2of.org/", "punycode look-alike"],
    ["https://example.org:8443/", "allowed host on another port"],
    ["https://a.b.apps.example.org/", "wildcard is one label only"],
    ["javascript:alert(document.cookie)", "javascript:"],
    [" JaVaScRiPt:alert(1)", "javascript: in mixed case after a space"],
    ["data:text/html,<script>alert(1)</script>", "data:"],
    ["vbscript:msgbox", "vbscript:"],
    [`/${"a".repeat(5000)}`, "longer than 4096 characters; /login answers 400"],
  ];
  const safe: [string, string, string][] = [
    ["https://example.org/ok?x=1", "control: an allowed host", "https://example.org/ok?x=1"],
    [
      "https://code.apps.example.org/lab",
      "control: the wildcard's one label",
      "https://code.apps.example.org/lab",
    ],
    ["/lab?x=1", "control: an own path", at("/lab?x=1").href],
    ["/%09/evil.test", "a literal %09 stays a path on this host", at("/%09/evil.test").href],
  ];
  const cases: [string, string, string | null][] = [
    ...unsafe.map(([rd, why]): [string, string, null] => [rd, why, null]),
    ...safe,
  ];
  for (const [rd, why, expected] of cases) {
    const verdict = expected === null ? "falls back to the landing page" : "is honoured";
    row(`redirect rd=${JSON.stringify(rd.slice(0, 60))} (${why}) ${verdict}`, async () => {
      const target = expected ?? auth.url;
      const allowedHosts = new Set([new URL(auth.url).host, "example.org", "code.apps.example.org"]);
      // 1. /login while signed in goes straight to rd.
      const login = at("login");
      login.searchParams.set("rd", rd);
      const r1 = await withSession().fetch(login);
      if (rd.length > 4096) {
        assert.equal(r1.status, 400, "an overlong rd is a bad request");
      } else {
        assert.equal(r1.status, 302);
        assert.equal(r1.headers.get("location"), target, "after login");
        assert.ok(allowedHosts.has(new URL(r1.headers.get("location") ?? "", auth.url).host));
      }
      // 2. POST /logout with the form field rd.
      const r2 = await new Browser().fetch(at("logout"), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ rd }),
      });
      assert.equal(r2.status, 303);
      assert.equal(r2.headers.get("location"), target, "after logout");
      // 3. The sign-out confirmation page never links off-site.
      const logout = at("logout");
      logout.searchParams.set("rd", rd);
      const r3 = await new Browser().fetch(logout);
      if (rd.length <= 4096) {
        assert.equal(r3.status, 200);
        if (expected === null) assert.doesNotMatch(await r3.text(), /evil|xn--|script:/i);
      }
      // 4. forward-auth's login hint (from X-Original-URL, as ingress-nginx sends it) carries rd only
      // when it is safe. A header value cannot hold line breaks, NUL or non-Latin-1 characters.
      if (!/^[\t\x20-\x7e]*$/.test(rd)) return;
      const r4 = await new Browser().fetch(at("forward-auth"), { headers: { "x-original-url": rd } });
      assert.equal(r4.status, 401);
      const hint = new URL(r4.headers.get("x-auth-login-url") ?? "");
      const hinted = hint.searchParams.get("rd");
      if (expected === null) assert.equal(hinted, null, `no rd in the hint, got ${String(hinted)}`);
      else assert.ok(hinted === null || allowedHosts.has(new URL(hinted).host));
    });
  }
  row("forward-auth hint from X-Forwarded-Host of another site carries no rd", async () => {
    const r = await new Browser().fetch(at("forward-auth"), {
      headers: { "x-forwarded-proto": "https", "x-forwarded-host": "evil.test", "x-forwarded-uri": "/" },
    });
    assert.equal(r.status, 401);
    assert.equal(new URL(r.headers.get("x-auth-login-url") ?? "").searchParams.get("rd"), null);
  });

  // --- Identity headers and sessions at the auth service -----------------------------------------------
  row("forward-auth without a session ignores a client's X-User and answers 401 without one", async () => {
    const r = await new Browser().fetch(at("forward-auth"), {
      headers: { "x-user": "victim", "x-auth-request-user": "victim", "x-forwarded-user": "victim" },
    });
    assert.equal(r.status, 401);
    assert.equal(r.headers.get("x-user"), null);
    assert.equal(r.headers.get("x-auth-request-user"), null);
  });
  row(
    "forward-auth with mallory's session and a client X-User: victim answers X-User: github:mallory",
    async () => {
      const r = await withSession().fetch(at("forward-auth"), {
        headers: { "x-user": "victim", "x-auth-request-user": "victim" },
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get("x-user"), "github:mallory");
      assert.equal(r.headers.get("x-auth-request-user"), "github:mallory");
    },
  );
  row("whoami and forward-auth refuse a cookie signed by another key", async () => {
    const forged = await createSessionSigner(
      await parseSigningKeys({ keys: [await generateSigningKey(signingJwks[0]?.kid)] }),
    ).sign("github:victim", 3600);
    const b = new Browser();
    b.setCookie(SESSION_COOKIE, forged);
    assert.equal((await b.fetch(at("whoami"))).status, 401);
    const fa = await b.fetch(at("forward-auth"));
    assert.equal(fa.status, 401);
    assert.equal(fa.headers.get("x-user"), null);
  });

  // --- OIDC: replayed code, login CSRF --------------------------------------------------------------
  const toOidcCallback = async (browser: Browser): Promise<URL> => {
    idp.signInAs("mallory");
    const { url } = await browser.navigate(at("login?provider=oidc"), {
      stopAt: (u) => u.pathname === "/callback/oidc",
    });
    assert.equal(url.pathname, "/callback/oidc");
    return url;
  };
  row("a replayed OIDC authorization code is refused by the provider: error page, no session", async () => {
    const browser = new Browser();
    const callback = await toOidcCallback(browser);
    const tx = [...browser.jar.entries()].filter(([n]) => n.startsWith("userland_login_"));
    assert.equal((await browser.fetch(callback)).status, 302, "first use signs in");
    assert.ok(browser.cookie(SESSION_COOKIE));
    // An attacker who captured the callback URL and the transaction cookie replays both.
    const attacker = new Browser();
    for (const [name, c] of tx) attacker.setCookie(name, c.value, c.path);
    const exchanges = idp.codeExchanges;
    const replay = await attacker.fetch(callback);
    assert.equal(replay.status, 400);
    assert.match(await replay.text(), /invalid_grant/);
    assert.equal(idp.codeExchanges, exchanges + 1, "the provider itself was asked and refused");
    assert.equal(attacker.cookie(SESSION_COOKIE), undefined);
  });
  row(
    "login CSRF: a callback URL from mallory's login opened in another browser gives no session",
    async () => {
      const callback = await toOidcCallback(new Browser());
      const victimBrowser = new Browser();
      const r = await victimBrowser.fetch(callback);
      assert.equal(r.status, 400);
      assert.match(await r.text(), /Sign-in link expired/);
      assert.equal(victimBrowser.cookie(SESSION_COOKIE), undefined);
    },
  );

  // --- Sign-out CSRF (issue 13 item 3): only the auth service's own pages may post its forms ---------
  const own = new URL(auth.url).origin;
  const signOut = (browser: Browser, headers: Record<string, string>) =>
    browser.fetch(at("logout"), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: "rd=/",
    });
  const csrf: [string, Record<string, string>, number][] = [
    ["Origin of another site", { origin: "https://evil.test" }, 403],
    ["Origin of an allowed redirect host (a student's environment)", { origin: "https://example.org" }, 403],
    ["no Origin, Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }, 403],
    ["no Origin, Sec-Fetch-Site: same-site", { "sec-fetch-site": "same-site" }, 403],
    ["Origin: null without Sec-Fetch-Site (a sandboxed frame)", { origin: "null" }, 403],
    ["the service's own Origin", { origin: own }, 303],
    [
      "Origin: null, Sec-Fetch-Site: same-origin (a no-referrer page's own form in chromium)",
      { origin: "null", "sec-fetch-site": "same-origin" },
      303,
    ],
  ];
  for (const [what, headers, expected] of csrf) {
    const verdict = expected === 403 ? "is refused with 403; the student stays signed in" : "signs out";
    row(`a sign-out form POST with ${what} ${verdict}`, async () => {
      const browser = withSession();
      const r = await signOut(browser, headers);
      assert.equal(r.status, expected, await r.text());
      if (expected === 403) assert.equal(browser.cookie(SESSION_COOKIE), malloryToken, "still signed in");
      else assert.equal(browser.cookie(SESSION_COOKIE), undefined, "signed out");
    });
  }

  // --- Oversized input ------------------------------------------------------------------------------
  row("a 20 KB header is refused with 431; the service stays up", async () => {
    const r = await send(Number(new URL(auth.url).port), {
      path: "/whoami",
      headers: { host: new URL(auth.url).host, "x-pad": "a".repeat(20_000) },
    });
    assert.equal(r.status, 431);
    assert.equal((await fetch(at("healthz"))).status, 200);
  });
  row("a 2 MiB logout form is refused with 413; the service stays up", async () => {
    const r = await fetch(at("logout"), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `rd=${"a".repeat(2 * 1024 * 1024)}`,
      redirect: "manual",
    });
    assert.equal(r.status, 413);
    assert.equal((await fetch(at("healthz"))).status, 200);
  });

  // --- Replayed session cookie (captured before logout) ---------------------------------------------
  const ns = await testNamespace(t, "sec-auth");
  await installCrds();
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "code-mallory", "github:mallory", "code");
  await markReady(ns, "code-mallory", { name: "code-mallory-svc", port: 80 });
  const upstream = await startUpstream(t, "github:mallory/code");
  const proxyKeys = await testKeys(t, signingJwks);
  const proxy = await startProxy(t, ns, proxyKeys);
  proxy.resolver.set(ns, "code-mallory-svc", upstream.url);

  row(
    "a session cookie captured before logout still works after logout until it expires (stateless sessions)",
    async () => {
      const browser = new Browser();
      github.signInAs("mallory");
      await browser.navigate(at("login?provider=github"));
      const captured = browser.cookie(SESSION_COOKIE);
      assert.ok(captured);
      const logout = await browser.fetch(at("logout"), { method: "POST" });
      assert.equal(logout.status, 303);
      assert.equal(browser.cookie(SESSION_COOKIE), undefined, "logout clears the browser's cookie");
      assert.equal((await browser.fetch(at("whoami"))).status, 401, "the browser is signed out");

      const thief = new Browser();
      thief.setCookie(SESSION_COOKIE, captured);
      const whoami = await thief.fetch(at("whoami"));
      assert.equal(whoami.status, 200, "the copied cookie is still valid at the auth service");
      const r = await send(proxy.port, {
        headers: { host: "code.example.test", cookie: `${SESSION_COOKIE}=${captured}` },
      });
      assert.equal(r.status, 200, "and at the proxy");
      assert.equal(r.json<{ xUser: string }>().xUser, "github:mallory", "but only as its own user");

      // What bounds it: the expiry the auth service signed (AUTH_SESSION_TTL, here 1h)...
      const claims = JSON.parse(Buffer.from(captured.split(".")[1] ?? "", "base64url").toString()) as {
        iat: number;
        exp: number;
      };
      assert.equal(claims.exp - claims.iat, 3600, "exp = iat + AUTH_SESSION_TTL");
    },
  );
  row("a captured session ends when its signing key is pruned from the proxy's public keys", async () => {
    const captured = malloryToken;
    const rotated = await testKeys(t, [await generateSigningKey("after-leak")]);
    const pruned = await startProxy(t, ns, rotated);
    pruned.resolver.set(ns, "code-mallory-svc", upstream.url);
    const before = upstream.seen.length;
    const r = await send(pruned.port, {
      headers: {
        host: "code.example.test",
        cookie: `${SESSION_COOKIE}=${captured}`,
        accept: "application/json",
      },
    });
    assert.equal(r.status, 401);
    assert.equal(upstream.seen.length, before);
    // The proxy that still has the key accepts it (control).
    const ok = await send(proxy.port, {
      headers: { host: "code.example.test", cookie: `${SESSION_COOKIE}=${captured}` },
    });
    assert.equal(ok.status, 200);
    await pruned.close();
  });

  for (const r of rows) await t.test(r.name, r.run);
});
