/**
 * Sessions ended before they expire (issue 29 item 5), against the real control plane: two proxy
 * replicas, each with its own informer, and the real user-manager. A session signed out on one
 * browser is refused by both replicas within seconds while the student's other browser keeps
 * working; "sign out everywhere" ends that one too; a session signed in afterwards works.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeJwt } from "jose";
import { eventually } from "../../../test/support/cluster.ts";
import { createUserland, markReady } from "../../../test/support/resources.ts";
import { CONSOLE_ORIGIN, LOGIN_URL, startConsole } from "../../user-manager/test/consoleSupport.ts";
import { forgeToken, send, startProxy, startUpstream, testKeys, type TestProxy } from "./support.ts";

const CODE_HOST = "code.example.test";
/** How soon every replica must refuse an ended session. */
const WITHIN_MS = 5_000;

test("a session signed out on one browser is refused by two proxy replicas within seconds; sign out everywhere ends the rest", async (t) => {
  const keys = await testKeys(t);
  const um = await startConsole(t, {
    config: {
      sessionKeysFile: keys.publicFile,
      loginUrl: new URL(LOGIN_URL),
      consoleUrl: new URL(`${CONSOLE_ORIGIN}/console/`),
    },
  });
  const ns = um.ns;
  await createUserland(ns, "mallory-code", "mallory", "code");
  await markReady(ns, "mallory-code", { name: "mallory-code-svc", port: 80 });
  const upstream = await startUpstream(t, "mallory");
  const replicas: TestProxy[] = [await startProxy(t, ns, keys), await startProxy(t, ns, keys)];
  for (const proxy of replicas) proxy.resolver.set(ns, "mallory-code-svc", upstream.url);

  const token = async () => keys.signer.sign("mallory", 3600);
  const get = (proxy: TestProxy, value: string) =>
    send(proxy.port, { headers: { host: CODE_HOST, cookie: `userland_session=${value}` } });
  const lab = await token(); // the lab computer
  const laptop = await token(); // the student's own laptop
  for (const proxy of replicas)
    await eventually("both replicas to route mallory", async () => (await get(proxy, lab)).status === 200);

  // Signed out on the lab computer: that session ends (a teacher's token here; the proxy and the
  // auth service call the same route for the student).
  const { sid, exp } = decodeJwt(lab);
  const ended = Date.now();
  const signOut = await um.call("POST", "/api/v1/userlands/mallory-code/end-sessions", {
    token: um.teacher,
    body: { sessionId: sid, expires: exp },
  });
  assert.equal(signOut.status, 200, signOut.text);
  for (const [i, proxy] of replicas.entries()) {
    const refused = await eventually(
      `replica ${i + 1} to refuse the signed-out session`,
      async () => {
        const r = await get(proxy, lab);
        return r.status === 401 ? r : undefined;
      },
      WITHIN_MS,
      50,
    );
    assert.equal(refused.headers["clear-site-data"], '"cookies"', "the browser drops the dead cookie");
  }
  const took = Date.now() - ended;
  assert.ok(took < WITHIN_MS, `refused by both replicas after ${took} ms`);
  console.log(`# the signed-out session was refused by both replicas ${took} ms after sign-out`);
  for (const proxy of replicas)
    assert.equal((await get(proxy, laptop)).status, 200, "the laptop still works");

  // Sign out everywhere (a stolen laptop): every session issued until now ends.
  const everywhere = await um.call("POST", "/api/v1/userlands/mallory-code/end-sessions", {
    token: um.teacher,
  });
  assert.equal(everywhere.status, 200, everywhere.text);
  for (const [i, proxy] of replicas.entries())
    await eventually(
      `replica ${i + 1} to refuse the laptop's session`,
      async () => (await get(proxy, laptop)).status === 401,
      WITHIN_MS,
      50,
    );
  const reached = upstream.seen.length;
  for (const proxy of replicas)
    for (const value of [lab, laptop]) assert.equal((await get(proxy, value)).status, 401);
  assert.equal(upstream.seen.length, reached, "nothing ended reaches the environment");

  // Signed in again afterwards (a session issued after the mark's second): it works everywhere.
  const markSecond = Math.ceil(Date.now() / 1000);
  const fresh = await forgeToken(keys.keys, { sub: "mallory", iat: markSecond + 1, exp: markSecond + 3600 });
  for (const proxy of replicas) assert.equal((await get(proxy, fresh)).status, 200);

  // Someone who may not start and stop it may not end its sessions either.
  const stranger = await um.call("POST", "/api/v1/userlands/mallory-code/end-sessions", {
    token: um.student,
  });
  assert.equal(stranger.status, 403);
});
