/**
 * The identity provider's groups travel in the session (for the user-manager's console, which asks
 * RBAC about them): from the configured claim of a real oidc-provider, through a real login, to
 * /whoami and to a verifier holding only the public keys; and into the person's session record,
 * where the platform reads them without a session (issue 41 item 7).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { recordGroups } from "../../../api/sessions.ts";
import { createSessionVerifier, loadSigningKeys, publicJwks, SESSION_COOKIE } from "../../../lib/session.ts";
import { getSessionRecord } from "../../../test/support/resources.ts";
import { consoleConfig } from "../../user-manager/test/consoleSupport.ts";
import { startUserManager } from "../../user-manager/test/support.ts";
import { newKeysFile, startAuthWithOidc, tempDir, type AuthWithOidc } from "./support/auth.ts";
import { Browser } from "./support/browser.ts";

const many = Array.from({ length: 200 }, (_, i) => `course-${String(i).padStart(3, "0")}-with-a-long-name`);
const accounts = {
  carol: { preferred_username: "carol", groups: ["staff", "teachers"] },
  single: { preferred_username: "single", groups: "teachers" },
  none: { preferred_username: "none" },
  odd: { preferred_username: "odd", groups: ["ok", " leading", "line\nbreak", 7, "ok"] },
  crowded: { preferred_username: "crowded", groups: many },
};

let env: AuthWithOidc;

before(async () => {
  env = await startAuthWithOidc(accounts, { AUTH_OIDC_SCOPES: "openid,profile,groups" });
});
after(async () => {
  await env?.close();
});

/** Signs `account` in; the browser then holds its session. */
async function signIn(account: string): Promise<Browser> {
  const browser = new Browser();
  env.idp.signInAs(account);
  const { url } = await browser.navigate(new URL("login", env.auth.url), {
    stopAt: (u) => u.pathname === "/callback/oidc",
  });
  const done = await browser.fetch(url);
  assert.equal(done.status, 302, `${account} signed in`);
  return browser;
}

async function whoami(browser: Browser): Promise<{ user: string; groups: string[] }> {
  const r = await browser.fetch(new URL("whoami", env.auth.url));
  assert.equal(r.status, 200);
  return (await r.json()) as { user: string; groups: string[] };
}

test("the groups claim is in the session: /whoami shows it, a verifier with the public keys reads it", async () => {
  const browser = await signIn("carol");
  const me = await whoami(browser);
  assert.equal(me.user, "carol");
  assert.deepEqual(me.groups, ["staff", "teachers"]);
  const verifier = createSessionVerifier(publicJwks(await loadSigningKeys(env.keysFile)));
  const session = await verifier.verify(browser.cookie(SESSION_COOKIE));
  assert.deepEqual(session?.groups, ["staff", "teachers"]);

  assert.deepEqual(
    (await whoami(await signIn("single"))).groups,
    ["teachers"],
    "a single string is one group",
  );
  assert.deepEqual((await whoami(await signIn("none"))).groups, [], "no claim, no groups");
});

test("groups that cannot be Kubernetes group names, repeats, and more than a cookie holds are left out", async () => {
  assert.deepEqual((await whoami(await signIn("odd"))).groups, ["ok"]);
  const crowded = await signIn("crowded");
  const { groups } = await whoami(crowded);
  assert.ok(groups.length > 10 && groups.length < many.length, `${groups.length} of ${many.length} kept`);
  assert.deepEqual(groups, many.slice(0, groups.length), "the first ones, in order");
  const cookie = crowded.cookie(SESSION_COOKIE) ?? "";
  assert.ok(cookie.length < 4000, `the session cookie stays under 4 KB (${cookie.length})`);
});

test("at each sign-in the session's groups go into the person's session record (a real user-manager, real RBAC), where the operator reads who teaches by group", async (t) => {
  const dir = await tempDir();
  t.after(() => dir.remove());
  const { file: keysFile } = await newKeysFile(dir);
  const publicFile = await dir.file(
    "public.json",
    JSON.stringify(publicJwks(await loadSigningKeys(keysFile))),
  );
  const um = await startUserManager(t, { templates: [], config: consoleConfig(publicFile) });
  // The auth service's right on sessions (the chart's auth.signOut), as for sign-out.
  const token = await um.callerWith("userland-auth", [
    { apiGroups: ["userland.dev"], resources: ["userlands/sessions"], verbs: ["delete"] },
  ]);
  const withReport = await startAuthWithOidc(accounts, {
    AUTH_OIDC_SCOPES: "openid,profile,groups",
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_SIGN_OUT_URL: um.base,
    AUTH_SIGN_OUT_TOKEN_FILE: await dir.file("user-manager-token", token),
  });
  t.after(() => withReport.close());
  const browser = new Browser();
  withReport.idp.signInAs("carol");
  const { url } = await browser.navigate(new URL("login", withReport.auth.url), {
    stopAt: (u) => u.pathname === "/callback/oidc",
  });
  assert.equal((await browser.fetch(url)).status, 302, "carol signed in");
  const record = await getSessionRecord(um.ns, "carol");
  assert.deepEqual(recordGroups(record), ["staff", "teachers"], "recorded before the sign-in answered");
});
