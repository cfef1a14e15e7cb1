/**
 * The visit tracker's account of a visit to the user-manager (issue 44 item 7): a visit whose IDE
 * tab was closed ends within seconds, not after the quiet period; one still open does not.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { createLogger } from "../../../lib/logger.ts";
import type { UserManagerClient, VisitReportBody } from "../../../lib/userManagerClient.ts";
import { CLOSED_TAB_MS, VisitTracker } from "../route/visitTracker.ts";

const QUIET_MS = 300_000;
const userland = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { namespace: "class-a", name: "ann" },
  spec: { user: "ann", templateName: "code" },
} as unknown as Userland;

/** A tracker on a clock the test moves, reporting to a user-manager that allows and records. */
function tracker() {
  const reports: VisitReportBody["phase"][] = [];
  const userManager = {
    visit: (_name: string, report: VisitReportBody) => {
      reports.push(report.phase);
      return Promise.resolve({ owner: "ann" });
    },
  } as unknown as UserManagerClient;
  let now = 1_000_000;
  const visits = new VisitTracker({
    userManager,
    quietMs: QUIET_MS,
    log: createLogger("proxy-test", "silent"),
    now: () => now,
  });
  return { visits, reports, advance: (ms: number) => (now += ms) };
}

test("a visit whose WebSockets all closed (the tab closed) ends once no request came for CLOSED_TAB_MS", async () => {
  const { visits, reports, advance } = tracker();
  assert.equal(await visits.admit(userland, "teacher", "token"), "allowed");
  const closed = visits.socketOpened("class-a", "ann", "teacher");
  advance(60_000);
  await visits.tick();
  assert.deepEqual(reports, ["begin", "continue"], "an open WebSocket keeps the visit going");
  closed();
  advance(CLOSED_TAB_MS - 1000);
  await visits.tick();
  assert.deepEqual(reports, ["begin", "continue"], "a reload's moment without a WebSocket is no end");
  advance(2000);
  await visits.tick();
  assert.deepEqual(reports, ["begin", "continue", "end"]);
  visits.stop();
});

test("a request after the WebSocket closed, or a WebSocket opened again, keeps the visit going", async () => {
  const { visits, reports, advance } = tracker();
  await visits.admit(userland, "teacher", "token");
  visits.socketOpened("class-a", "ann", "teacher")();
  advance(CLOSED_TAB_MS - 5000);
  visits.touch("class-a", "ann", "teacher");
  advance(10_000);
  await visits.tick();
  assert.ok(!reports.includes("end"), `reports: ${reports.join(", ")}`);
  const closedAgain = visits.socketOpened("class-a", "ann", "teacher");
  advance(QUIET_MS / 2);
  await visits.tick();
  assert.ok(!reports.includes("end"), "an open WebSocket is never a closed tab");
  closedAgain();
  advance(CLOSED_TAB_MS);
  await visits.tick();
  assert.equal(reports.at(-1), "end");
  visits.stop();
});

test("a visit that never had a WebSocket ends after the quiet period, as before", async () => {
  const { visits, reports, advance } = tracker();
  await visits.admit(userland, "teacher", "token");
  advance(CLOSED_TAB_MS * 2);
  await visits.tick();
  assert.ok(!reports.includes("end"));
  advance(QUIET_MS);
  await visits.tick();
  assert.equal(reports.at(-1), "end");
  visits.stop();
});
