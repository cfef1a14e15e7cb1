/**
 * Ending sessions before they expire (issue 29 item 5): one home for the format. A session cookie
 * is verified locally (lib/session.ts) and lives until its `exp`; ending it is recorded in the
 * user's session record, a ConfigMap in the platform's own namespace that every proxy replica,
 * the auth service and the user-manager hold in an informer cache (lib/sessionRecords.ts), so the
 * check stays local and costs a map lookup per request, and every replica refuses within a watch
 * event.
 *
 * Why a record of its own and not marks on the user's Userlands (issue 41 item 4): a mark must
 * outlive what teachers and students can delete or edit. Only the user-manager writes records
 * (after its own checks, at the time of the request); people need rights in the platform's
 * namespace, which no chart role for teachers or students grants.
 *
 * - `userland.dev/sessions-valid-after` (RFC 3339): every session of the user issued before it is
 *   ended (sign out everywhere, a stolen laptop).
 * - `userland.dev/ended-sessions`: single sessions (sign-out on one browser), `<sid>:<exp>`
 *   separated by spaces, each dropped once its session has expired anyway.
 * - `userland.dev/groups`: the identity provider's groups of the user's latest session (a JSON
 *   array), reported at each sign-in: the operator and the user-manager ask RBAC about them when
 *   they decide, without a session, whether the person teaches a Template (issue 41 item 7: a
 *   teacher appointed by group is no student for exam holds, term ends and visits).
 */
import { createHash } from "node:crypto";

/** The label every session record carries: what the informers select. */
export const SESSION_RECORD_LABEL = "userland.dev/session-record";

/** The record's annotations: whose it is, its two kinds of mark, and the groups of the latest sign-in. */
export const SessionRecordAnnotations = {
  /** The user the record is for, as in spec.user (a name may hold characters a label cannot). */
  user: "userland.dev/user",
  sessionsValidAfter: "userland.dev/sessions-valid-after",
  endedSessions: "userland.dev/ended-sessions",
  groups: "userland.dev/groups",
} as const;

/** A session record as the API server returns it (a ConfigMap: only its metadata is used). */
export interface SessionRecord {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
}

/**
 * The name of `user`'s record: a hash, since user names (`github:alice`, e-mail addresses) are no
 * object names; one per user, so a lookup is a get by name and two writers meet on one object.
 */
export function sessionRecordName(user: string): string {
  return `userland-sessions-${createHash("sha256").update(user).digest("hex").slice(0, 32)}`;
}

/** A new record for `user` carrying `annotations` (the marks of endSessionsPatch). */
export function newSessionRecord(user: string, annotations: Record<string, string>): SessionRecord {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: sessionRecordName(user),
      labels: { [SESSION_RECORD_LABEL]: "true" },
      annotations: { ...annotations, [SessionRecordAnnotations.user]: user },
    },
  };
}

/**
 * How far in the future a sessions-valid-after mark may be (clocks differ a little). One later than
 * that is no mark at all: `2099-…` would end every session, fresh sign-ins too, until then (issue 41
 * item 4); the platform writes the time of the request.
 */
export const MAX_MARK_SKEW_MS = 5 * 60_000;

/** Most single ended sessions kept in one record; beyond, the oldest are ended by sessions-valid-after. */
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
const parsed = new WeakMap<SessionRecord, Marks | null>();

function marksOf(record: SessionRecord): Marks | null {
  const cached = parsed.get(record);
  if (cached !== undefined) return cached;
  const marks = parseMarks(record.metadata.annotations);
  parsed.set(record, marks);
  return marks;
}

