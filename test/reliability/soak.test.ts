/**
 * The proxy soak (reliability/soak.ts) at CI size on the shared test control plane: ~30
 * users, each with a keep-alive HTTP client and a WebSocket, for ~30 s while upstreams restart
 * and Userlands are stopped and started by the real operator. `npm run soak` is the long version.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { testCluster, testNamespace } from "../support/cluster.ts";
import { formatSoakReport, runSoak } from "../../reliability/soak.ts";

const USERS = Number(process.env.SOAK_TEST_USERS ?? 30);
const SECONDS = Number(process.env.SOAK_TEST_SECONDS ?? 30);

test("the proxy under load and faults: nothing crosses users, only expected pages, no leaked fds", async (t) => {
  const cluster = await testCluster();
  const namespace = await testNamespace(t, "soak", cluster);
  const report = await runSoak({
    cluster,
    namespace,
    users: USERS,
    seconds: SECONDS,
    warmupSeconds: 5,
    thinkMs: 100,
    messageMs: 500,
    // Enough faults in 30 s: about 60 upstream restarts and 20 Userland stops.
    restartEveryMs: 400,
    flipEveryMs: 1200,
    // Memory by part after an idle spell is for `npm run soak`; nothing here checks it.
    idleSeconds: 0,
    log: process.env.SOAK_VERBOSE ? (line) => t.diagnostic(line) : undefined,
  });
  const text = formatSoakReport(report);
  t.diagnostic(text);

  assert.equal(report.wrongUser, 0, `nothing may cross users:\n${text}`);
  assert.equal(report.unexpected, 0, `only 503 starting/stopped, 502 and 504 pages:\n${text}`);
  assert.equal(report.mismatched, 0, `every answer belongs to its request:\n${text}`);
  assert.ok(report.faults.upstreamRestarts > 0 && report.faults.userlandStops > 0, "faults were injected");
  assert.ok(
    (report.http.byStatus["503 stopped"] ?? 0) + (report.http.byStatus["503 starting"] ?? 0) > 0,
    "stopped Userlands were seen",
  );
  assert.ok((report.http.byStatus["502 unreachable"] ?? 0) > 0, "stopped upstreams were seen");
  assert.ok(
    report.websocket.messagesEchoed > 0 && report.websocket.droppedByServer > 0,
    "WebSockets were echoed and dropped",
  );
  assert.ok(
    report.proxy.afterClose.fds <= report.proxy.baseline.fds + 16,
    `the proxy's fds return near the baseline (${report.proxy.baseline.fds} → ${report.proxy.afterClose.fds})`,
  );
  assert.deepEqual(report.failures, [], text);
});
