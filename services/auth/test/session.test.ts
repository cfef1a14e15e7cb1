/**
 * lib/session.ts: the session cookie contract the proxy relies on, and scripts/session-keys.ts.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { SignJWT, importJWK, type JWK } from "jose";
import {
  SESSION_AUDIENCE,
  SESSION_COOKIE,
  SESSION_ISSUER,
  createSessionSigner,
  createSessionVerifier,
  generateSigningKey,
  loadSigningKeys,
  loadVerificationKeys,
  parseSigningKeys,
  parseVerificationKeys,
  publicJwks,
} from "../../../lib/session.ts";
import { listen, startAuth, tempDir, writeKeys, type TempDir } from "./support/auth.ts";
import { Browser } from "./support/browser.ts";
import { startGitHubStandIn } from "./support/github-stand-in.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

/** A token signed with `jwk` with the given header and claims, to forge what sign() never makes. */
async function forge(
  jwk: JWK,
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
): Promise<string> {
  const key = await importJWK(jwk, "ES256");
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", ...header }).sign(key);
}

describe("lib/session.ts", () => {
  let jwk: JWK;
  let other: JWK;

  before(async () => {
    jwk = await generateSigningKey("key-1");
    other = await generateSigningKey("key-2");
  });

  test("the cookie name is fixed", () => {
    assert.equal(SESSION_COOKIE, "userland_session");
  });

  test("round trip: sign, then verify with the public keys only", async () => {
    const keys = await parseSigningKeys({ keys: [jwk] });
    const token = await createSessionSigner(keys).sign("a.b@uni.ac.jp", 3600);
    const [header, payload] = token
      .split(".")
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>);
    assert.equal(header?.alg, "ES256");
    assert.equal(header?.kid, "key-1");
    assert.equal(payload?.sub, "a.b@uni.ac.jp");
    assert.equal(payload?.iss, SESSION_ISSUER);
    assert.equal(payload?.aud, SESSION_AUDIENCE);
    assert.equal(typeof payload?.sid, "string");
    assert.equal((payload?.exp as number) - (payload?.iat as number), 3600);

    const jwks = publicJwks(keys);
    assert.ok(
      jwks.keys.every((k) => !("d" in k)),
      "public JWKS has no private parts",
    );
    const session = await createSessionVerifier(jwks).verify(token);
    assert.equal(session?.user, "a.b@uni.ac.jp");
    assert.equal(session?.sid, payload?.sid);
    assert.equal(session?.exp, payload?.exp);
  });

  test("identities are used exactly, and invalid ones are never signed", async () => {
    const signer = createSessionSigner(await parseSigningKeys({ keys: [jwk] }));
    const verifier = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [jwk] })));
    for (const user of ["Koba1t", "github:123", "a b", "~!"])
      assert.equal((await verifier.verify(await signer.sign(user, 60)))?.user, user);
    for (const user of ["", " alice", "alice ", "jörg", "a\nb", "x".repeat(257)])
      await assert.rejects(signer.sign(user, 60), /invalid identity/);
    await assert.rejects(signer.sign("alice", 0), /positive/);
  });

  test("refuses tampered payloads and signatures", async () => {
    const keys = await parseSigningKeys({ keys: [jwk] });
    const verifier = createSessionVerifier(publicJwks(keys));
    const token = await createSessionSigner(keys).sign("alice", 3600);
    const [h, p, s] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
    assert.equal(await verifier.verify(`${h}.${b64({ ...claims, sub: "bob" })}.${s}`), undefined, "payload");
    const flipped = s.slice(0, 10) + (s[10] === "A" ? "B" : "A") + s.slice(11);
    assert.equal(await verifier.verify(`${h}.${p}.${flipped}`), undefined, "signature");
    assert.equal(await verifier.verify(`${h}.${p}.`), undefined, "no signature");
    assert.equal(await verifier.verify(`${h}.${p}`), undefined, "two parts");
  });

  test("refuses expired sessions, and ones without the required claims", async () => {
    const verifier = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [jwk] })));
    const base = { sub: "alice", sid: "s1", iss: SESSION_ISSUER, aud: SESSION_AUDIENCE, iat: now() - 7200 };
    assert.equal(
      (await verifier.verify(await forge(jwk, { kid: "key-1" }, { ...base, exp: now() + 60 })))?.user,
      "alice",
      "control",
    );
    assert.equal(
      await verifier.verify(await forge(jwk, { kid: "key-1" }, { ...base, exp: now() - 60 })),
      undefined,
      "expired",
    );
    assert.equal(
      await verifier.verify(await forge(jwk, { kid: "key-1" }, { ...base, sid: undefined, exp: now() + 60 })),
      undefined,
      "no sid",
    );
    assert.equal(
      await verifier.verify(await forge(jwk, { kid: "key-1" }, { ...base, exp: undefined })),
      undefined,
      "no exp",
    );
    assert.equal(
      await verifier.verify(await forge(jwk, { kid: "key-1" }, { ...base, sub: " alice", exp: now() + 60 })),
      undefined,
      "bad sub",
    );
    assert.equal(
      await verifier.verify(await forge(jwk, {}, { ...base, exp: now() + 60 })),
      undefined,
      "no kid",
    );
  });

  test("refuses the wrong issuer or audience", async () => {
    const verifier = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [jwk] })));
    const base = { sub: "alice", sid: "s1", iat: now(), exp: now() + 60 };
    assert.equal(
      await verifier.verify(
        await forge(jwk, { kid: "key-1" }, { ...base, iss: "evil", aud: SESSION_AUDIENCE }),
      ),
      undefined,
    );
    assert.equal(
      await verifier.verify(
        await forge(jwk, { kid: "key-1" }, { ...base, iss: SESSION_ISSUER, aud: "other" }),
      ),
      undefined,
    );
  });

  test("refuses unknown kids, alg none and HMAC with the public key", async () => {
    const verifier = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [jwk] })));
    const claims = {
      sub: "alice",
      sid: "s1",
      iss: SESSION_ISSUER,
      aud: SESSION_AUDIENCE,
      iat: now(),
      exp: now() + 60,
    };
    assert.equal(
      await verifier.verify(await forge(other, { kid: "key-2" }, claims)),
      undefined,
      "key not in the set",
    );
    assert.equal(
      await verifier.verify(await forge(other, { kid: "key-1" }, claims)),
      undefined,
      "right kid, wrong key",
    );
    assert.equal(
      await verifier.verify(`${b64({ alg: "none", kid: "key-1" })}.${b64(claims)}.`),
      undefined,
      "alg none",
    );
    const hmacKey = new TextEncoder().encode(
      JSON.stringify(publicJwks(await parseSigningKeys({ keys: [jwk] })).keys[0]),
    );
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: "key-1" }).sign(hmacKey);
    assert.equal(await verifier.verify(hs), undefined, "HS256");
  });

  test("never throws on hostile input", async () => {
    const verifier = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [jwk] })));
    for (const input of [
      undefined,
      "",
      ".",
      "..",
      "a.b.c",
      "x".repeat(100_000),
      "%%%.%%%.%%%",
      `${b64("str")}.${b64(null)}.x`,
    ]) {
      assert.equal(await verifier.verify(input), undefined);
    }
  });

  test("rotation: old sessions verify after a new key is added first; removing the old key ends them", async () => {
    const oldKeys = await parseSigningKeys({ keys: [jwk] });
    const oldToken = await createSessionSigner(oldKeys).sign("alice", 3600);

    const rotated = await parseSigningKeys({ keys: [other, jwk] });
    const signer = createSessionSigner(rotated);
    assert.equal(signer.kid, "key-2", "the new first key signs");
    const newToken = await signer.sign("bob", 3600);
    const verifier = createSessionVerifier(publicJwks(rotated));
    assert.equal((await verifier.verify(oldToken))?.user, "alice", "old session still valid");
    assert.equal((await verifier.verify(newToken))?.user, "bob");

    const pruned = createSessionVerifier(publicJwks(await parseSigningKeys({ keys: [other] })));
    assert.equal(await pruned.verify(oldToken), undefined, "removed key: session invalid");
    assert.equal((await pruned.verify(newToken))?.user, "bob");
  });

  test("key files: private keys required for signing, refused for verifying", async () => {
    await assert.rejects(
      parseSigningKeys({ keys: [publicJwks(await parseSigningKeys({ keys: [jwk] })).keys[0]] }),
      /not a private key/,
    );
    await assert.rejects(parseSigningKeys({ keys: [] }), /no keys/);
    await assert.rejects(parseSigningKeys({ keys: [jwk, jwk] }), /duplicate kid/);
    await assert.rejects(parseSigningKeys({ keys: [{ ...jwk, kid: undefined }] }), /no "kid"/);
    await assert.rejects(parseSigningKeys([]), /expected a JWKS/);
    await assert.rejects(parseSigningKeys({ keys: [{ kty: "oct", k: "abc", kid: "x" }] }), /EC P-256/);
    assert.throws(() => parseVerificationKeys({ keys: [jwk] }), /private key material/);
  });
});

