/**
 * `POST /api/v1/sessions/end` against the real control plane with real RBAC: the auth service's
 * sign-out (issue 29 item 5). The session token is the proof and names the user; the caller needs
 * delete on userlands/sessions, which the auth service has instead of patch on Userlands. Whose
 * session ends, and whose never does; the mark outlives the user's Userlands (issue 41 item 4).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeJwt } from "jose";
import { SessionRecordAnnotations, sessionEnded } from "../../../api/sessions.ts";
import {
  adminRest,
  createUserland,
  getSessionRecord,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { startConsole } from "./consoleSupport.ts";
import { admin, startUserManager } from "./support.ts";
import { moveLegacySessionMarks } from "../legacySessionMarks.ts";
import { UserlandStore } from "../store.ts";

const SIGN_OUT_RULES = [
  { apiGroups: ["userland.dev"], resources: ["userlands/sessions"], verbs: ["delete"] },
];

test("a session token ends that session only, in its own user's record: bob's session cannot end alice's", async (t) => {
  const um = await startConsole(t);
  await createUserland(um.ns, "alice-code", "alice", "code");
  await createUserland(um.ns, "bob-code", "bob", "code");
  const auth = await um.callerWith("userland-auth", SIGN_OUT_RULES);
  const token = async (user: string) => {
    const cookie = await um.cookie(user);
    return cookie.slice(cookie.indexOf("=") + 1);
  };
  const [alice, bob, bobLaptop] = [await token("alice"), await token("bob"), await token("bob")];
  const end = (body: unknown, caller = auth) =>
    um.call("POST", "/api/v1/sessions/end", { token: caller, body });
  const ended = async (session: string) => {
    const ref = decodeJwt<{ sub: string; sid: string; iat: number; exp: number }>(session);
    return sessionEnded(ref, await getSessionRecord(um.ns, ref.sub));
  };
  const marks = async (user: string) =>
    (await getSessionRecord(um.ns, user))?.metadata.annotations?.[SessionRecordAnnotations.endedSessions];

  await t.test(
    "a caller without delete on userlands/sessions may not, even a teacher who may patch",
    async () => {
      for (const caller of [um.teacher, um.student]) {
        const r = await end({ session: bob }, caller);
        assert.equal(r.status, 403, r.text);
      }
      assert.equal(await marks("bob"), undefined);
    },
  );

  await t.test("nothing in the request names a user or a Userland (400)", async () => {
    for (const body of [
      { session: bob, user: "alice" },
      { session: bob, name: "alice-code" },
      { session: bob, sessionId: "x", expires: 1 },
    ]) {
      const r = await end(body);
      assert.equal(r.status, 400, r.text);
    }
    assert.equal(await marks("alice-code"), undefined);
    assert.equal(await marks("bob"), undefined);
  });

  await t.test("a token the auth service did not sign ends nothing (401)", async () => {
    const r = await end({ session: "not.a.session" });
    assert.equal(r.status, 401, r.text);
  });

  await t.test(
    "bob's session ends bob's session, in bob's record; alice's and bob's other stay",
    async () => {
      const r = await end({ session: bob });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { user: "bob" });
      assert.equal(await ended(bob), true, "bob's signed-out session is ended");
      assert.equal(await ended(bobLaptop), false, "bob's laptop is not");
      assert.equal(await ended(alice), false, "alice's session is not");
      assert.equal(await marks("alice"), undefined, "nothing is written for alice");
      assert.match((await marks("bob")) ?? "", new RegExp(`^${(decodeJwt(bob) as { sid: string }).sid}:`));
    },
  );

  await t.test("deleting bob's Userland does not bring his ended session back", async () => {
    await (await adminRest()).delete(userlandsPath(um.ns, "bob-code"));
    await eventually("bob-code to be gone", async () => (await admin.listUserlands(um.ns)).length === 1);
    assert.equal(await ended(bob), true);
  });

  await t.test("a user without a Userland is signed out everywhere too", async () => {
    const carol = await token("carol");
    const r = await end({ session: carol });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { user: "carol" });
    assert.equal(await ended(carol), true);
  });
});

test("marks an older version wrote on Userlands move into the session records at start-up, under the user-manager's own rights", async (t) => {
  const um = await startUserManager(t);
  await createUserland(um.ns, "dan-code", "dan", "code");
  await createUserland(um.ns, "erin-code", "erin", "code");
  const soon = Math.floor(Date.now() / 1000) + 600;
  const { sessionsValidAfter, endedSessions } = SessionRecordAnnotations;
  const legacy = {
    [sessionsValidAfter]: new Date(Date.now() - 60_000).toISOString(),
    [endedSessions]: `s1:${soon}`,
  };
  await (await adminRest()).patch(userlandsPath(um.ns, "dan-code"), { metadata: { annotations: legacy } });

  const move = () => moveLegacySessionMarks(new UserlandStore(um.rest, um.ns), um.rest, um.ns, Date.now);
  assert.equal(await move(), 1, "one Userland carried marks");
  const record = await getSessionRecord(um.ns, "dan");
  assert.equal(record?.metadata.annotations?.[endedSessions], `s1:${soon}`);
  const before = { sid: "s0", iat: Math.floor(Date.now() / 1000) - 3600, exp: soon };
  assert.equal(sessionEnded(before, record), true, "a session from before the old mark stays ended");
  assert.equal(sessionEnded({ ...before, sid: "s1", iat: Math.floor(Date.now() / 1000) }, record), true);
  const dan = await admin.getUserland(um.ns, "dan-code");
  assert.equal(dan.metadata.annotations?.[sessionsValidAfter], undefined, "gone from the Userland");
  assert.equal(await getSessionRecord(um.ns, "erin"), undefined, "no record for a user without marks");
  assert.equal(await move(), 0, "a second start finds nothing to move");
});

test("without the session keys, ending a session by its token is not available (501)", async (t) => {
  const um = await startUserManager(t);
  const auth = await um.callerWith("userland-auth", SIGN_OUT_RULES);
  const r = await um.call("POST", "/api/v1/sessions/end", { token: auth, body: { session: "x.y.z" } });
  assert.equal(r.status, 501, r.text);
});
