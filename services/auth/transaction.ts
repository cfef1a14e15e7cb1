/**
 * The login transaction (state, nonce, PKCE verifier, return URL) travels in a short-lived,
 * encrypted HttpOnly cookie instead of server memory, so any replica can finish a login it did not
 * start. The encryption key is derived (HKDF) from each session signing key: no second secret to
 * distribute, and rotating the signing keys rotates these too. AES-GCM authenticates as it
 * encrypts, so a modified cookie fails to open.
 *
 * One cookie per login (named after its state) lets a student start logins from several tabs at
 * once, which happens when more than one template host sends them to log in.
 *
 * On https its name is `__Host-` prefixed: a browser takes such a cookie only from this very host
 * (Secure, `Path=/`, no Domain), so a page on a sibling host (any student's environment) cannot
 * plant a transaction of its own (login CSRF by cookie tossing, issue 29 item 2); the callback
 * reads only that name. Plain-http loopback (the local platform) cannot set Secure cookies
 * everywhere, so there the unprefixed name is kept, path-limited to the callbacks.
 */
import { hkdfSync } from "node:crypto";
import { EncryptJWT, jwtDecrypt } from "jose";
import { PLATFORM_COOKIE_PREFIX, type SigningKeys } from "../../lib/session.ts";
import type { Provider } from "./metrics.ts";

export interface LoginTransaction {
  provider: Provider;
  state: string;
  /** OIDC only. */
  nonce?: string | undefined;
  verifier: string;
  /** The already-checked URL to return to. */
  returnTo: string;
}

export interface TransactionSealer {
  seal(tx: LoginTransaction): Promise<string>;
  /** The transaction, or undefined if the cookie is missing, expired, modified or from unknown keys. */
  open(token: string | undefined): Promise<LoginTransaction | undefined>;
}

const COOKIE_PREFIX = `${PLATFORM_COOKIE_PREFIX}login_`;
const STATE_PATTERN = /^[A-Za-z0-9_-]{22,128}$/;

/**
 * The cookie that holds the transaction for `state` (`__Host-` prefixed when `hostOnly`), or
 * undefined for a state we never issue.
 */
export function transactionCookieName(state: unknown, hostOnly: boolean): string | undefined {
  if (typeof state !== "string" || !STATE_PATTERN.test(state)) return undefined;
  return `${hostOnly ? "__Host-" : ""}${COOKIE_PREFIX}${state.slice(0, 16)}`;
}

function deriveKey(d: string): Uint8Array {
  return new Uint8Array(
    hkdfSync("sha256", Buffer.from(d, "base64url"), "userland-auth", "login-transaction-v1", 32),
  );
}

export function createTransactionSealer(signingKeys: SigningKeys, ttlSeconds: number): TransactionSealer {
  const keys = new Map(signingKeys.keys.map((k) => [k.kid, deriveKey(String(k.jwk.d))]));
  const active = signingKeys.keys[0];
  if (!active) throw new Error("no signing key");
  const activeKey = keys.get(active.kid) as Uint8Array;

  return {
    async seal(tx) {
      return new EncryptJWT({ ...tx })
        .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: active.kid })
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .encrypt(activeKey);
    },
    async open(token) {
      if (typeof token !== "string" || token.length === 0 || token.length > 4096) return undefined;
      try {
        const { payload } = await jwtDecrypt(
          token,
          (header) => {
            const key = typeof header.kid === "string" ? keys.get(header.kid) : undefined;
            if (!key) throw new Error("unknown key");
            return key;
          },
          { keyManagementAlgorithms: ["dir"], contentEncryptionAlgorithms: ["A256GCM"] },
        );
        const { provider, state, nonce, verifier, returnTo } = payload;
        if (provider !== "oidc" && provider !== "github") return undefined;
        if (typeof state !== "string" || typeof verifier !== "string" || typeof returnTo !== "string")
          return undefined;
        if (nonce !== undefined && typeof nonce !== "string") return undefined;
        return { provider, state, nonce, verifier, returnTo };
      } catch {
        return undefined;
      }
    },
  };
}
