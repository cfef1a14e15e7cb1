/**
 * Teachers' visits to a student's environment (docs/decisions/0012-visits.md): the durable record
 * kept in the Userland's `userland.dev/visits` annotation (UserlandAnnotations.visits), one home
 * for its format. The
 * user-manager writes it (visitRoutes), the proxy reads it from its cache for the student's home.
 *
 * Events expire (an hour by default), so the annotation is what a student's home lists for 30
 * days. It stays small: at most MAX_VISITS entries, none older than VISIT_HISTORY_MS.
 */

/** How long a visit stays listed on the student's home. */
export const VISIT_HISTORY_MS = 30 * 24 * 3_600_000;
/** Most visits kept per Userland (about 120 bytes each); the oldest go first. */
export const MAX_VISITS = 50;

/** One visit: who, from the first request to the last seen one (RFC 3339). */
export interface Visit {
  /** The visitor's identity as the auth service reports it (the session's user). */
  visitor: string;
  from: string;
  to: string;
  /** The proxy saw the quiet period pass: the visit is over. */
  ended?: boolean;
}

export type VisitPhase = "begin" | "continue" | "end";

/**
 * Milliseconds kept: the quiet period is compared against these times, and whole seconds would
 * make a short one (tests) look passed up to a second early: a visit split in two.
 */
const stamp = (d: Date) => d.toISOString();

function isVisit(v: unknown): v is Visit {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.visitor === "string" &&
    typeof r.from === "string" &&
    typeof r.to === "string" &&
    !Number.isNaN(Date.parse(r.from)) &&
    !Number.isNaN(Date.parse(r.to)) &&
    (r.ended === undefined || typeof r.ended === "boolean")
  );
}

/** The visits an annotation holds, oldest first; entries that cannot be read are left out. */
export function parseVisits(annotation: string | undefined): Visit[] {
  if (!annotation) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(annotation);
  } catch {
    return [];
  }
  return Array.isArray(parsed) ? parsed.filter(isVisit) : [];
}

/**
 * Whether `visit` is still going on at `now`: not ended, and seen within `staleMs` (a proxy that
 * died before it could end a visit leaves it open; it counts as over once that long has passed).
 */
export function visitIsLive(visit: Visit, now: Date, staleMs: number): boolean {
  return visit.ended !== true && now.getTime() - Date.parse(visit.to) <= staleMs;
}

/** Whole minutes from the first request to the last one seen, at least 1. */
export function visitMinutes(visit: Visit): number {
  return Math.max(1, Math.round((Date.parse(visit.to) - Date.parse(visit.from)) / 60_000));
}

export interface VisitReport {
  visitor: string;
  phase: VisitPhase;
  /** The visitor's first request this replica saw (begin) and the last one (every phase). */
  firstSeen: Date;
  lastSeen: Date;
  /** An open entry last seen longer ago than this is over: a new visit begins. */
  staleMs: number;
  now: Date;
}

export interface VisitUpdate {
  visits: Visit[];
  /** A new entry was begun (not a replica joining a visit another one reported). */
  started: Visit | undefined;
  /** The entry this report ended. */
  ended: Visit | undefined;
  /** Whether `visits` differs from the input (nothing to write otherwise). */
  changed: boolean;
}

/**
 * Folds one proxy report into the list: several replicas (or one after a restart) reporting the
 * same visitor while a visit is live extend one entry; otherwise a new one begins. The result is
 * pruned to 30 days and MAX_VISITS.
 */
