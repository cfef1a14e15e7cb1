/**
 * Sign-in planted by a neighbour (issue 29 item 2): login CSRF by cookie tossing. mallory starts a
 * sign-in in her own browser, keeps its transaction cookie and the provider's callback URL, and has
 * a page on a sibling host (her environment) plant that cookie for the auth host and send the victim
 * to the callback. Against a real oidc-provider, with the auth service on https as in production
 * (its public URL is https; the test talks plain http to the same listener).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  createSessionSigner,
  parseSigningKeys,
  SESSION_COOKIE,
  type SessionSigner,
} from "../../../lib/session.ts";
import {
  listen,
  newKeysFile,
  startAuth,
  tempDir,
  type Listener,
  type RunningAuth,
  type TempDir,
} from "./support/auth.ts";
import { Browser, parseSetCookie } from "./support/browser.ts";
import { startOidcProvider, type TestOidcProvider } from "./support/oidcProvider.ts";

const claims = (name: string) => ({
  preferred_username: name,
  email: `${name}@uni.example.org`,
  email_verified: true,
});
const APP = "https://code.apps.example.test/";

describe("login CSRF by cookie tossing (issue 29 item 2)", () => {
  let dir: TempDir;
  let listener: Listener;
  let idp: TestOidcProvider;
  let auth: RunningAuth;
  let publicUrl: string;
  let signer: SessionSigner;

  before(async () => {
    dir = await tempDir();
    listener = await listen();
    publicUrl = listener.url.replace(/^http:/, "https:");
    idp = await startOidcProvider({
      redirectUri: `${publicUrl}callback/oidc`,
      accounts: { alice: claims("alice"), mallory: claims("mallory") },
    });
    const keys = await newKeysFile(dir);
    signer = createSessionSigner(await parseSigningKeys({ keys: keys.keys }));
    auth = await startAuth(listener, {
      AUTH_PUBLIC_URL: publicUrl,
      AUTH_COOKIE_SECURE: "true",
      AUTH_SESSION_KEYS_FILE: keys.file,
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_CLIENT_ID: idp.clientId,
      AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
      AUTH_OIDC_ALLOW_HTTP: "true",
      AUTH_ALLOWED_REDIRECT_HOSTS: "*.apps.example.test",
    });
  });
  after(async () => {
    await auth?.close();
    await listener?.close();
    await idp?.close();
    await dir?.remove();
  });

  /** The https URL the service names, as the test reaches it (plain http, same listener). */
  const reach = (url: URL) => new URL(`${url.pathname}${url.search}`, listener.url);

  /** Signs `account` in at the provider up to the callback: the callback URL (not yet fetched). */
  async function toCallback(browser: Browser, account: string): Promise<URL> {
    idp.signInAs(account);
    const login = new URL(`login?rd=${encodeURIComponent(APP)}`, listener.url);
    const { url } = await browser.navigate(login, {
      stopAt: (u) => u.pathname === "/callback/oidc" || u.protocol === "https:",
    });
    assert.equal(url.pathname, "/callback/oidc");
    return reach(url);
  }

  async function signIn(browser: Browser, account: string): Promise<void> {
    const done = await browser.fetch(await toCallback(browser, account));
    assert.equal(done.status, 302, `${account} signs in`);
    assert.ok(browser.cookie(SESSION_COOKIE));
  }

  const userOf = async (browser: Browser) => {
    const r = await browser.fetch(new URL("whoami", listener.url));
    return r.status === 200 ? ((await r.json()) as { user: string }).user : undefined;
  };

  test("on https the transaction cookie is __Host- prefixed: Secure, Path=/, no Domain", async () => {
    const start = await new Browser().fetch(new URL(`login?rd=${encodeURIComponent(APP)}`, listener.url));
    assert.equal(start.status, 302);
    const tx = start.headers
      .getSetCookie()
      .map(parseSetCookie)
      .find((c) => c.name.includes("userland_login_"));
    assert.ok(tx, "a transaction cookie");
    assert.match(tx.name, /^__Host-userland_login_/);
    assert.ok(tx.attributes.has("secure"));
    assert.equal(tx.attributes.get("path"), "/");
    assert.equal(tx.attributes.get("domain"), undefined);
  });

  test("a transaction planted by a sibling host (no __Host- prefix) is refused: no session", async () => {
    const mallory = new Browser();
    const callback = await toCallback(mallory, "mallory");
    const [name, stored] = [...mallory.jar.entries()].find(([n]) => n.includes("userland_login_")) ?? [];
    assert.ok(name && stored);
    // What a sibling host can set for the auth host: a Domain cookie, never a __Host- one.
    const victim = new Browser();
    victim.setCookie(name.replace(/^__Host-/, ""), stored.value, "/callback/");
    const response = await victim.fetch(callback);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /Sign-in link expired/);
    assert.equal(victim.cookie(SESSION_COOKIE), undefined, "the victim is not signed in as mallory");
  });

  test("a sign-in that comes back over another user's valid session is asked, never silently replaced", async () => {
    const victim = new Browser();
    await signIn(victim, "alice");
    const aliceSession = victim.cookie(SESSION_COOKIE);
    // mallory's transaction in the victim's browser (planted where the scheme gives no prefix, or
    // a sign-in started in another tab): the provider's answer is mallory's.
    const mallory = new Browser();
    const callback = await toCallback(mallory, "mallory");
    for (const [name, c] of mallory.jar)
      if (name.includes("userland_login_")) victim.setCookie(name, c.value, c.path);
    const response = await victim.fetch(callback);
    assert.equal(response.status, 409);
    const page = await response.text();
    assert.match(page, /signed in as <code>alice<\/code>/);
    assert.match(page, /<code>mallory<\/code>/);
    assert.match(page, /Sign out alice and sign in again/);
    assert.ok(
      !response.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=`)),
      "no session cookie set",
    );
    assert.equal(victim.cookie(SESSION_COOKIE), aliceSession);
    assert.equal(await userOf(victim), "alice");
  });

  test("/whoami and /forward-auth with session cookies of two users: refused, as the proxy does (issue 29 item 6)", async () => {
    const [alice, mallory, alice2] = await Promise.all([
      signer.sign("alice", 600),
      signer.sign("mallory", 600),
      signer.sign("alice", 900),
    ]);
    const ask = (path: string, ...tokens: string[]) =>
      fetch(new URL(path, listener.url), {
        headers: { cookie: tokens.map((t) => `${SESSION_COOKIE}=${t}`).join("; ") },
      });
    // mallory's cookie planted with a longer path comes first: it must not win.
    for (const path of ["whoami", "forward-auth"]) {
      const both = await ask(path, mallory, alice);
      assert.equal(both.status, 401, `${path}: two users' sessions are no session`);
      assert.equal(both.headers.get("x-user"), null);
      assert.equal(
        (await ask(path, alice, alice2)).status,
        200,
        `${path}: two of the same user's are that user`,
      );
    }
    const whoami = (await (await ask("whoami", alice, alice2)).json()) as { user: string };
    assert.equal(whoami.user, "alice");
  });
});
