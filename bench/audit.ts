/**
 * API requests as the API server's audit log counts them (cluster/controlPlane.ts writes one JSON
 * line per request, batched within a second): everything after a byte offset, by user.
 */
import { openSync, readSync, closeSync, statSync } from "node:fs";
import { WRITE_VERBS, type AuditEvent } from "../cluster/harness/auditLog.ts";

export interface RequestCount {
  total: number;
  writes: number;
}

/** Where the audit log ends now: count from here with `requestsSince`. */
export function auditOffset(file: string): number {
  return statSync(file).size;
}

/**
 * Requests logged after `offset` and finished by `until` (ms since the epoch), by user name.
 * Left out: Lease renewals (a steady beat) and requests for objects in other namespaces than
 * `namespace` (e.g. an earlier measurement's namespace being deleted); `undefined`: every namespace.
 */
export function requestsSince(
  file: string,
  offset: number,
  namespace: string | undefined,
  until = Infinity,
): Map<string, RequestCount> {
  const counts = new Map<string, RequestCount>();
  for (const e of eventsSince(file, offset, namespace, until)) {
    const count = counts.get(e.user.username) ?? { total: 0, writes: 0 };
    count.total++;
    if (WRITE_VERBS.has(e.verb)) count.writes++;
    counts.set(e.user.username, count);
  }
  return counts;
}

/**
 * One user's requests after `offset` (the same ones `requestsSince` counts) by verb and resource,
 * e.g. "patch submissions/status" → 300: which calls a phase's work costs.
 */
export function requestsByVerb(
  file: string,
  offset: number,
  namespace: string | undefined,
  username: string,
  until = Infinity,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of eventsSince(file, offset, namespace, until)) {
    if (e.user.username !== username) continue;
    const resource = [e.objectRef?.resource ?? "(none)", e.objectRef?.subresource].filter(Boolean).join("/");
    const key = `${e.verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

function eventsSince(
  file: string,
  offset: number,
  namespace: string | undefined,
  until: number,
): AuditEvent[] {
  const size = statSync(file).size;
  const events: AuditEvent[] = [];
  // A watch is logged when its response starts and again when it ends: one request, one auditID.
  const seen = new Set<string>();
  const take = (line: string) => {
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      return; // an empty line, or the end of a batch still being written
    }
    if (e.objectRef?.resource === "leases" || seen.has(e.auditID)) return;
    if (
      namespace !== undefined &&
      e.objectRef?.namespace !== undefined &&
      e.objectRef.namespace !== namespace
    )
      return;
    if (Date.parse(e.stageTimestamp) > until) return;
    seen.add(e.auditID);
    events.push(e);
  };
  // In pieces: a large run's log after `offset` (hundreds of MB at 10,000 Userlands) is longer
  // than the longest string V8 makes.
  const fd = openSync(file, "r");
  try {
    const chunk = Buffer.alloc(32 * 2 ** 20);
    let carry = Buffer.alloc(0);
    for (let at = offset; at < size;) {
      const read = readSync(fd, chunk, 0, Math.min(chunk.length, size - at), at);
      if (read === 0) break;
      at += read;
      // A piece may end inside a line (or a character): decode up to its last newline, carry the rest.
      const end = chunk.lastIndexOf(10, read - 1);
      if (end < 0) {
        carry = Buffer.concat([carry, chunk.subarray(0, read)]);
        continue;
      }
      for (const line of Buffer.concat([carry, chunk.subarray(0, end)])
        .toString("utf8")
        .split("\n"))
        take(line);
      carry = Buffer.from(chunk.subarray(end + 1, read));
    }
    take(carry.toString("utf8"));
  } finally {
    closeSync(fd);
  }
  return events;
}