describe("scripts/session-keys.ts", () => {
  const run = promisify(execFile);
  let dir: TempDir;
  before(async () => {
    dir = await tempDir();
  });
  after(async () => {
    await dir?.remove();
  });
  const node = process.execPath;
  const script = join(import.meta.dirname, "../../../scripts/session-keys.ts");

  test("creates, rotates, prunes and publishes key files that lib/session.ts loads", async () => {
    const first = await dir.file("keys.json", (await run(node, [script])).stdout);
    const original = await loadSigningKeys(first);
    assert.equal(original.keys.length, 1);
    const token = await createSessionSigner(original).sign("alice", 600);

    const rotatedFile = await dir.file("rotated.json", (await run(node, [script, "--rotate", first])).stdout);
    const rotated = await loadSigningKeys(rotatedFile);
    assert.equal(rotated.keys.length, 2);
    assert.notEqual(rotated.keys[0]?.kid, original.keys[0]?.kid, "a new key comes first");
    assert.equal(rotated.keys[1]?.kid, original.keys[0]?.kid, "the old key stays");

    const publicFile = await dir.file(
      "public.json",
      (await run(node, [script, "--public", rotatedFile])).stdout,
    );
    assert.doesNotMatch(await readFile(publicFile, "utf8"), /"d"/);
    const verifier = createSessionVerifier(await loadVerificationKeys(publicFile));
    assert.equal((await verifier.verify(token))?.user, "alice");

    const prunedFile = await dir.file(
      "pruned.json",
      (await run(node, [script, "--prune", rotatedFile])).stdout,
    );
    const pruned = await loadSigningKeys(prunedFile);
    assert.deepEqual(
      pruned.keys.map((k) => k.kid),
      [rotated.keys[0]?.kid],
    );
    await assert.rejects(run(node, [script, "--public", publicFile]), /not a private key/);
  });
});

