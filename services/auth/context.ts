/**
 * Everything the route plugins share, built once per app, plus the cookie rules for the session and
 * login-transaction cookies.
 */
import type { CookieSerializeOptions } from "@fastify/cookie";
import type { JSONWebKeySet } from "jose";
import type { SessionRecords } from "../../lib/sessionRecords.ts";
import type { Logger } from "../../lib/logger.ts";
import type { SessionSigner, SessionVerifier } from "../../lib/session.ts";
import type { AuthConfig } from "./config.ts";
import type { GitHubClient } from "./github.ts";
import type { Metrics } from "./metrics.ts";
import type { OidcClient } from "./oidc.ts";
import type { Provisioner } from "./provision.ts";
import type { SignOut } from "./signOut.ts";
import type { GroupsReport } from "./groupsReport.ts";
import type { TransactionSealer } from "./transaction.ts";

export interface AuthContext {
  config: AuthConfig;
  log: Logger;
  signer: SessionSigner;
  verifier: SessionVerifier;
  jwks: JSONWebKeySet;
  transactions: TransactionSealer;
  oidc?: OidcClient | undefined;
  github?: GitHubClient | undefined;
  provisioner?: Provisioner | undefined;
  /** Ends a signed-out session everywhere (AUTH_SIGN_OUT_URL); unset: /logout clears this browser only. */
  signOut?: SignOut | undefined;
  /** Records each new session's groups with the user-manager (with AUTH_SIGN_OUT_URL). */
  groupsReport?: GroupsReport | undefined;
  /** Sessions ended before they expire (AUTH_ENDED_SESSIONS); unset: only expiry ends a session. */
  endedSessions?: SessionRecords | undefined;
  metrics: Metrics;
}

/** An absolute URL of one of this service's endpoints, as browsers see it. */
export function endpoint(config: AuthConfig, path: string): URL {
  return new URL(path, config.publicUrl);
}

/**
 * The session cookie: HttpOnly (scripts never see it), SameSite=Lax (sent on top-level navigations
 * from the identity provider and between template hosts, not on cross-site subrequests), and scoped
 * to AUTH_COOKIE_DOMAIN so one login covers every template host.
 */
export function sessionCookieOptions(config: AuthConfig, maxAgeSeconds?: number): CookieSerializeOptions {
  return {
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: "lax",
    path: "/",
    ...(config.cookie.domain ? { domain: config.cookie.domain } : {}),
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
  };
}

/**
 * Login-transaction cookies are `__Host-` prefixed where the scheme allows it (https with Secure
 * cookies; transaction.ts says why), else plain-http loopback's fallback: unprefixed.
 */
export function hostPrefixedTransactions(config: AuthConfig): boolean {
  return config.cookie.secure && config.publicUrl.protocol === "https:";
}

/** Login-transaction cookies: host-only, and limited to the callback paths unless `__Host-` (which needs `/`). */
export function transactionCookieOptions(config: AuthConfig, maxAgeSeconds?: number): CookieSerializeOptions {
  return {
    httpOnly: true,
    secure: config.cookie.secure,
    sameSite: "lax",
    path: hostPrefixedTransactions(config) ? "/" : `${config.publicUrl.pathname}callback/`,
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
  };
}
