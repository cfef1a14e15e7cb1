/**
 * The local identity provider in a process of its own (dev/identityProviderProcess.ts), as the
 * benchmarks start it: it serves the issuer it was given on the socket passed down, in another
 * process than this one, knows the auth service's redirect URI, and is gone once closed.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startDevIdentityProviderProcess } from "../../dev/identityProviderProcess.ts";
import { DEV_CLIENT } from "../../dev/identityProvider.ts";

test("the provider process serves its issuer, starts a sign-in for the auth service, and stops", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "idp-process-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const redirectUri = "http://127.0.0.1:1/callback/oidc";
  const idp = await startDevIdentityProviderProcess({
    port: 0,
    redirectUris: [redirectUri],
    logFile: join(dir, "idp.log"),
  });
  let closed = false;
  t.after(() => (closed ? undefined : idp.close()));

  const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as {
    issuer: string;
    authorization_endpoint: string;
  };
  assert.equal(discovery.issuer, idp.issuer);
  assert.equal(idp.clientId, DEV_CLIENT.clientId);

  const authorize = new URL(discovery.authorization_endpoint);
  for (const [key, value] of Object.entries({
    client_id: idp.clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    scope: "openid",
  }))
    authorize.searchParams.set(key, value);
  const toLogin = await fetch(authorize, { redirect: "manual" });
  assert.equal(toLogin.status, 303, await toLogin.text());
  const form = await fetch(new URL(toLogin.headers.get("location") ?? "", idp.issuer), {
    headers: { cookie: (toLogin.headers.getSetCookie() ?? []).map((c) => c.split(";")[0]).join("; ") },
  });
  assert.equal(form.status, 200);
  assert.match(await form.text(), /Sign in to Userland/);

  // Another redirect URI is refused: the provider knows only the one it was given.
  authorize.searchParams.set("redirect_uri", "http://127.0.0.1:2/elsewhere");
  const refused = await fetch(authorize, { redirect: "manual" });
  assert.notEqual(refused.status, 303);

  await idp.close();
  closed = true;
  await assert.rejects(fetch(`${idp.issuer}/.well-known/openid-configuration`));
});