describe("key rotation in the running service", () => {
  test("sessions from a key that is still listed stay valid; a removed key's sessions do not", async (t) => {
    const dir = await tempDir();
    t.after(() => dir.remove());
    const github = await startGitHubStandIn([{ login: "student", id: 7, orgs: [], emails: [] }]);
    t.after(() => github.close());
    github.signInAs("student");
    const oldKey = await generateSigningKey("old");
    const newKey = await generateSigningKey("new");
    const env = (file: string) => ({
      AUTH_SESSION_KEYS_FILE: file,
      AUTH_GITHUB_CLIENT_ID: github.clientId,
      AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
      AUTH_GITHUB_URL: github.url,
      AUTH_GITHUB_API_URL: github.url,
    });
    const listener = await listen();
    t.after(() => listener.close());

    // Log in while only the old key exists.
    let auth = await startAuth(listener, env(await writeKeys(dir, [oldKey], "v1.json")));
    const browser = new Browser();
    await browser.navigate(new URL("login", auth.url));
    assert.equal((await browser.fetch(new URL("whoami", auth.url))).status, 200);
    await auth.close();

    // Rotate: new key first, old key kept. The old session is still good; new ones use the new key.
    auth = await startAuth(listener, env(await writeKeys(dir, [newKey, oldKey], "v2.json")));
    assert.equal(
      (await browser.fetch(new URL("whoami", auth.url))).status,
      200,
      "old session valid after rotation",
    );
    const jwks = (await (await fetch(new URL(".well-known/jwks.json", auth.url))).json()) as {
      keys: { kid: string }[];
    };
    assert.deepEqual(
      jwks.keys.map((k) => k.kid),
      ["new", "old"],
    );
    const fresh = new Browser();
    await fresh.navigate(new URL("login", auth.url));
    const header = JSON.parse(
      Buffer.from(fresh.cookie(SESSION_COOKIE)?.split(".")[0] ?? "", "base64url").toString(),
    ) as { kid: string };
    assert.equal(header.kid, "new");
    await auth.close();

    // Old key removed: its sessions end, the new ones continue.
    auth = await startAuth(listener, env(await writeKeys(dir, [newKey], "v3.json")));
    t.after(() => auth.close());
    assert.equal(
      (await browser.fetch(new URL("whoami", auth.url))).status,
      401,
      "removed key: session invalid",
    );
    assert.equal((await browser.fetch(new URL("forward-auth", auth.url))).status, 401);
    assert.equal((await fresh.fetch(new URL("whoami", auth.url))).status, 200);
  });
});
