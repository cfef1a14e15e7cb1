/**
 * Ending sessions before they expire (issue 29 item 5): one home for the format. A session cookie
 * is verified locally (lib/session.ts) and lives until its `exp`; ending it is recorded on the
 * user's Userlands, which every proxy replica already holds in its informer cache, so the check
 * stays local and costs a map lookup per request, and every replica refuses within a watch event.
 *
 * - `userland.dev/sessions-valid-after` (RFC 3339): every session of the Userland's user issued
 *   before it is ended (sign out everywhere, a stolen laptop; `kubectl annotate` works too).
 * - `userland.dev/ended-sessions`: single sessions (sign-out on one browser), `<sid>:<exp>`
 *   separated by spaces, each dropped once its session has expired anyway.
 *
 * A mark on any of the user's Userlands ends the session for all of them.
 */
import { UserlandAnnotations, type Userland } from "./v1alpha1/userland.ts";

/**
 * How far in the future a sessions-valid-after mark may be (clocks differ a little). One later than
 * that is no mark at all: `2099-…` would end every session, fresh sign-ins too, until then (issue 41
 * item 4); the platform writes the time of the request, and people cannot write it by hand (the
 * start-stop-only admission policy).
 */
export const MAX_MARK_SKEW_MS = 5 * 60_000;

/** Most single ended sessions kept on one Userland; beyond, the oldest are ended by sessions-valid-after. */
export const MAX_ENDED_SESSIONS = 200;

export interface SessionRef {
  sid: string;
  /** Seconds since the epoch. */
  iat: number;
  exp: number;
}

interface Marks {
  validAfterMs: number;
  ended: Map<string, number>;
}

/** A sid as the auth service makes them (base64url); anything else is never written or matched. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const SID = SESSION_ID;

// Parsed once per object the informer holds (an update is a new object).
const parsed = new WeakMap<Userland, Marks | null>();

function marksOf(userland: Userland): Marks | null {
  const cached = parsed.get(userland);
  if (cached !== undefined) return cached;
  const annotations = userland.metadata.annotations;
  const after = annotations?.[UserlandAnnotations.sessionsValidAfter];
  const list = annotations?.[UserlandAnnotations.endedSessions];
  let marks: Marks | null = null;
  if (after !== undefined || list !== undefined) {
    const validAfterMs = after === undefined ? 0 : Date.parse(after);
    marks = { validAfterMs: Number.isNaN(validAfterMs) ? 0 : validAfterMs, ended: parseEnded(list) };
  }
  parsed.set(userland, marks);
  return marks;
}

function parseEnded(list: string | undefined): Map<string, number> {
  const ended = new Map<string, number>();
  for (const entry of (list ?? "").split(" ")) {
    const colon = entry.lastIndexOf(":");
    const sid = entry.slice(0, colon);
    const exp = Number(entry.slice(colon + 1));
    if (colon > 0 && SID.test(sid) && Number.isFinite(exp)) ended.set(sid, exp);
  }
  return ended;
}

/** Whether the session was ended on any of its user's Userlands. */
export function sessionEnded(
  session: SessionRef,
  userlands: readonly Userland[],
  now: number = Date.now(),
): boolean {
  for (const userland of userlands) {
    const marks = marksOf(userland);
    if (!marks) continue;
    // iat is in whole seconds, and so is the mark (rounded up when written here).
    if (session.iat * 1000 < marks.validAfterMs && marks.validAfterMs <= now + MAX_MARK_SKEW_MS) return true;
    if (marks.ended.has(session.sid)) return true;
  }
  return false;
}

/**
 * The Userland a mark that ends `user`'s sessions is written on: their oldest (a mark on any of
 * them counts for all, so one is enough, and the oldest is the least likely to go first).
 */
export function sessionMarkCarrier(userlands: readonly Userland[], user: string): Userland | undefined {
  const created = (u: Userland) => new Date(u.metadata.creationTimestamp ?? 0).getTime();
  return userlands.filter((u) => u.spec.user === user).sort((a, b) => created(a) - created(b))[0];
}

/** What ending sessions means: one session (by its sid, until its expiry), or all issued until `now`. */
export type EndSessions = { sid: string; exp: number } | { all: true };

/**
 * The merge patch of a Userland's annotations that ends `what` at `now` (ms), given its current
 * annotations: expired entries dropped; past MAX_ENDED_SESSIONS, the list gives way to
 * sessions-valid-after (which also ends the user's other sessions: safe, never silent).
 */
export function endSessionsPatch(
  annotations: Record<string, string> | undefined,
  what: EndSessions,
  now: number,
): Record<string, string | null> {
  // Rounded up: every session issued until now (iat in whole seconds) is before the mark.
  const stamp = new Date(Math.ceil(now / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
  if ("all" in what)
    return { [UserlandAnnotations.sessionsValidAfter]: stamp, [UserlandAnnotations.endedSessions]: null };
  if (!SID.test(what.sid)) throw new Error(`not a session id: ${JSON.stringify(what.sid)}`);
  const ended = parseEnded(annotations?.[UserlandAnnotations.endedSessions]);
  for (const [sid, exp] of ended) if (exp * 1000 <= now) ended.delete(sid);
  ended.set(what.sid, what.exp);
  if (ended.size > MAX_ENDED_SESSIONS)
    return { [UserlandAnnotations.sessionsValidAfter]: stamp, [UserlandAnnotations.endedSessions]: null };
  return {
    [UserlandAnnotations.endedSessions]: [...ended].map(([sid, exp]) => `${sid}:${exp}`).join(" "),
  };
}
