/**
 * `POST /api/v1/sessions/end` against the real control plane with real RBAC: the auth service's
 * sign-out (issue 29 item 5). The session token is the proof and names the user; the caller needs
 * delete on userlands/sessions, which the auth service has instead of patch on Userlands. Whose
 * session ends, and whose never does.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeJwt } from "jose";
import { sessionEnded } from "../../../api/sessions.ts";
import { UserlandAnnotations } from "../../../api/v1alpha1/index.ts";
import { createUserland } from "../../../test/support/resources.ts";
import { startConsole } from "./consoleSupport.ts";
import { admin, startUserManager } from "./support.ts";

const SIGN_OUT_RULES = [
  { apiGroups: ["userland.dev"], resources: ["userlands/sessions"], verbs: ["delete"] },
];

test("a session token ends that session only, on its own user's Userland: bob's session cannot end alice's", async (t) => {
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
  const ended = async (session: string) =>
    sessionEnded(
      decodeJwt<{ sid: string; iat: number; exp: number }>(session),
      await admin.listUserlands(um.ns),
    );
  const marks = async (name: string) =>
    (await admin.getUserland(um.ns, name)).metadata.annotations?.[UserlandAnnotations.endedSessions];

  await t.test(
    "a caller without delete on userlands/sessions may not, even a teacher who may patch",
    async () => {
      for (const caller of [um.teacher, um.student]) {
        const r = await end({ session: bob }, caller);
        assert.equal(r.status, 403, r.text);
      }
      assert.equal(await marks("bob-code"), undefined);
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
    assert.equal(await marks("bob-code"), undefined);
  });

  await t.test("a token the auth service did not sign ends nothing (401)", async () => {
    const r = await end({ session: "not.a.session" });
    assert.equal(r.status, 401, r.text);
  });

  await t.test(
    "bob's session ends bob's session, on bob's Userland; alice's and bob's other stay",
    async () => {
      const r = await end({ session: bob });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { user: "bob", userland: "bob-code" });
      assert.equal(await ended(bob), true, "bob's signed-out session is ended");
      assert.equal(await ended(bobLaptop), false, "bob's laptop is not");
      assert.equal(await ended(alice), false, "alice's session is not");
      assert.equal(await marks("alice-code"), undefined, "nothing is written on alice's Userland");
      assert.match(
        (await marks("bob-code")) ?? "",
        new RegExp(`^${(decodeJwt(bob) as { sid: string }).sid}:`),
      );
    },
  );

  await t.test("a user without a Userland: nothing carries a mark (200, userland null)", async () => {
    const r = await end({ session: await token("carol") });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { user: "carol", userland: null });
  });
});

test("without the session keys, ending a session by its token is not available (501)", async (t) => {
  const um = await startUserManager(t);
  const auth = await um.callerWith("userland-auth", SIGN_OUT_RULES);
  const r = await um.call("POST", "/api/v1/sessions/end", { token: auth, body: { session: "x.y.z" } });
  assert.equal(r.status, 501, r.text);
});
