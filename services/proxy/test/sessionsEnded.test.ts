/**
 * Sessions ended before they expire (issue 29 item 5), against the real control plane: two proxy
 * replicas, each with its own informer, and the real user-manager. A session signed out on one
 * browser (the home page's form) is refused by both replicas within seconds while the student's
 * other browser keeps working; "sign out everywhere" ends that one too; a session signed in
 * afterwards works until a teacher ends it (a stolen laptop).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { decodeJwt } from "jose";
import { eventually, serviceAccountToken } from "../../../test/support/cluster.ts";
import { createUserland, markReady } from "../../../test/support/resources.ts";
import { consoleConfig, LOGIN_URL, startConsole } from "../../user-manager/test/consoleSupport.ts";
import type { WebSocket } from "ws";
import {
  forgeToken,
  openWebSocket,
  proxyKubeConfig,
  roundTrip,
  send,
  startProxy,
  startUpstream,
  testKeys,
  type TestProxy,
} from "./support.ts";

const CODE_HOST = "code.example.test";
/** How soon every replica must refuse an ended session. */
const WITHIN_MS = 5_000;

test("a session signed out on one browser is refused by two proxy replicas within seconds; sign out everywhere and a teacher end the rest", async (t) => {
  const keys = await testKeys(t);
  const um = await startConsole(t, { config: consoleConfig(keys.publicFile) });
  const ns = um.ns;
  await createUserland(ns, "mallory-code", "mallory", "code");
  await markReady(ns, "mallory-code", { name: "mallory-code-svc", port: 80 });
  const upstream = await startUpstream(t, "mallory");
  await proxyKubeConfig(ns);
  const tokenFile = join(keys.dir, "proxy-token");
  await writeFile(tokenFile, await serviceAccountToken(ns, "userland-proxy"));
  const withUserManager = { PROXY_USER_MANAGER_URL: um.base, PROXY_USER_MANAGER_TOKEN_FILE: tokenFile };
  const replicas: TestProxy[] = [
    await startProxy(t, ns, keys, withUserManager),
    await startProxy(t, ns, keys, withUserManager),
  ];
  for (const proxy of replicas) proxy.resolver.set(ns, "mallory-code-svc", upstream.url);

  const token = async () => keys.signer.sign("mallory", 3600);
  const get = (proxy: TestProxy, value: string) =>
    send(proxy.port, { headers: { host: CODE_HOST, cookie: `userland_session=${value}` } });
  /** The home page's sign-out form, sent from `value`'s browser to the first replica. */
  const signOut = (value: string, everywhere: boolean) =>
    send(replicas[0]?.port ?? 0, {
      method: "POST",
      path: "/_userland/signout",
      headers: {
        host: CODE_HOST,
        origin: `http://${CODE_HOST}`,
        "content-type": "application/x-www-form-urlencoded",
        cookie: `userland_session=${value}`,
      },
      body: everywhere ? "everywhere=yes" : "",
    });
  /** Both replicas refuse `value` within WITHIN_MS of `since`; how long it took. */
  const refusedEverywhere = async (value: string, since: number, what: string) => {
    for (const [i, proxy] of replicas.entries()) {
      const refused = await eventually(
        `replica ${i + 1} to refuse ${what}`,
        async () => {
          const r = await get(proxy, value);
          return r.status === 401 ? r : undefined;
        },
        WITHIN_MS,
        50,
      );
      assert.equal(refused.headers["clear-site-data"], '"cookies"', "the browser drops the dead cookie");
    }
    return Date.now() - since;
  };

  const lab = await token(); // the lab computer
  const laptop = await token(); // the student's own laptop
  for (const proxy of replicas)
    await eventually("both replicas to route mallory", async () => (await get(proxy, lab)).status === 200);

  // WebSockets open before the sign-out (an editor on each replica, from each browser).
  const socket = async (proxy: TestProxy, value: string): Promise<WebSocket> => {
    const opened = await openWebSocket(proxy.port, { host: CODE_HOST, cookie: `userland_session=${value}` });
    assert.ok("ws" in opened, `the WebSocket opens: ${JSON.stringify(opened)}`);
    t.after(() => opened.ws.terminate());
    return opened.ws;
  };
  const labSockets = await Promise.all(replicas.map((proxy) => socket(proxy, lab)));
  const laptopSockets = await Promise.all(replicas.map((proxy) => socket(proxy, laptop)));
  const labClosed = labSockets.map(
    (ws) => new Promise<number>((resolve) => ws.once("close", () => resolve(Date.now()))),
  );

  // Signed out on the lab computer (the home page's form): that session ends on every replica.
  let since = Date.now();
  const out = await signOut(lab, false);
  assert.equal(out.status, 303, out.body);
  assert.equal(out.headers.location, new URL("logout", LOGIN_URL).href, "on to the auth service's sign-out");
  const took = await refusedEverywhere(lab, since, "the signed-out session");
  console.log(`# the signed-out session was refused by both replicas ${took} ms after sign-out`);
  for (const proxy of replicas)
    assert.equal((await get(proxy, laptop)).status, 200, "the laptop still works");
  // The lab's open WebSockets were closed by both replicas when they learnt of the mark.
  const closedAt = await Promise.race([
    Promise.all(labClosed),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), WITHIN_MS).unref()),
  ]);
  assert.ok(closedAt, `both replicas close the signed-out session's WebSockets within ${WITHIN_MS} ms`);
  console.log(`# its WebSockets were closed ${Math.max(...closedAt) - since} ms after sign-out`);
  for (const ws of laptopSockets)
    assert.equal((await roundTrip(ws, "still here")).echo, "still here", "the laptop's WebSockets stay open");

  // Sign out everywhere, from the laptop: every session issued until now ends.
  since = Date.now();
  const everywhere = await signOut(laptop, true);
  assert.equal(everywhere.status, 303, everywhere.body);
  console.log(
    `# sign out everywhere: refused by both replicas after ${await refusedEverywhere(laptop, since, "the laptop's session")} ms`,
  );
  const reached = upstream.seen.length;
  for (const proxy of replicas)
    for (const value of [lab, laptop]) assert.equal((await get(proxy, value)).status, 401);
  assert.equal(upstream.seen.length, reached, "nothing ended reaches the environment");

  // Signed in again afterwards (a session issued after the mark's second): it works everywhere.
  const markSecond = Math.ceil(Date.now() / 1000);
  const fresh = await forgeToken(keys.keys, { sub: "mallory", iat: markSecond + 1, exp: markSecond + 3600 });
  for (const proxy of replicas) assert.equal((await get(proxy, fresh)).status, 200);

  // A stolen laptop: a teacher (who may start and stop it) ends that session through the API.
  const { sid, exp } = decodeJwt(fresh);
  since = Date.now();
  const ended = await um.call("POST", "/api/v1/userlands/mallory-code/end-sessions", {
    token: um.teacher,
    body: { sessionId: sid, expires: exp },
  });
  assert.equal(ended.status, 200, ended.text);
  await refusedEverywhere(fresh, since, "the stolen laptop's session");
  // Someone who may not start and stop it may not end its sessions either.
  const stranger = await um.call("POST", "/api/v1/userlands/mallory-code/end-sessions", {
    token: um.student,
  });
  assert.equal(stranger.status, 403);
});
