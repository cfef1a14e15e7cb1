/**
 * lib/session.ts: the session cookie contract the proxy relies on, its key files (JWKS and PEM),
 * and scripts/sessionKeys.ts.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
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
  parsePemSigningKeys,
  parseSigningKeys,
  parseVerificationKeys,
  publicJwks,
} from "../../../lib/session.ts";
import { listen, startAuth, tempDir, writeKeys, type TempDir } from "./support/auth.ts";
import { Browser } from "./support/browser.ts";
import { startGitHubStandIn } from "./support/githubStandIn.ts";

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

/** PEM of a new key pair: SEC1 ("EC PRIVATE KEY") or PKCS#8 ("PRIVATE KEY"). */
function pemKey(format: "sec1" | "pkcs8", curve = "P-256"): { pem: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: curve });
  return { pem: privateKey.export({ format: "pem", type: format }).toString(), publicKey };
}

/** RFC 7638 by hand: SHA-256 of the required members in lexicographic order, base64url. */
function thumbprint(publicKey: KeyObject): string {
  const { crv, kty, x, y } = publicKey.export({ format: "jwk" });
  const canonical = JSON.stringify({ crv, kty, x, y });
  return createHash("sha256").update(canonical).digest("base64url");
}

const openssl = async (...args: string[]) => (await promisify(execFile)("openssl", args)).stdout;

/** Key files written by the tests below (one directory for the file). */
let dir: TempDir;
before(async () => {
  dir = await tempDir();
});
after(async () => {
  await dir?.remove();
});

