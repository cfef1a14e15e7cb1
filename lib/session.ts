/**
 * The session cookie contract between the auth service (which signs) and the proxy and the
 * user-manager's console (which verify).
 *
 * A session is a compact JWS signed with ES256. The auth service holds the private keys; every other
 * component gets only the public JWKS, so it can check a session but can never mint one. Several
 * keys may be present: the first private key signs, all keys verify, so keys rotate without logging
 * everyone out (add a new key first, drop the old one once every session it signed has expired).
 *
 * The private keys are a JWKS or PEM text (EC P-256 keys as helm's `genPrivateKey "ecdsa"` and
 * openssl write them; a PEM key's kid is its RFC 7638 thumbprint). A verifier holds the public JWKS
 * itself (a file) or fetches it from the auth service's /.well-known/jwks.json, again whenever a
 * session names a key it does not know yet (a rotation).
 */
import { createPrivateKey, randomBytes, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import {
  SignJWT,
  calculateJwkThumbprint,
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from "jose";
import { Agent, fetch as undiciFetch } from "undici";
import { USER_MAX, USER_PATTERN } from "../api/v1alpha1/userland.ts";
import type { Logger } from "./logger.ts";

export const SESSION_COOKIE = "userland_session";
/**
 * Every cookie the platform sets is named so (the session, sign-in transactions, the signed-out
 * mark, a teacher's visit), also behind `__Host-`/`__Secure-`: the proxy drops environments'
 * Set-Cookie for any such name (issue 29 item 2), so a student's environment cannot plant one.
 */
export const PLATFORM_COOKIE_PREFIX = "userland_";

/** A cookie name the platform reserves, however it is spelt (case, `__Host-`/`__Secure-`, spaces). */
export function isPlatformCookieName(name: string): boolean {
  const bare = name
    .trim()
    .toLowerCase()
    .replace(/^__(host|secure)-/, "");
  return bare.startsWith(PLATFORM_COOKIE_PREFIX);
}
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
  /**
   * The identity provider's groups at sign-in (the OIDC groups claim); empty for providers without
   * groups and for sessions signed before groups were carried (the claim is optional).
   */
  groups: string[];
  /** Random session id, for logs and audit. */
  sid: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** When it was issued, seconds since the epoch: an exam refuses sessions from before its start. */
  iat: number;
}

export interface SessionSigner {
  /** Key id of the active signing key. */
  readonly kid: string;
  sign(user: string, ttlSeconds: number, groups?: readonly string[]): Promise<string>;
}

export interface SessionVerifier {
  /** The session in `token`, or undefined for anything that is not a valid, unexpired session. */
  verify(token: string | undefined): Promise<Session | undefined>;
}

export function isValidUser(user: unknown): user is string {
  return typeof user === "string" && user.length >= 1 && user.length <= USER_MAX && userPattern.test(user);
}

/**
 * Most characters the groups of one session may take (their JSON): the cookie must stay under the
 * 4 KiB browsers keep and MAX_TOKEN_LENGTH, with room for the rest of the token.
 */
export const SESSION_GROUPS_MAX_CHARS = 1536;

/** A group name a session may carry: the same rules as an identity (printable ASCII, no edge spaces). */
function isValidGroup(group: unknown): group is string {
  return isValidUser(group);
}

/**
 * The groups a session can carry, in the order given: valid names only, each once, while they fit
 * in SESSION_GROUPS_MAX_CHARS. `dropped` lists the rest so the signer's caller can say so.
 */
export function sessionGroups(groups: readonly string[]): { groups: string[]; dropped: string[] } {
  const kept: string[] = [];
  const dropped: string[] = [];
  let size = 2;
  for (const group of new Set(groups)) {
    const cost = JSON.stringify(group).length + 1;
    if (isValidGroup(group) && size + cost <= SESSION_GROUPS_MAX_CHARS) {
      kept.push(group);
      size += cost;
    } else dropped.push(group);
  }
  return { groups: kept, dropped };
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

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----/g;
/** What `openssl ecparam -genkey` writes before the key unless told -noout: the curve, no secret. */
const PEM_PARAMETERS = "EC PARAMETERS";
/** Both may hold any algorithm; the key itself is checked. */
const PEM_PRIVATE_KEYS = new Set(["EC PRIVATE KEY", "PRIVATE KEY"]);

/** One PEM block as a private JWK, refusing anything but an EC P-256 private key. */
function pemPrivateJwk(pem: string, type: string, where: string): JWK {
  if (!PEM_PRIVATE_KEYS.has(type))
    throw new Error(
      `${where} is a "${type}" PEM block; expected EC P-256 private keys ("EC PRIVATE KEY" or "PRIVATE KEY", unencrypted)`,
    );
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch (error) {
    throw new Error(`${where} ("${type}") cannot be read: ${(error as Error).message}`, { cause: error });
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType !== "ec" || curve !== "prime256v1") {
    const what =
      key.asymmetricKeyType === "ec"
        ? `an EC key on ${String(curve)}`
        : `a ${String(key.asymmetricKeyType)} key`;
    throw new Error(
      `${where} is ${what}; session keys must be EC P-256 (ES256: openssl ecparam -name prime256v1 -genkey -noout)`,
    );
  }
  return key.export({ format: "jwk" });
}

/**
 * Signing keys from PEM text with one or more EC P-256 private keys, SEC1 ("EC PRIVATE KEY", as
 * helm's genPrivateKey "ecdsa" writes) or PKCS#8 ("PRIVATE KEY"), in order: the first signs. Each
 * key's kid is its RFC 7638 thumbprint, so the same key always has the same kid.
 */
export async function parsePemSigningKeys(text: string, source = "signing keys"): Promise<SigningKeys> {
  const jwks: JWK[] = [];
  let end = 0;
  for (const block of text.matchAll(PEM_BLOCK)) {
    if (text.slice(end, block.index).trim() !== "")
      throw new Error(`${source}: text outside the PEM blocks before "${block[0].split("\n", 1)[0]}"`);
    end = block.index + block[0].length;
    const type = block[1] ?? "";
    if (type === PEM_PARAMETERS) continue;
    const jwk = pemPrivateJwk(block[0], type, `${source}: key ${jwks.length + 1}`);
    jwks.push({ ...jwk, kid: await calculateJwkThumbprint(jwk, "sha256"), alg: SESSION_ALG, use: "sig" });
  }
  if (text.slice(end).trim() !== "")
    throw new Error(`${source}: text outside the PEM blocks, or a block without its END line`);
  if (jwks.length === 0) throw new Error(`${source}: the PEM text has no private key`);
  return parseSigningKeys({ keys: jwks }, source);
}

async function readJson(path: string, text?: string): Promise<unknown> {
  text ??= await readFile(path, "utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
}

/** Reads a private key file, a JWKS or PEM text (first key signs). */
export async function loadSigningKeys(path: string): Promise<SigningKeys> {
  const text = await readFile(path, "utf8");
  if (text.trimStart().startsWith("-----BEGIN ")) return parsePemSigningKeys(text, path);
  return parseSigningKeys(await readJson(path, text), path);
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
    async sign(user, ttlSeconds, groups = []) {
      if (!isValidUser(user)) throw new Error("refusing to sign a session for an invalid identity");
      if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)
        throw new Error("session TTL must be a positive whole number of seconds");
      if (sessionGroups(groups).groups.length !== groups.length)
        throw new Error(
          "refusing to sign a session with invalid, repeated or too many groups (sessionGroups)",
        );
      // No claim at all without groups: such a token is byte for byte what older signers wrote.
      const claims = { sid: randomBytes(16).toString("base64url"), ...(groups.length > 0 ? { groups } : {}) };
      return new SignJWT(claims)
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

export interface VerifierOptions {
  clockToleranceSeconds?: number;
}

/** A verifier with the public keys in hand: verification never reaches the network. */
export function createSessionVerifier(jwks: JSONWebKeySet, options: VerifierOptions = {}): SessionVerifier {
  return verifierWith(createLocalJWKSet(jwks), options);
}

export interface RemoteVerifierOptions extends VerifierOptions {
  /** The least time between two fetches for an unknown kid (default 5 s). */
  cooldownMs?: number;
  /** Limit of one fetch (default 5 s). */
  timeoutMs?: number;
  /** Called when the keys could not be fetched (sessions are then refused, not failed). */
  onFetchError?: (error: unknown) => void;
}

export interface RemoteSessionVerifier extends SessionVerifier {
  /** Fetches the keys now (start-up); rejects when they cannot be fetched. */
  refresh(): Promise<void>;
}

/** undici without keep-alive (pipelining 0): each JWKS fetch on its own connection. */
const jwksConnections = new Agent({ pipelining: 0 });

/**
 * A verifier with the public JWKS at `url` (the auth service's /.well-known/jwks.json), fetched on
 * first use and again when a session names a kid not in it (at most once per cooldown), so a key
 * added at the auth service is picked up without a restart. The keys held are kept while the auth
 * service is away: sessions they verify keep working. A removed key is dropped at the next fetch.
 */
export function createRemoteSessionVerifier(
  url: URL,
  options: RemoteVerifierOptions = {},
): RemoteSessionVerifier {
  const remote = createRemoteJWKSet(url, {
    cooldownDuration: options.cooldownMs ?? 5_000,
    timeoutDuration: options.timeoutMs ?? 5_000,
    // Never stale by age: refetched only for an unknown kid, so an unreachable auth service
    // does not end the sessions the proxy can already check.
    cacheMaxAge: Infinity,
    // A new connection for every fetch. A kept-alive one stays with the auth pod it first reached:
    // during a rotation, a pod that is stopping (and still serving its endpoint drain) would
    // answer the old keys, the new session would be refused until the cooldown ended, and the
    // browser would bounce between sign-in and proxy. Fetches are rare; a connection is cheap.
    [customFetch]: (resource, { headers, method, redirect, signal }) =>
      undiciFetch(resource, {
        headers: Object.fromEntries(headers),
        method,
        redirect,
        signal,
        dispatcher: jwksConnections,
      }),
  });
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      // No matching key is a session from elsewhere; anything else is the fetch failing.
      if (!(error instanceof errors.JWKSNoMatchingKey)) options.onFetchError?.(error);
      throw error;
    }
  };
  return { ...verifierWith(getKey, options), refresh: () => remote.reload() };
}

function verifierWith(keys: JWTVerifyGetKey, options: VerifierOptions): SessionVerifier {
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
        const { sub, sid, exp, iat, groups } = payload;
        if (
          !isValidUser(sub) ||
          typeof sid !== "string" ||
          typeof exp !== "number" ||
          typeof iat !== "number"
        )
          return undefined;
        // Optional (sessions signed before groups were carried have none); malformed is no session.
        if (groups !== undefined && !(Array.isArray(groups) && groups.every(isValidGroup))) return undefined;
        return { user: sub, groups: groups ?? [], sid, exp, iat };
      } catch {
        return undefined;
      }
    },
  };
}

