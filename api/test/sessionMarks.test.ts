/** Session records (api/sessions.ts): what ends a session, and what a mark cannot do. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MAX_ENDED_SESSIONS,
  MAX_MARK_SKEW_MS,
  SessionRecordAnnotations,
  endSessionsPatch,
  legacyMarksPatch,
  newSessionRecord,
  sessionEnded,
  sessionRecordName,
  type SessionRecord,
} from "../sessions.ts";

const now = Date.parse("2026-12-07T12:00:00Z");
const carrying = (validAfter: string): SessionRecord =>
  newSessionRecord("alice", { [SessionRecordAnnotations.sessionsValidAfter]: validAfter });
const session = (issuedMs: number, sid = "s1") => ({
  sid,
  iat: issuedMs / 1000,
  exp: issuedMs / 1000 + 3600,
});

test("a mark ends the sessions issued before it and not those after", () => {
  const mark = carrying("2026-12-07T11:00:00Z");
  assert.equal(sessionEnded(session(now - 2 * 3600_000), mark, now), true);
  assert.equal(sessionEnded(session(now - 1800_000), mark, now), false);
  assert.equal(sessionEnded(session(now - 2 * 3600_000), undefined, now), false, "no record: nothing ended");
});

test("a mark far in the future (2099) is no mark: it cannot lock a student out, fresh sign-ins included", () => {
  const mark = carrying("2099-01-01T00:00:00Z");
  assert.equal(sessionEnded(session(now - 3600_000), mark, now), false);
  assert.equal(sessionEnded(session(now), mark, now), false);
  // Within the clocks' skew it counts.
  const soon = carrying(new Date(now + MAX_MARK_SKEW_MS - 1000).toISOString());
  assert.equal(sessionEnded(session(now), soon, now), true);
});

test("one session ends alone; past the list's bound, every session issued until now ends", () => {
  const record = newSessionRecord("alice", {});
  const one = endSessionsPatch(record.metadata.annotations, { sid: "s1", exp: now / 1000 + 60 }, now);
  const marked = newSessionRecord("alice", one as Record<string, string>);
  assert.equal(sessionEnded(session(now - 1000, "s1"), marked, now), true);
  assert.equal(sessionEnded(session(now - 1000, "s2"), marked, now), false);
  let annotations: Record<string, string> = {};
  for (let i = 0; i <= MAX_ENDED_SESSIONS; i++) {
    const patch = endSessionsPatch(annotations, { sid: `s${i}`, exp: now / 1000 + 60 }, now);
    annotations = Object.fromEntries(
      Object.entries({ ...annotations, ...patch }).filter((e): e is [string, string] => e[1] !== null),
    );
  }
  assert.equal(annotations[SessionRecordAnnotations.endedSessions], undefined);
  assert.equal(annotations[SessionRecordAnnotations.sessionsValidAfter], "2026-12-07T12:00:00Z");
});

test("a record's name is one per user, a valid object name whatever the user name holds", () => {
  const names = ["github:alice", "alice@uni.example", "Alice", "a".repeat(256)].map(sessionRecordName);
  assert.equal(new Set(names).size, 4);
  for (const name of names) assert.match(name, /^[a-z0-9-]{1,63}$/);
  assert.equal(sessionRecordName("github:alice"), sessionRecordName("github:alice"));
});

test("marks an older version wrote on a Userland join a record: the later valid-after, unexpired sessions, nothing in 2099", () => {
  const { sessionsValidAfter: after, endedSessions: ended } = SessionRecordAnnotations;
  const soon = now / 1000 + 600;
  const legacy = { [after]: "2026-12-07T11:00:00Z", [ended]: `old:${now / 1000 - 1} s1:${soon}` };
  const record = { [after]: "2026-12-07T10:00:00Z", [ended]: `s2:${soon}` };
  const patch = legacyMarksPatch(record, legacy, now);
  assert.deepEqual(patch, { [after]: "2026-12-07T11:00:00Z", [ended]: `s2:${soon} s1:${soon}` });
  const merged = { ...record, ...patch } as Record<string, string>;
  assert.deepEqual(legacyMarksPatch(merged, legacy, now), {}, "a second move changes nothing");
  // An earlier valid-after does not move the record's back; one in 2099 is no mark.
  assert.deepEqual(
    legacyMarksPatch({ [after]: "2026-12-07T11:30:00Z" }, { [after]: "2026-12-07T11:00:00Z" }, now),
    {},
  );
  assert.deepEqual(legacyMarksPatch(undefined, { [after]: "2099-01-01T00:00:00Z" }, now), {});
  assert.deepEqual(legacyMarksPatch(undefined, {}, now), {});
});
