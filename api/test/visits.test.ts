/** The durable record of teachers' visits (api/visits.ts): how reports fold into it, and its bounds. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyVisitReport,
  CONSENT_TTL_MS,
  consentState,
  parseVisitRequests,
  REQUEST_TTL_MS,
  withConsent,
  withRequest,
  MAX_VISITS,
  parseVisits,
  VISIT_HISTORY_MS,
  visitIsLive,
  visitMinutes,
  type Visit,
  type VisitReport,
} from "../visits.ts";

const t0 = Date.parse("2026-12-03T10:42:00.000Z");
const at = (s: number) => new Date(t0 + s * 1000);
const QUIET = 300_000;
const report = (phase: VisitReport["phase"], first: number, last: number, now = last): VisitReport => ({
  visitor: "alice",
  phase,
  firstSeen: at(first),
  lastSeen: at(last),
  staleMs: QUIET,
  now: at(now),
});

test("a visit begins, continues (several replicas join it), ends; a later one is a new entry", () => {
  let visits: Visit[] = [];
  const begin = applyVisitReport(visits, report("begin", 0, 0));
  assert.ok(begin.started);
  assert.equal(begin.visits.length, 1);
  visits = begin.visits;
  // Another replica's first request a minute later joins the same visit.
  const joined = applyVisitReport(visits, report("begin", 60, 60));
  assert.equal(joined.started, undefined);
  assert.equal(joined.visits.length, 1);
  assert.equal(joined.visits[0]?.to, at(60).toISOString());
  // Reported while it goes on (every 30 s in practice; never a quiet period apart).
  visits = joined.visits;
  for (let minute = 5; minute <= 25; minute += 4)
    visits = applyVisitReport(visits, report("continue", 0, minute * 60)).visits;
  visits = applyVisitReport(visits, report("continue", 0, 25 * 60)).visits;
  assert.equal(visits.length, 1);
  // The end arrives a quiet period after the last request, and still finds the visit.
  const end = applyVisitReport(visits, report("end", 0, 25 * 60, 25 * 60 + 300));
  assert.equal(end.ended?.visitor, "alice");
  assert.equal(end.visits[0]?.ended, true);
  assert.equal(visitMinutes(end.visits[0]), 25);
  assert.equal(applyVisitReport(end.visits, report("end", 0, 25 * 60, 25 * 60 + 301)).changed, false);
  // A replica still seeing requests within the quiet period reopens it rather than starting another.
  const reopened = applyVisitReport(end.visits, report("continue", 0, 25 * 60 + 100, 25 * 60 + 302));
  assert.equal(reopened.visits.length, 1);
  assert.equal(reopened.visits[0]?.ended, undefined);
  // After the quiet period: a new visit.
  const later = applyVisitReport(end.visits, report("begin", 3600, 3600));
  assert.ok(later.started);
  assert.equal(later.visits.length, 2);
});

test("reports held back longer than a quiet period (a slow user-manager) still extend one visit when the replica saw it without a break", () => {
  // A WebSocket open from 0 s; the replica's reports at 10 s, then (the user-manager slow) at 400 s:
  // more than the quiet period after the record's last request, but the same replica's same visit.
  let visits = applyVisitReport([], report("begin", 0, 0)).visits;
  visits = applyVisitReport(visits, report("continue", 0, 10)).visits;
  const late = applyVisitReport(visits, report("continue", 0, 400));
  assert.equal(late.started, undefined, "no second visit");
  assert.equal(late.visits.length, 1);
  assert.equal(late.visits[0]?.to, at(400).toISOString());
  // A replica whose own visit began after a quiet break is a new visit.
  const again = applyVisitReport(late.visits, report("begin", 800, 800));
  assert.ok(again.started);
  assert.equal(again.visits.length, 2);
});

test("an end for a visit never recorded writes nothing; another visitor's visit is apart", () => {
  assert.equal(applyVisitReport([], report("end", 0, 10)).changed, false);
  const alice = applyVisitReport([], report("begin", 0, 0)).visits;
  const bob = applyVisitReport(alice, { ...report("begin", 5, 5), visitor: "bob" });
  assert.ok(bob.started);
  assert.deepEqual(
    bob.visits.map((v) => v.visitor),
    ["alice", "bob"],
  );
});

test("live: not ended and seen within the quiet period (a replica that died leaves it open, not live forever)", () => {
  const [v] = applyVisitReport([], report("begin", 0, 0)).visits;
  assert.ok(v);
  assert.equal(visitIsLive(v, at(299), QUIET), true);
  assert.equal(visitIsLive(v, at(301), QUIET), false);
});

test("bounded: at most MAX_VISITS entries, none older than 30 days", () => {
  let visits: Visit[] = [];
  for (let i = 0; i < MAX_VISITS + 10; i++)
    visits = applyVisitReport(visits, report("begin", i * 3600, i * 3600)).visits;
  assert.equal(visits.length, MAX_VISITS);
  assert.equal(visits[0]?.from, at(10 * 3600).toISOString(), "the oldest went first");
  const month = applyVisitReport(
    visits,
    report(
      "begin",
      (MAX_VISITS + 10) * 3600 + VISIT_HISTORY_MS / 1000,
      (MAX_VISITS + 10) * 3600 + VISIT_HISTORY_MS / 1000,
    ),
  );
  assert.equal(month.visits.length, 1, "a month later only the new visit is kept");
});

test("parseVisits reads what it can: a hand-edited or broken annotation is no crash", () => {
  assert.deepEqual(parseVisits(undefined), []);
  assert.deepEqual(parseVisits("not json"), []);
  assert.deepEqual(parseVisits('{"visitor":"a"}'), []);
  assert.deepEqual(
    parseVisits(
      '[{"visitor":"a","from":"2026-12-03T10:42:00Z","to":"2026-12-03T10:50:00Z"},{"visitor":1},{"visitor":"b","from":"x","to":"y"}]',
    ),
    [{ visitor: "a", from: "2026-12-03T10:42:00Z", to: "2026-12-03T10:50:00Z" }],
  );
});

test("consent: a request waits, an Allow lets that visitor in for an hour, an unanswered one lapses", () => {
  const asked = withRequest([], "alice", at(0));
  assert.equal(asked.changed, true);
  assert.equal(consentState(asked.requests, "alice", at(1)), "pending");
  assert.equal(consentState(asked.requests, "bob", at(1)), "none");
  assert.equal(withRequest(asked.requests, "alice", at(2)).changed, false, "asking again writes nothing");
  assert.equal(consentState(asked.requests, "alice", at(REQUEST_TTL_MS / 1000 + 1)), "none", "lapsed");
  assert.equal(withConsent([], "alice", at(3)).found, false, "nothing to allow");
  const allowed = withConsent(asked.requests, "alice", at(60));
  assert.equal(allowed.found, true);
  assert.equal(consentState(allowed.requests, "alice", at(61)), "allowed");
  assert.equal(consentState(allowed.requests, "alice", at(60 + CONSENT_TTL_MS / 1000 + 1)), "none");
  assert.deepEqual(parseVisitRequests(JSON.stringify(allowed.requests)), allowed.requests);
  assert.deepEqual(parseVisitRequests('[{"visitor":"a","requestedAt":"nope"}]'), []);
});