export function applyVisitReport(list: readonly Visit[], report: VisitReport): VisitUpdate {
  const visits = list.map((v) => ({ ...v }));
  let latest: Visit | undefined;
  for (let i = visits.length - 1; i >= 0 && !latest; i--)
    if (visits[i]?.visitor === report.visitor) latest = visits[i];
  let started: Visit | undefined;
  let ended: Visit | undefined;
  let changed = false;
  const last = stamp(report.lastSeen);
  // The same visit while no quiet period passed between its last record and this report's last
  // request (an "end" arrives a quiet period after that request), also when another replica
  // already ended it (its own share of the traffic went quiet first); and whenever the reporting
  // replica saw the visitor without a quiet break since before the record's last request (its
  // firstSeen): a slow user-manager can hold a replica's reports back longer than a quiet period
  // while a WebSocket keeps the visit going, and that is one visit, not two.
  const current =
    latest &&
    (visitIsLive(latest, report.now, report.staleMs) ||
      report.lastSeen.getTime() - Date.parse(latest.to) <= report.staleMs ||
      report.firstSeen.getTime() <= Date.parse(latest.to))
      ? latest
      : undefined;
  if (current) {
    if (Date.parse(last) > Date.parse(current.to)) {
      current.to = last;
      changed = true;
    }
    if (report.phase === "end" && current.ended !== true) {
      current.ended = true;
      ended = current;
      changed = true;
    } else if (report.phase !== "end" && current.ended === true) {
      delete current.ended;
      changed = true;
    }
  } else if (report.phase !== "end") {
    started = { visitor: report.visitor, from: stamp(report.firstSeen), to: last };
    visits.push(started);
    changed = true;
  }
  const oldest = report.now.getTime() - VISIT_HISTORY_MS;
  const kept = visits.filter((v) => Date.parse(v.to) >= oldest).slice(-MAX_VISITS);
  if (kept.length !== visits.length) changed = true;
  return { visits: kept, started, ended, changed };
}

/**
 * On a Template: `required` makes every visit to its environments wait for the student's Allow
 * (their home page). An Allow lets that visitor begin visits for CONSENT_TTL_MS.
 */
export const VISIT_CONSENT_ANNOTATION = "userland.dev/visit-consent";
export const CONSENT_TTL_MS = 3_600_000;
/** A request the student has not answered lapses after this long (the teacher asks again). */
export const REQUEST_TTL_MS = 10 * 60_000;
const MAX_REQUESTS = 20;

/** A visitor waiting for the student's Allow, or allowed (`allowedAt`). */
export interface VisitRequest {
  visitor: string;
  requestedAt: string;
  allowedAt?: string;
}

function isRequest(v: unknown): v is VisitRequest {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.visitor === "string" &&
    typeof r.requestedAt === "string" &&
    !Number.isNaN(Date.parse(r.requestedAt)) &&
    (r.allowedAt === undefined || (typeof r.allowedAt === "string" && !Number.isNaN(Date.parse(r.allowedAt))))
  );
}

export function parseVisitRequests(annotation: string | undefined): VisitRequest[] {
  if (!annotation) return [];
  try {
    const parsed: unknown = JSON.parse(annotation);
    return Array.isArray(parsed) ? parsed.filter(isRequest) : [];
  } catch {
    return [];
  }
}

const current = (r: VisitRequest, now: Date) =>
  r.allowedAt !== undefined
    ? now.getTime() - Date.parse(r.allowedAt) <= CONSENT_TTL_MS
    : now.getTime() - Date.parse(r.requestedAt) <= REQUEST_TTL_MS;

/** Whether `visitor` is allowed now, waits for an answer, or has asked nothing (or long ago). */
export function consentState(
  requests: readonly VisitRequest[],
  visitor: string,
  now: Date,
): "allowed" | "pending" | "none" {
  const mine = requests.filter((r) => r.visitor === visitor && current(r, now));
  if (mine.some((r) => r.allowedAt !== undefined)) return "allowed";
  return mine.length > 0 ? "pending" : "none";
}

/** The requests still current, at most MAX_REQUESTS, newest last. */
const pruned = (requests: readonly VisitRequest[], now: Date) =>
  requests.filter((r) => current(r, now)).slice(-MAX_REQUESTS);

/** Adds a pending request of `visitor` unless one is current; `changed`: something to write. */
export function withRequest(
  requests: readonly VisitRequest[],
  visitor: string,
  now: Date,
): { requests: VisitRequest[]; changed: boolean } {
  const kept = pruned(requests, now);
  if (consentState(kept, visitor, now) !== "none")
    return { requests: kept, changed: kept.length !== requests.length };
  return {
    requests: [...kept, { visitor, requestedAt: now.toISOString() }].slice(-MAX_REQUESTS),
    changed: true,
  };
}

/** The student's Allow for `visitor`'s pending request; `found` false when there is none. */
export function withConsent(
  requests: readonly VisitRequest[],
  visitor: string,
  now: Date,
): { requests: VisitRequest[]; found: boolean } {
  const kept = pruned(requests, now).map((r) => ({ ...r }));
  const pending = kept.findLast((r) => r.visitor === visitor && r.allowedAt === undefined);
  if (!pending) return { requests: kept, found: false };
  pending.allowedAt = now.toISOString();
  return { requests: kept, found: true };
}
