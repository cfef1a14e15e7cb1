/** Groups in session tokens (lib/session.ts): optional, checked, bounded; older tokens stay valid. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SignJWT } from "jose";
import {
  SESSION_AUDIENCE,
  SESSION_GROUPS_MAX_CHARS,
  SESSION_ISSUER,
  createSessionSigner,
  createSessionVerifier,
  generateSigningKey,
  parseSigningKeys,
  publicJwks,
  sessionGroups,
} from "../session.ts";

async function keys() {
  const signing = await parseSigningKeys({ keys: [await generateSigningKey("k1")] });
  return { signing, verifier: createSessionVerifier(publicJwks(signing)) };
}

/** A token signed with the real key but with claims of our choosing (what an older or broken signer wrote). */
async function signed(signing: Awaited<ReturnType<typeof keys>>["signing"], claims: Record<string, unknown>) {
  const key = signing.keys[0];
  assert.ok(key);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    sid: "s",
    iat: now,
    exp: now + 60,
    iss: SESSION_ISSUER,
    aud: SESSION_AUDIENCE,
    ...claims,
  })
    .setProtectedHeader({ alg: "ES256", kid: key.kid })
    .sign(key.privateKey);
}

test("groups round-trip; a token without the claim (signed before groups existed) is valid with none", async () => {
  const { signing, verifier } = await keys();
  const signer = createSessionSigner(signing);
  assert.deepEqual((await verifier.verify(await signer.sign("alice", 60, ["teachers", "staff"])))?.groups, [
    "teachers",
    "staff",
  ]);
  const plain = await signer.sign("alice", 60);
  assert.equal(
    (JSON.parse(Buffer.from(plain.split(".")[1] ?? "", "base64url").toString()) as { groups?: unknown })
      .groups,
    undefined,
  );
  assert.deepEqual((await verifier.verify(plain))?.groups, []);
  assert.deepEqual((await verifier.verify(await signed(signing, { sub: "old" })))?.groups, []);
});

test("a malformed groups claim makes the token no session", async () => {
  const { signing, verifier } = await keys();
  assert.ok(await verifier.verify(await signed(signing, { sub: "a", groups: ["x"] })));
  for (const groups of ["teachers", [1], ["ok", "line\nbreak"], [""], { a: 1 }, null])
    assert.equal(
      await verifier.verify(await signed(signing, { sub: "a", groups })),
      undefined,
      JSON.stringify(groups),
    );
});

test("the signer refuses groups sessionGroups would not keep; sessionGroups keeps valid ones in order while they fit", async () => {
  const { signing } = await keys();
  const signer = createSessionSigner(signing);
  await assert.rejects(signer.sign("a", 60, ["ok", "ok"]), /groups/);
  await assert.rejects(signer.sign("a", 60, [" x"]), /groups/);
  assert.deepEqual(sessionGroups(["b", "a", "b", "bad\t", "c"]), {
    groups: ["b", "a", "c"],
    dropped: ["bad\t"],
  });
  const big = Array.from({ length: 100 }, (_, i) => `group-number-${i}-of-a-large-directory`);
  const { groups, dropped } = sessionGroups(big);
  assert.deepEqual([...groups, ...dropped], big);
  assert.ok(JSON.stringify(groups).length <= SESSION_GROUPS_MAX_CHARS);
  assert.ok(JSON.stringify([...groups, dropped[0]]).length > SESSION_GROUPS_MAX_CHARS, "as many as fit");
});
