/**
 * The session check on every request and WebSocket upgrade: the auth service's cookie, verified
 * locally against its public keys (lib/session.ts), held in memory; the network is used only to
 * fetch a key a session names that is not known yet (PROXY_SESSION_JWKS_URL).
 *
 * Verified tokens are remembered for a minute (bounded), because an ES256 verification costs more
 * than the rest of the proxy's work on a small request; expiry is still checked on every use.
 */
import type { IncomingMessage } from "node:http";
import { LRUCache } from "lru-cache";
import { SESSION_COOKIE, type Session, type SessionVerifier } from "../../lib/session.ts";
import { cookieValues, type ClientInfo } from "./headers.ts";

const CACHE_TTL_MS = 60_000;
const CACHE_MAX = 10_000;
/** A browser sends at most a host-only and a domain cookie; more is hostile or broken. */
const MAX_COOKIES_TRIED = 3;

export interface RequestSessions {
  fromRequest(req: IncomingMessage): Promise<Session | undefined>;
}

export function requestSessions(verifier: SessionVerifier, cookieName = SESSION_COOKIE): RequestSessions {
  const cache = new LRUCache<string, Session>({ max: CACHE_MAX, ttl: CACHE_TTL_MS });
  const check = async (token: string, now: number): Promise<Session | undefined> => {
    const hit = cache.get(token);
    if (hit) {
      if (hit.exp * 1000 > now) return hit;
      cache.delete(token);
    }
    const session = await verifier.verify(token);
    if (session) cache.set(token, session);
    return session;
  };
  return {
    async fromRequest(req) {
      const tokens = cookieValues(req.headers.cookie, cookieName).slice(0, MAX_COOKIES_TRIED);
      const now = Date.now();
      for (const token of tokens) {
        const session = await check(token, now);
        if (session) return session;
      }
      return undefined;
    },
  };
}

/** Browsers navigating get the login page; scripts, API clients and WebSockets get a 401. */
export function wantsLoginRedirect(req: IncomingMessage): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  if (req.headers.upgrade) return false;
  return /\btext\/html\b/i.test(req.headers.accept ?? "");
}

/** PROXY_LOGIN_URL?rd=<the absolute URL the browser asked for>. */
export function loginLocation(loginUrl: URL, client: ClientInfo, path: string): string {
  const target = new URL(loginUrl);
  target.searchParams.set("rd", `${client.proto}://${client.host}${path}`);
  return target.href;
}
