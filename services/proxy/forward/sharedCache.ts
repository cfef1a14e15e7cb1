/**
 * The browser's HTTP cache on a shared origin (PROXY_ORIGINS=shared; issue 29 item 1). Every
 * student's environment of a Template answers at the same URLs, so an answer one student's
 * environment let the browser keep (`Cache-Control: public, max-age=31536000, immutable`) would be
 * what the next student's page loads on a lab computer: code the first student controls, running on
 * the second one's origin with their session. Two layers close it:
 *
 * - the sign-out/sign-in clearing hop sends `Clear-Site-Data: "cache"` too (endpoints/signedOut.ts);
 * - here, forwarded answers can never be reused across sessions, whatever the browser does with
 *   `Vary`: every cacheable answer becomes `private, no-cache` (the browser must ask before each
 *   use), its ETag is bound to the session (a hash of its sid), `Last-Modified` and `Expires` are
 *   dropped (a date cannot be bound), and a conditional request keeps only this session's ETags.
 *   Without the binding, the browser would revalidate alice's cached file with alice's ETag at
 *   bob's environment, which answers 304 whenever the validators match, as they do for the same
 *   file of the same image (or as alice's environment chose them), and the browser would use
 *   alice's body. Within one session a revalidation is still a cheap 304.
 *
 * `Vary: Cookie` alone was not chosen: a Vary mismatch makes Chromium revalidate with the stored
 * ETag (the attack above), and the session cookie is not the only cookie in the header.
 */
import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

type ResponseHeaders = Record<string, string | string[] | undefined>;

/**
 * Per session object: lib/requestSessions.ts hands out the same one for a token while it is
 * cached, so a student's requests hash once a minute, not once each.
 */
const tags = new WeakMap<{ sid: string }, string>();

/** A session's ETag tag: not its sid (environments see it in If-None-Match), a hash of it. */
export function sessionCacheTag(session: { sid: string }): string {
  let tag = tags.get(session);
  if (tag === undefined) {
    tag = createHash("sha256").update(`userland-etag:${session.sid}`).digest("base64url").slice(0, 16);
    tags.set(session, tag);
  }
  return tag;
}

const ENTITY_TAG = /^\s*(W\/)?"([^"]*)"\s*$/;

/** `"x"` → `"<tag>.x"` (weak stays weak); anything that is not an entity tag is dropped. */
function bindTag(etag: string, tag: string): string | undefined {
  const m = ENTITY_TAG.exec(etag);
  return m ? `${m[1] ?? ""}"${tag}.${m[2] ?? ""}"` : undefined;
}

/**
 * A list of entity tags with this session's unbound; `*` stays. Others are dropped, or with
 * `keepOthers` passed unchanged. Undefined when none is left.
 */
function ownTags(value: string, tag: string, keepOthers = false): string | undefined {
  if (value.trim() === "*") return "*";
  const kept: string[] = [];
  for (const item of value.match(/(?:W\/)?"[^"]*"/g) ?? []) {
    const m = ENTITY_TAG.exec(item);
    const inner = m?.[2] ?? "";
    if (inner.startsWith(`${tag}.`)) kept.push(`${m?.[1] ?? ""}"${inner.slice(tag.length + 1)}"`);
    else if (keepOthers) kept.push(item);
  }
  return kept.length > 0 ? kept.join(", ") : undefined;
}

/**
 * The forwarded request's validators: what could make an environment answer 304 (or a range) for
 * a body the browser cached from another session carries only this session's ETags and no date
 * (none were given out). The write preconditions (If-Match, If-Unmodified-Since) only ever make an
 * environment refuse, so they pass, this session's tags unbound: dropping one would turn a
 * conditional write into an unconditional one.
 */
export function sessionRequestValidators(headers: IncomingHttpHeaders, tag: string): void {
  delete headers["if-modified-since"];
  for (const name of ["if-none-match", "if-match", "if-range"] as const) {
    const value = headers[name];
    if (value === undefined) continue;
    // If-Range holds one ETag or a date; a date is never ours.
    const own = ownTags(Array.isArray(value) ? value.join(", ") : value, tag, name === "if-match");
    if (own === undefined || (name === "if-range" && own === "*")) delete headers[name];
    else headers[name] = own;
  }
}

/** Makes the answer headers (the forwarder's own copy, changed in place) unusable by another session. */
export function sessionResponseValidators(kept: ResponseHeaders, tag: string): void {
  const cacheControl = kept["cache-control"];
  const directives = (Array.isArray(cacheControl) ? cacheControl.join(",") : (cacheControl ?? ""))
    .toLowerCase()
    .split(",")
    .map((d) => d.trim());
  kept["cache-control"] = directives.includes("no-store") ? "no-store" : "private, no-cache";
  delete kept.expires;
  delete kept["last-modified"];
  const etag = kept.etag;
  if (etag === undefined) return;
  const bound = typeof etag === "string" ? bindTag(etag, tag) : undefined;
  if (bound === undefined) delete kept.etag;
  else kept.etag = bound;
}
