/**
 * Who calls the user-manager and what they ask to do, in Kubernetes' own terms: the caller's
 * identity (a TokenReview's answer, or a console session's prefixed subjects), the verb and the
 * userland.dev resource an access review asks about, and the bearer token of a request.
 */
import { LRUCache, type Perf } from "lru-cache";
import { USERLANDS } from "../../../api/v1alpha1/index.ts";
import type { Session } from "../../../lib/session.ts";
import { HttpError } from "../errors.ts";

export type Verb = "get" | "list" | "create" | "update" | "patch" | "delete";

/**
 * What an access review asks about: a resource of userland.dev and, optionally, a subresource.
 * Userlands unless a route says otherwise (the coursework routes ask about assignments,
 * submissions and the Template's coursework).
 */
export interface Resource {
  resource: string;
  subresource?: string;
}

export const USERLAND_RESOURCE: Resource = { resource: USERLANDS };

/** `assignments` or `templates/coursework`, as RBAC rules spell a resource. */
export const resourceName = (r: Resource): string =>
  r.subresource ? `${r.resource}/${r.subresource}` : r.resource;

export interface Caller {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  /** The auth service's session the caller signed in with (the console), absent for bearer tokens. */
  session?: Session;
}

/** Who a caller is, for caches of what it may do: everything RBAC decides by. */
export function callerKey(caller: Caller): string {
  return JSON.stringify([caller.username, caller.uid ?? "", [...caller.groups].sort(), caller.extra ?? {}]);
}

/** Most entries a review cache holds; the least recently used go first beyond it. */
const REVIEW_CACHE_MAX = 10_000;

/**
 * A cache whose entries each expire after the time-to-live given when set, at most `max` of them.
 * `clock` replaces the real one (tests); it is then read on every access.
 */
export function reviewCache<V extends NonNullable<unknown>>(
  max = REVIEW_CACHE_MAX,
  clock?: Perf,
): LRUCache<string, V> {
  return new LRUCache<string, V>({ max, ...(clock ? { perf: clock, ttlResolution: 0 } : {}) });
}

/** The bearer token of a request, undefined without one; 401 for a malformed Authorization header. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!match?.[1] || match[1].length > 16_384) {
    throw new HttpError(401, "Unauthorized", 'malformed Authorization header: expected "Bearer <token>"');
  }
  return match[1];
}
