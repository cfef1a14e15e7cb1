/**
 * The console's own session check refuses ended sessions (issue 29 item 5): a teacher's session
 * signed out (a mark in the teacher's session record, as the proxy's sign-out has it written) no longer signs
 * in to the console or the API, within a watch event, while the teacher's other session still
 * does. The check reads a watch, not a list per request (issue 41 item 10).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeJwt } from "jose";
import { SESSION_COOKIE } from "../../../lib/session.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { adminRest } from "../../../test/support/resources.ts";
import { endSessionsOf } from "../sessionRecordWriter.ts";
import { startConsole } from "./consoleSupport.ts";
import { admin } from "./support.ts";

test("an ended session signs nobody in to the console or the API; the teacher's other session does", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "alice-code", "alice@uni.example", "code");
  await h.appoint({ user: "alice@uni.example" });
  const lab = await h.cookie("alice@uni.example");
  const laptop = await h.cookie("alice@uni.example");
  await eventually(
    "the console to let the teacher in",
    async () => (await h.page("/console/", lab)).status === 200,
  );
  const api = async (cookie: string) =>
    fetch(new URL("api/v1/userlands", h.base), { headers: { cookie, accept: "application/json" } });
  assert.equal((await api(lab)).status, 200);

  // Signed out on the lab computer: the mark the proxy's sign-out has the user-manager write.
  const { sid, exp } = decodeJwt(lab.slice(SESSION_COOKIE.length + 1)) as { sid: string; exp: number };
  await endSessionsOf(await adminRest(), h.ns, "alice@uni.example", { sid, exp }, () => Date.now());

  // Within a watch event of the mark.
  const refused = await eventually(
    "the ended session to be refused",
    async () => {
      const r = await api(lab);
      return r.status === 401 && r;
    },
    5000,
    50,
  );
  assert.match(await refused.text(), /the session was ended/);
  assert.notEqual((await h.page("/console/", lab)).status, 200, "the console page refuses it too");
  assert.equal((await h.page("/console/", laptop)).status, 200, "the laptop's session still works");
  assert.equal((await api(laptop)).status, 200);
});

test("a cookie-signed request costs no list of Userlands for the ended-session check (issue 41 item 10)", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "alice-code", "alice@uni.example", "code");
  await h.appoint({ user: "alice@uni.example" });
  const cookie = await h.cookie("alice@uni.example");
  const api = async () =>
    fetch(new URL("api/v1/userlands/alice-code", h.base), {
      headers: { cookie, accept: "application/json" },
    });
  await eventually("the API to let the teacher in", async () => (await api()).status === 200);
  // GET /api/v1/userlands/{name} reads one Userland itself; anything more is the session check's.
  let reads = 0;
  const before = h.rest.onRequest;
  h.rest.onRequest = (method, code) => {
    if (method === "GET") reads++;
    before?.(method, code);
  };
  const REQUESTS = 10;
  for (let i = 0; i < REQUESTS; i++) assert.equal((await api()).status, 200);
  h.rest.onRequest = before;
  assert.equal(reads, REQUESTS, `${REQUESTS} requests read ${reads} times from the API server`);
});
