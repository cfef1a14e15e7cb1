/**
 * The session cookie contract between the auth service (which signs) and the proxy (which verifies).
 *
 * A session is a compact JWS signed with ES256. The auth service holds the private keys; every other
 * component gets only the public JWKS, so it can check a session locally (no network call on the
 * request path) but can never mint one. Several keys may be present: the first private key signs,
 * all keys verify, so keys rotate without logging everyone out (add a new key first, drop the old
 * one once every session it signed has expired).
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import {
  SignJWT,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
} from "jose";
import { USER_MAX, USER_PATTERN } from "../api/v1alpha1/userland.ts";

export const SESSION_COOKIE = "userland_session";
export const SESSION_ISSUER = "userland-auth";
export const SESSION_AUDIENCE = "userland";
export const SESSION_ALG = "ES256";

/** Longer tokens are not ours; refusing them early keeps hostile input cheap. */
const MAX_TOKEN_LENGTH = 4096;
const userPattern = new RegExp(USER_PATTERN);

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  /** The private JWK as loaded (includes `d`). */
  jwk: JWK;
}

/** Private signing keys, active signer first. */
export interface SigningKeys {
  keys: readonly SigningKey[];
}

export interface Session {
  user: string;
  /** Random session id, for logs and audit. */
  sid: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export interface SessionSigner {
  /** Key id of the active signing key. */
  readonly kid: string;
  sign(user: string, ttlSeconds: number): Promise<string>;
}

export interface SessionVerifier {
  /** The session in `token`, or undefined for anything that is not a valid, unexpired session. */
  verify(token: string | undefined): Promise<Session | undefined>;
}

export function isValidUser(user: unknown): user is string {
  return typeof user === "string" && user.length >= 1 && user.length <= USER_MAX && userPattern.test(user);
}

/** A new P-256 private JWK for session signing. */
export async function generateSigningKey(kid?: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(SESSION_ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  // A date prefix tells an admin at a glance which key is older during rotation.
  const id = kid ?? `${new Date().toISOString().slice(0, 10)}-${randomBytes(4).toString("hex")}`;
  return { ...jwk, kid: id, alg: SESSION_ALG, use: "sig" };
}

function keyList(json: unknown, source: string): Record<string, unknown>[] {
  const keys = (json as { keys?: unknown } | null)?.keys;
  if (typeof json !== "object" || json === null || !Array.isArray(keys)) {
    throw new Error(`${source}: expected a JWKS, a JSON object {"keys": [...]}`);
  }
  if (keys.length === 0) throw new Error(`${source}: the JWKS has no keys`);
  const seen = new Set<string>();
  return keys.map((key: unknown, i) => {
    if (typeof key !== "object" || key === null) throw new Error(`${source}: key ${i} is not an object`);
    const k = key as Record<string, unknown>;
    if (k.kty !== "EC" || k.crv !== "P-256")
      throw new Error(`${source}: key ${i} is not an EC P-256 key (ES256)`);
    if (typeof k.kid !== "string" || k.kid === "") throw new Error(`${source}: key ${i} has no "kid"`);
    if (k.alg !== undefined && k.alg !== SESSION_ALG)
      throw new Error(`${source}: key ${k.kid} has alg ${JSON.stringify(k.alg)}, expected ES256`);
    if (seen.has(k.kid)) throw new Error(`${source}: duplicate kid ${k.kid}`);
    seen.add(k.kid);
    return k;
  });
}

/** Signing keys from a parsed private JWKS; `source` names it in errors. */
export async function parseSigningKeys(json: unknown, source = "signing keys"): Promise<SigningKeys> {
  const keys = await Promise.all(
    keyList(json, source).map(async (k) => {
      if (typeof k.d !== "string")
        throw new Error(`${source}: key ${String(k.kid)} is not a private key (no "d")`);
      const jwk = k as JWK;
      const privateKey = await importJWK(jwk, SESSION_ALG);
      if (privateKey instanceof Uint8Array)
        throw new Error(`${source}: key ${String(k.kid)} is not an asymmetric key`);
      return { kid: String(k.kid), privateKey, jwk };
    }),
  );
  return { keys };
}

async function readJson(path: string): Promise<unknown> {
  const text = await readFile(path, "utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
}

/** Reads a private JWKS file (first key signs). */
export async function loadSigningKeys(path: string): Promise<SigningKeys> {
  return parseSigningKeys(await readJson(path), path);
}

/** A public JWKS, refusing private key material: a verifier that could sign could mint sessions. */
export function parseVerificationKeys(json: unknown, source = "verification keys"): JSONWebKeySet {
  const keys = keyList(json, source).map((k) => {
    if ("d" in k)
      throw new Error(
        `${source}: key ${String(k.kid)} contains private key material; give verifiers the public JWKS`,
      );
    return publicPart(k);
  });
  return { keys };
}

/** Reads a public JWKS file. */
export async function loadVerificationKeys(path: string): Promise<JSONWebKeySet> {
  return parseVerificationKeys(await readJson(path), path);
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y, kid } = jwk;
  return { kty, crv, x, y, kid, alg: SESSION_ALG, use: "sig" };
}

/** The public JWKS of a set of signing keys (all of them, so sessions signed by older keys still verify). */
export function publicJwks(signingKeys: SigningKeys): JSONWebKeySet {
  return { keys: signingKeys.keys.map((k) => publicPart(k.jwk)) };
}

export function createSessionSigner(signingKeys: SigningKeys): SessionSigner {
  const active = signingKeys.keys[0];
  if (!active) throw new Error("no signing key");
  return {
    kid: active.kid,
    async sign(user, ttlSeconds) {
      if (!isValidUser(user)) throw new Error("refusing to sign a session for an invalid identity");
      if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)
        throw new Error("session TTL must be a positive whole number of seconds");
      return new SignJWT({ sid: randomBytes(16).toString("base64url") })
        .setProtectedHeader({ alg: SESSION_ALG, kid: active.kid, typ: "JWT" })
        .setSubject(user)
        .setIssuer(SESSION_ISSUER)
        .setAudience(SESSION_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(active.privateKey);
    },
  };
}

export function createSessionVerifier(
  jwks: JSONWebKeySet,
  options: { clockToleranceSeconds?: number } = {},
): SessionVerifier {
  // Local key set only: verification never reaches the network.
  const keys = createLocalJWKSet(jwks);
  return {
    async verify(token) {
      if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_LENGTH)
        return undefined;
      try {
        const { payload, protectedHeader } = await jwtVerify(token, keys, {
          algorithms: [SESSION_ALG],
          issuer: SESSION_ISSUER,
          audience: SESSION_AUDIENCE,
          requiredClaims: ["sub", "sid", "iat", "exp"],
          clockTolerance: options.clockToleranceSeconds ?? 5,
        });
        if (typeof protectedHeader.kid !== "string") return undefined;
        const { sub, sid, exp } = payload;
        if (!isValidUser(sub) || typeof sid !== "string" || typeof exp !== "number") return undefined;
        return { user: sub, sid, exp };
      } catch {
        return undefined;
      }
    },
  };
}