describe("PEM key files", () => {
  test("openssl's and node's SEC1 and PKCS#8 P-256 keys load; the kid is the key's RFC 7638 thumbprint", async () => {
    const sec1 = pemKey("sec1");
    const pkcs8 = pemKey("pkcs8");
    assert.match(sec1.pem, /^-----BEGIN EC PRIVATE KEY-----\n/);
    assert.match(pkcs8.pem, /^-----BEGIN PRIVATE KEY-----\n/);
    for (const [name, key] of [
      ["sec1", sec1],
      ["pkcs8", pkcs8],
    ] as const) {
      const keys = await loadSigningKeys(await dir.file(`${name}.pem`, key.pem));
      assert.deepEqual(
        keys.keys.map((k) => k.kid),
        [thumbprint(key.publicKey)],
        name,
      );
    }
    // What an admin types: with -noout (SEC1 only), without it (an EC PARAMETERS block first), and
    // openssl genpkey (PKCS#8).
    for (const args of [
      ["ecparam", "-name", "prime256v1", "-genkey", "-noout"],
      ["ecparam", "-name", "prime256v1", "-genkey"],
      ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    ]) {
      const file = await dir.file("openssl.pem", await openssl(...args));
      const publicKey = createPublicKey(await openssl("pkey", "-in", file, "-pubout"));
      const keys = await loadSigningKeys(file);
      assert.deepEqual(
        keys.keys.map((k) => k.kid),
        [thumbprint(publicKey)],
        args.join(" "),
      );
    }
    // The same key loads with the same kid whatever its encoding.
    const same = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const asSec1 = await parsePemSigningKeys(same.export({ format: "pem", type: "sec1" }).toString());
    const asPkcs8 = await parsePemSigningKeys(same.export({ format: "pem", type: "pkcs8" }).toString());
    assert.equal(asSec1.keys[0]?.kid, asPkcs8.keys[0]?.kid);
  });

  test("several keys: the first signs, all verify, in file order", async () => {
    const [a, b, c] = [pemKey("sec1"), pemKey("pkcs8"), pemKey("sec1")];
    const keys = await parsePemSigningKeys(`${a.pem}\n${b.pem}${c.pem}`, "keys.pem");
    assert.deepEqual(
      keys.keys.map((k) => k.kid),
      [a, b, c].map((k) => thumbprint(k.publicKey)),
    );
    const signer = createSessionSigner(keys);
    assert.equal(signer.kid, thumbprint(a.publicKey));
    const verifier = createSessionVerifier(publicJwks(keys));
    for (const first of [b, c]) {
      const older = createSessionSigner(await parsePemSigningKeys(first.pem));
      assert.equal(
        (await verifier.verify(await older.sign("alice", 60)))?.user,
        "alice",
        "an older key verifies",
      );
    }
    const stranger = createSessionSigner(await parsePemSigningKeys(pemKey("sec1").pem));
    assert.equal(await verifier.verify(await stranger.sign("alice", 60)), undefined, "a key not in the file");
  });

  test("other curves, key types and blocks are refused with a message that names the file", async () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    const ed = generateKeyPairSync("ed25519").privateKey;
    const good = pemKey("sec1").pem;
    const cases: [string, string, RegExp][] = [
      ["P-384 (SEC1)", pemKey("sec1", "P-384").pem, /EC key on secp384r1.*EC P-256/],
      ["P-384 (PKCS#8)", pemKey("pkcs8", "P-384").pem, /EC key on secp384r1/],
      ["RSA (PKCS#8)", rsa.export({ format: "pem", type: "pkcs8" }).toString(), /an? rsa key.*EC P-256/],
      [
        "RSA (PKCS#1)",
        rsa.export({ format: "pem", type: "pkcs1" }).toString(),
        /"RSA PRIVATE KEY" PEM block/,
      ],
      ["Ed25519", ed.export({ format: "pem", type: "pkcs8" }).toString(), /ed25519 key/],
      [
        "a public key",
        pemKey("sec1").publicKey.export({ format: "pem", type: "spki" }).toString(),
        /"PUBLIC KEY"/,
      ],
      [
        "a P-256 key after a P-384 one",
        `${good}${pemKey("sec1", "P-384").pem}`,
        /key 2 is an EC key on secp384r1/,
      ],
      [
        "a broken block",
        "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        /key 1 .*cannot be read/,
      ],
      [
        "no END line",
        good.replace("-----END EC PRIVATE KEY-----", ""),
        /without its END line|outside the PEM blocks/,
      ],
      ["text between keys", `${good}oops\n${good}`, /text outside the PEM blocks/],
      ["only parameters", await openssl("ecparam", "-name", "prime256v1"), /no private key/],
      ["the same key twice", `${good}${good}`, /duplicate kid/],
    ];
    for (const [what, pem, message] of cases) {
      const file = await dir.file("refused.pem", pem);
      await assert.rejects(loadSigningKeys(file), (error: Error) => {
        assert.ok(error.message.startsWith(`${file}: `), `${what}: names the file: ${error.message}`);
        assert.match(error.message, message, what);
        return true;
      });
    }
  });

  test("a session signed with a PEM key verifies against the public JWKS the auth service serves", async (t) => {
    const key = pemKey("sec1");
    const file = await dir.file("served.pem", key.pem);
    const listener = await listen();
    t.after(() => listener.close());
    const auth = await startAuth(listener, {
      AUTH_SESSION_KEYS_FILE: file,
      AUTH_GITHUB_CLIENT_ID: "c",
      AUTH_GITHUB_CLIENT_SECRET: "s",
    });
    t.after(() => auth.close());
    const served = await (await fetch(new URL(".well-known/jwks.json", auth.url))).json();
    const jwks = parseVerificationKeys(served, "served JWKS");
    assert.deepEqual(
      jwks.keys.map((k) => k.kid),
      [thumbprint(key.publicKey)],
    );
    const signingKeys = await loadSigningKeys(file);
    const token = await createSessionSigner(signingKeys).sign("alice", 600);
    assert.equal((await createSessionVerifier(jwks).verify(token))?.user, "alice");
    // The auth service itself takes it as well.
    const whoami = await fetch(new URL("whoami", auth.url), {
      headers: { cookie: `${SESSION_COOKIE}=${token}` },
    });
    assert.equal(whoami.status, 200);
    assert.equal(((await whoami.json()) as { user: string }).user, "alice");
  });
});

describe("scripts/sessionKeys.ts", () => {
  const run = promisify(execFile);
  const node = process.execPath;
  const script = join(import.meta.dirname, "../../../scripts/sessionKeys.ts");

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

  test("--public also reads PEM keys (the chart's keys.pem), with the thumbprint kids", async () => {
    const [a, b] = [pemKey("sec1"), pemKey("pkcs8")];
    const pem = await dir.file("keys.pem", a.pem + b.pem);
    const jwks = parseVerificationKeys(JSON.parse((await run(node, [script, "--public", pem])).stdout));
    assert.deepEqual(
      jwks.keys.map((k) => k.kid),
      [thumbprint(a.publicKey), thumbprint(b.publicKey)],
    );
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
