/**
 * Sign-in with the auth service's session cookie (the teachers' console): the session's user and
 * groups become Kubernetes subjects under prefixes, so RBAC decides exactly as for a token; and the
 * cookie's CSRF rule: a write signed in with it counts only from the console's own pages.
 */
import type { FastifyRequest } from "fastify";
import { formFromOwnSite } from "../../../lib/formOrigin.ts";
import type { RequestSessions } from "../../../lib/requestSessions.ts";
import { SESSION_COOKIE, type Session } from "../../../lib/session.ts";
import { HttpError } from "../errors.ts";
import type { Caller } from "./caller.ts";

/**
 * Session sign-in's settings: an admin appoints a teacher with a RoleBinding to `<userPrefix><user>`
 * or `<groupPrefix><group>`.
 */
export interface SessionAuth {
  sessions: RequestSessions;
  userPrefix: string;
  groupPrefix: string;
  /** The console's origin: the only one whose pages may send cookie-authenticated writes. */
  origin: string;
  /**
   * Whether the session was ended before its expiry (sign-out, sign out everywhere, a teacher:
   * api/sessions.ts); such a cookie signs nobody in.
   */
  ended?: ((session: Session) => Promise<boolean>) | undefined;
}

/** The Kubernetes identity of a session: prefixed, and nothing else (no system:authenticated). */
export function sessionCaller(
  session: Session,
  auth: Pick<SessionAuth, "userPrefix" | "groupPrefix">,
): Caller {
  return {
    username: auth.userPrefix + session.user,
    groups: session.groups.map((g) => auth.groupPrefix + g),
    session,
  };
}

/** Methods that change nothing; every other one sent with a cookie must come from the console's own pages. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The caller of a request without a bearer token: its session, when sessions are on and it sends one. */
export async function callerFromSession(
  request: FastifyRequest,
  sessions: SessionAuth | undefined,
): Promise<Caller> {
  if (!sessions || !request.headers.cookie?.includes(`${SESSION_COOKIE}=`))
    throw new HttpError(
      401,
      "Unauthorized",
      sessions
        ? "authentication required: send Authorization: Bearer <Kubernetes token>, or sign in (the console)"
        : "authentication required: send Authorization: Bearer <Kubernetes token>",
    );
  const found = await sessions.sessions.fromRequest(request.raw);
  if (!found.session)
    throw new HttpError(
      401,
      "Unauthorized",
      found.conflicting
        ? "the browser sent sessions of different users: sign out and sign in again"
        : "the session is not valid (expired, or signed by another installation): sign in again",
    );
  if (await sessions.ended?.(found.session))
    throw new HttpError(401, "Unauthorized", "the session was ended (signed out): sign in again");
  // A cookie goes with every request the browser makes, whoever's page asks for it (another
  // Template's host is the same site): a write counts only from the console's own pages.
  if (!SAFE_METHODS.has(request.method) && !formFromOwnSite(request.headers, (o) => o === sessions.origin))
    throw new HttpError(
      403,
      "Forbidden",
      "cross-site request refused: a request signed in with the session cookie must come from the console's own pages (send a bearer token instead)",
    );
  return sessionCaller(found.session, sessions);
}
