/**
 * The session of a request (the proxy's every request and WebSocket upgrade, the user-manager's
 * console and API): the auth service's cookie, verified locally against its public keys
 * (lib/session.ts), held in memory; the network is used only to fetch a key a session names that
 * is not known yet (a JWKS URL).
 *
 * Verified tokens are remembered for a minute (bounded), because an ES256 verification costs more
 * than the rest of the proxy's work on a small request; expiry is still checked on every use.
 *
 * A browser may send several session cookies: the auth service's, and ones an environment's script
 * set on the shared domain with another path (`userland_session=<its student's token>; path=/x`),
 * which the browser sends first. So every cookie is checked, and valid sessions of different users
 * are no session at all (the browser is told to drop its cookies); the first valid one never wins.
 */
import type { IncomingMessage } from "node:http";
import { LRUCache } from "lru-cache";
import { SESSION_COOKIE, type Session, type SessionVerifier } from "./session.ts";

const CACHE_TTL_MS = 60_000;
const CACHE_MAX = 10_000;
/**
 * A browser sends at most a host-only and a domain cookie; more is hostile or broken, and is no
 * session (checking only the first few would let planted cookies push the student's own out).
 */
const MAX_COOKIES_TRIED = 3;

/** A request's session, or why it has none: `conflicting` when its cookies name different users or are too many. */
export type SessionLookup =
  /** `token`: the cookie value it was read from (relayed when the user-manager must verify it itself). */
  { session: Session; token?: string } | { session: undefined; conflicting: boolean };

export interface RequestSessions {
  /** From the session cookie, or from the cookie `name` (a teacher's visit host: decision 0012). */
  fromRequest(req: IncomingMessage, name?: string): Promise<SessionLookup>;
  /** One token, as the cookies' are checked (cached). */
  verify(token: string): Promise<Session | undefined>;
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
    verify: (token) => check(token, Date.now()),
    async fromRequest(req, name = cookieName) {
      const tokens = cookieValues(req.headers.cookie, name);
      if (tokens.length > MAX_COOKIES_TRIED) return { session: undefined, conflicting: true };
      const now = Date.now();
      let found: Session | undefined;
      let foundToken = "";
      for (const token of tokens) {
        const session = await check(token, now);
        if (!session) continue;
        if (found && found.user !== session.user) return { session: undefined, conflicting: true };
        // The latest expiry of the same user's sessions: which one is used does not matter otherwise.
        if (!found || session.exp > found.exp) [found, foundToken] = [session, token];
      }
      return found ? { session: found, token: foundToken } : { session: undefined, conflicting: false };
    },
  };
}

/** Every value of the cookie `name` (a browser may send two: host-only and domain-wide). */
export function cookieValues(cookie: string | undefined, name: string): string[] {
  if (!cookie) return [];
  const values: string[] = [];
  for (const pair of cookie.split(";")) {
    const eq = pair.indexOf("=");
    if (eq < 0 || pair.slice(0, eq).trim() !== name) continue;
    let value = pair.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    values.push(value);
  }
  return values;
}
