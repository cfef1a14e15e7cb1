/**
 * PROXY_SESSION_JWKS_URL: the proxy takes its session keys from a real auth service on 127.0.0.1
 * (its /.well-known/jwks.json), is Ready while the auth service is still down, accepts the sessions
 * the auth service signs once it is up, and after a rotation (a new PEM key first, the auth service
 * restarted) accepts sessions signed with the new key without being restarted itself.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { test } from "node:test";
import { heldPort } from "../../../cluster/ports.ts";
import { SESSION_COOKIE, createSessionSigner, parsePemSigningKeys } from "../../../lib/session.ts";
import { eventually, testNamespace } from "../../../test/support/cluster.ts";
import { startOperator } from "../../../test/support/operator.ts";
import {
  createTemplate,
  createUserland,
  simpleTemplateSpec,
  waitForPhase,
} from "../../../test/support/resources.ts";
import { listen, startAuth, tempDir } from "../../auth/test/support/auth.ts";
import { Browser } from "../../auth/test/support/browser.ts";
import { startGitHubStandIn } from "../../auth/test/support/githubStandIn.ts";
import { send, startProxy, startUpstream } from "./support.ts";

const HOST = "code.example.test";
const USER = "student";

const pem = (type: "sec1" | "pkcs8") =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type }).toString();

test("sessions are checked with the keys the auth service serves; a rotated key is picked up without a restart", async (t) => {
  const ns = await testNamespace(t, "proxy-jwks");
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1"));
  await createUserland(ns, "code-student", USER, "code");
  const upstream = await startUpstream(t, "student/code");

  const dir = await tempDir();
  t.after(() => dir.remove());
  const github = await startGitHubStandIn([{ login: USER, id: 7, orgs: [], emails: [] }]);
  t.after(() => github.close());
  github.signInAs(USER);
  const authEnv = (keysFile: string) => ({
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_GITHUB_CLIENT_ID: github.clientId,
    AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
    AUTH_GITHUB_URL: github.url,
    AUTH_GITHUB_API_URL: github.url,
  });
  // Nothing listens on it until the auth service starts, and no other process can take it.
  const held = await heldPort();
  t.after(() => held.release());
  const authPort = held.port;

  // The auth service is not up yet: the proxy starts and is Ready all the same.
  const proxy = await startProxy(t, ns, new URL(`http://127.0.0.1:${authPort}/.well-known/jwks.json`), {
    PROXY_DEFAULT_TEMPLATE: "code",
  });
  const service = (await waitForPhase(ns, "code-student", "Ready")).status?.service;
  assert.ok(service, "the Userland names its Service");
  proxy.resolver.set(ns, service.name, upstream.url);
  assert.equal(
    (await fetch(new URL("readyz", proxy.adminUrl))).status,
    200,
    "Ready without the auth service",
  );
  const oldKey = pem("sec1");
  const early = await createSessionSigner(await parsePemSigningKeys(oldKey)).sign(USER, 600);
  const get = (token: string | undefined) =>
    send(proxy.port, { headers: { host: HOST, ...(token ? { cookie: `${SESSION_COOKIE}=${token}` } : {}) } });
  assert.equal((await get(early)).status, 401, "no keys yet: refused, not an error");

  // The auth service comes up with one PEM key; a student logs in; the proxy lets them through.
  const listener = await listen(authPort);
  t.after(() => listener.close());
  let auth = await startAuth(listener, authEnv(await dir.file("v1.pem", oldKey)));
  const login = async () => {
    const browser = new Browser();
    await browser.navigate(new URL("login", auth.url));
    const token = browser.cookie(SESSION_COOKIE);
    assert.ok(token, "logged in");
    return token;
  };
  const before = await login();
  const through = await get(before);
  assert.equal(through.status, 200, through.body);
  assert.equal(through.json<{ xUser: string }>().xUser, USER);
  assert.equal((await get(early)).status, 200, "the same key's earlier session too, now that it is known");

  // A key the auth service does not have is refused (and makes the proxy fetch the keys again).
  const newKey = pem("pkcs8");
  const newSigner = createSessionSigner(await parsePemSigningKeys(newKey));
  const premature = await newSigner.sign(USER, 600);
  assert.equal((await get(premature)).status, 401, "a key the auth service does not serve");

  // Rotation: the new key first, the old one kept; the auth service restarts, the proxy does not.
  await auth.close();
  auth = await startAuth(listener, authEnv(await dir.file("v2.pem", `${newKey}${oldKey}`)));
  t.after(() => auth.close());
  const after = await login();
  const kid = (token: string) =>
    (JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString()) as { kid: string }).kid;
  assert.equal(kid(after), newSigner.kid, "the auth service signs with the new key");
  assert.notEqual(kid(after), kid(before));
  // Within the fetch cooldown (the refused token above just fetched), then accepted.
  const accepted = await eventually(
    "the proxy to accept a session signed with the new key",
    async () => {
      const r = await get(after);
      return r.status === 200 ? r : undefined;
    },
    15_000,
    250,
  );
  assert.equal(accepted.json<{ xUser: string }>().xUser, USER);
  assert.equal((await get(premature)).status, 200);
  assert.equal((await get(before)).status, 200, "sessions signed with the old key still pass");
  assert.equal((await get(undefined)).status, 401);
});
