/**
 * /logout when the user-manager cannot end the session everywhere, and the sign-out settings'
 * start-up checks. The end-to-end case (the user-manager reached, two replicas refusing the copied
 * cookie) is in endedSessions.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../../lib/config.ts";
import { createSessionSigner, loadSigningKeys } from "../../../lib/session.ts";
import { loadAuthConfig } from "../config.ts";
import { listen, newKeysFile, startAuth, tempDir } from "./support/auth.ts";

const github = { AUTH_GITHUB_CLIENT_ID: "client", AUTH_GITHUB_CLIENT_SECRET: "secret" };

test("the user-manager unreachable at /logout: this browser is signed out and the page says the session still works elsewhere", async (t) => {
  const dir = await tempDir();
  t.after(() => dir.remove());
  const keysFile = (await newKeysFile(dir)).file;
  const signer = createSessionSigner(await loadSigningKeys(keysFile));
  // A port nothing listens on: the user-manager is down.
  const closed = await listen();
  const userManager = closed.url;
  await closed.close();
  const listener = await listen();
  const auth = await startAuth(listener, {
    ...github,
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_SIGN_OUT_URL: userManager,
    AUTH_SIGN_OUT_TOKEN_FILE: await dir.file("token", "t0ken"),
    AUTH_SIGN_OUT_TIMEOUT: "2s",
  });
  t.after(async () => {
    await auth.close();
    await listener.close();
  });

  const session = await signer.sign("mallory", 3600);
  const r = await fetch(new URL("logout", auth.url), {
    method: "POST",
    headers: { cookie: `userland_session=${session}` },
    redirect: "manual",
  });
  const text = await r.text();
  assert.equal(r.status, 200, "a page, not the redirect that says all went well");
  assert.match(r.headers.get("set-cookie") ?? "", /userland_session=;/, "this browser is signed out");
  assert.match(text, /Signed out on this browser only/);
  assert.match(text, /still works until/);
  assert.match(text, /href="http:\/\/127\.0\.0\.1:\d+\/"/, "Continue goes where the redirect would have");
  assert.match(await auth.metricsText(), /userland_auth_sign_outs_total\{result="browser-only"\} 1/);
});

test("sign-out settings go together, with messages that say what to set", () => {
  const base = { AUTH_PUBLIC_URL: "https://auth.example.org", AUTH_SESSION_KEYS_FILE: "/k.json", ...github };
  const problems = (env: Record<string, string>) => {
    try {
      loadAuthConfig({ ...base, ...env });
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.problems;
    }
    return [];
  };
  assert.deepEqual(problems({ AUTH_SIGN_OUT_URL: "http://user-manager" }), [
    "set AUTH_SIGN_OUT_TOKEN_FILE: the file with the token the user-manager accepts (a projected ServiceAccount token; AUTH_SIGN_OUT_URL is set)",
  ]);
  assert.deepEqual(problems({ AUTH_SIGN_OUT_TOKEN_FILE: "/token" }), [
    "set AUTH_SIGN_OUT_URL: the user-manager base URL that ends sessions at sign-out (AUTH_SIGN_OUT_TOKEN_FILE is set)",
  ]);
  assert.equal(loadAuthConfig(base).signOut, undefined, "unset: /logout signs out this browser only");
  assert.deepEqual(
    loadAuthConfig({ ...base, AUTH_SIGN_OUT_URL: "http://um/", AUTH_SIGN_OUT_TOKEN_FILE: "/token" }).signOut,
    { url: new URL("http://um/"), tokenFile: "/token", timeoutMs: 5_000 },
  );
});
