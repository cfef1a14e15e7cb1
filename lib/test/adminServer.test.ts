/** Every component's admin listener: probes and metrics. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Counter, Registry } from "prom-client";
import { createAdminServer } from "../adminServer.ts";

test("/healthz, /readyz from the readiness callback, /metrics from the registry, 404 otherwise", async (t) => {
  const registry = new Registry();
  new Counter({ name: "test_things_total", help: "Things.", registers: [registry] }).inc(3);
  let ready = false;
  const admin = createAdminServer({ registry, readiness: () => ({ ready, details: { synced: ready } }) });
  const base = await admin.listen(0, "127.0.0.1");
  t.after(() => admin.close());
  assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);

  const health = await fetch(`${base}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(await health.text(), "ok\n");

  const waiting = await fetch(`${base}/readyz`);
  assert.equal(waiting.status, 503);
  assert.deepEqual(await waiting.json(), { synced: false });
  ready = true;
  const readyNow = await fetch(`${base}/readyz?verbose=1`);
  assert.equal(readyNow.status, 200);
  assert.deepEqual(await readyNow.json(), { synced: true });

  const metrics = await fetch(`${base}/metrics`);
  assert.equal(metrics.headers.get("content-type"), registry.contentType);
  assert.match(await metrics.text(), /^test_things_total 3$/m);

  assert.equal((await fetch(`${base}/other`)).status, 404);
});

test("close stops listening even with a keep-alive connection open", async () => {
  const admin = createAdminServer({
    registry: new Registry(),
    readiness: () => ({ ready: true, details: {} }),
  });
  const base = await admin.listen(0, "127.0.0.1");
  await (await fetch(`${base}/healthz`)).text();
  await admin.close();
  assert.equal(admin.server.listening, false);
  await assert.rejects(fetch(`${base}/healthz`));
});

test("without a readiness callback /readyz is no page: such a component is probed on its main port", async (t) => {
  const registry = new Registry();
  new Counter({ name: "test_others_total", help: "Others.", registers: [registry] }).inc();
  const admin = createAdminServer({ registry });
  const base = await admin.listen(0, "127.0.0.1");
  t.after(() => admin.close());
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
  assert.equal((await fetch(`${base}/readyz`)).status, 404);
  assert.match(await (await fetch(`${base}/metrics`)).text(), /^test_others_total 1$/m);
});