/** Where a verifier gets the public keys: the auth service's JWKS URL, or a file. */
export type SessionKeySource = { url: URL } | { file: string };

/** How often a failing key fetch is logged at most (it is retried for every session with a new kid). */
const KEY_FETCH_LOG_INTERVAL_MS = 30_000;

/**
 * The verifier for configured keys. A file is read now (a bad one fails the start); from the auth
 * service's URL the keys are fetched in the background (readiness does not wait for the auth
 * service) and again for new kids, a failing fetch logged at most every 30 s.
 */
export async function sessionVerifierFor(source: SessionKeySource, log: Logger): Promise<SessionVerifier> {
  if ("file" in source) return createSessionVerifier(await loadVerificationKeys(source.file));
  let loggedAt = -Infinity;
  const fetchFailed = (error: unknown) => {
    if (Date.now() - loggedAt < KEY_FETCH_LOG_INTERVAL_MS) return;
    loggedAt = Date.now();
    log.warn(
      { err: error, url: source.url.href },
      "cannot fetch the session keys from the auth service: sessions with keys not yet known are refused",
    );
  };
  const verifier = createRemoteSessionVerifier(source.url, { onFetchError: fetchFailed });
  verifier.refresh().then(() => log.info({ url: source.url.href }, "session keys fetched"), fetchFailed);
  return verifier;
}