function parseMarks(annotations: Record<string, string> | undefined): Marks | null {
  const after = annotations?.[SessionRecordAnnotations.sessionsValidAfter];
  const list = annotations?.[SessionRecordAnnotations.endedSessions];
  if (after === undefined && list === undefined) return null;
  const validAfterMs = after === undefined ? 0 : Date.parse(after);
  return { validAfterMs: Number.isNaN(validAfterMs) ? 0 : validAfterMs, ended: parseEnded(list) };
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

/** Whether the session was ended in its user's record (none: nothing was ever ended). */
export function sessionEnded(
  session: SessionRef,
  record: SessionRecord | undefined,
  now: number = Date.now(),
): boolean {
  const marks = record && marksOf(record);
  if (!marks) return false;
  // iat is in whole seconds, and so is the mark (rounded up when written here).
  if (session.iat * 1000 < marks.validAfterMs && marks.validAfterMs <= now + MAX_MARK_SKEW_MS) return true;
  return marks.ended.has(session.sid);
}

/** What ending sessions means: one session (by its sid, until its expiry), or all issued until `now`. */
export type EndSessions = { sid: string; exp: number } | { all: true };

/**
 * The merge patch of a session record's annotations that ends `what` at `now` (ms), given its current
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
    return {
      [SessionRecordAnnotations.sessionsValidAfter]: stamp,
      [SessionRecordAnnotations.endedSessions]: null,
    };
  if (!SID.test(what.sid)) throw new Error(`not a session id: ${JSON.stringify(what.sid)}`);
  const ended = parseEnded(annotations?.[SessionRecordAnnotations.endedSessions]);
  for (const [sid, exp] of ended) if (exp * 1000 <= now) ended.delete(sid);
  ended.set(what.sid, what.exp);
  if (ended.size > MAX_ENDED_SESSIONS)
    return {
      [SessionRecordAnnotations.sessionsValidAfter]: stamp,
      [SessionRecordAnnotations.endedSessions]: null,
    };
  return {
    [SessionRecordAnnotations.endedSessions]: [...ended].map(([sid, exp]) => `${sid}:${exp}`).join(" "),
  };
}

/**
 * The merge patch of a session record's annotations that adds the marks a version before session
 * records wrote on a Userland (`legacy`, its annotations under the same keys): the later
 * sessions-valid-after (one beyond MAX_MARK_SKEW_MS is no mark), and each unexpired ended session.
 * Empty when the record has them all already.
 */
export function legacyMarksPatch(
  annotations: Record<string, string> | undefined,
  legacy: Record<string, string> | undefined,
  now: number,
): Record<string, string | null> {
  const marks = parseMarks(legacy);
  if (!marks) return {};
  const merged: Record<string, string> = { ...annotations };
  const apply = (patch: Record<string, string | null>) => {
    for (const [key, value] of Object.entries(patch))
      if (value === null) delete merged[key];
      else merged[key] = value;
  };
  const current = parseMarks(annotations)?.validAfterMs ?? 0;
  if (marks.validAfterMs > current && marks.validAfterMs <= now + MAX_MARK_SKEW_MS)
    merged[SessionRecordAnnotations.sessionsValidAfter] = new Date(marks.validAfterMs)
      .toISOString()
      .replace(/\.000Z$/, "Z");
  for (const [sid, exp] of marks.ended)
    if (exp * 1000 > now) apply(endSessionsPatch(merged, { sid, exp }, now));
  const patch: Record<string, string | null> = {};
  for (const key of [SessionRecordAnnotations.sessionsValidAfter, SessionRecordAnnotations.endedSessions])
    if (merged[key] !== annotations?.[key]) patch[key] = merged[key] ?? null;
  return patch;
}

/** The groups the user's latest session carried (none recorded: none). */
export function recordGroups(record: SessionRecord | undefined): readonly string[] {
  const raw = record?.metadata.annotations?.[SessionRecordAnnotations.groups];
  if (raw === undefined) return [];
  try {
    const groups: unknown = JSON.parse(raw);
    return Array.isArray(groups) ? groups.filter((g): g is string => typeof g === "string") : [];
  } catch {
    return [];
  }
}

/** The merge patch that records `groups` (sorted), empty when the record says so already. */
export function groupsPatch(
  annotations: Record<string, string> | undefined,
  groups: readonly string[],
): Record<string, string | null> {
  const value = JSON.stringify([...new Set(groups)].sort());
  return annotations?.[SessionRecordAnnotations.groups] === value
    ? {}
    : { [SessionRecordAnnotations.groups]: value };
}
