/** KubeRest against a local HTTP server standing in for the API server (no cluster needed). */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { k8s } from "../kube.ts";
import { KubeError, KubeRest, TOO_MANY_REQUESTS_ATTEMPTS } from "../kubeRest.ts";

/** A KubeRest whose API server answers each request with `answer`; returns the times requests arrived. */
async function restAnswering(
  t: TestContext,
  answer: (n: number, response: ServerResponse, request: IncomingMessage) => void,
): Promise<{ rest: KubeRest; arrivals: number[] }> {
  const arrivals: number[] = [];
  const server = createServer((request, response) => {
    arrivals.push(performance.now());
    request.resume();
    request.on("end", () => answer(arrivals.length, response, request));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  const rest = new KubeRest(kc, "kubeRest-test");
  t.after(async () => {
    await rest.close();
    await new Promise((resolve) => server.close(resolve));
  });
  return { rest, arrivals };
}

const tooMany = (response: ServerResponse, headers: Record<string, string>, retryAfterSeconds?: number) => {
  response.writeHead(429, { "content-type": "application/json", ...headers });
  response.end(
    JSON.stringify({
      kind: "Status",
      reason: "TooManyRequests",
      message: "storage is (re)initializing",
      ...(retryAfterSeconds === undefined ? {} : { details: { retryAfterSeconds } }),
    }),
  );
};

test("a 429 is sent again after the Retry-After header, and the caller sees only the answer", async (t) => {
  const { rest, arrivals } = await restAnswering(t, (n, response) => {
    if (n < 3) return tooMany(response, { "retry-after": "0.2" });
    response.writeHead(201, { "content-type": "application/json" });
    response.end(JSON.stringify({ kind: "Userland", metadata: { name: "a" } }));
  });
  const created = await rest.create<{ metadata: { name: string } }>(
    "/apis/userland.dev/v1alpha1/userlands",
    {},
  );
  assert.equal(created.metadata.name, "a");
  assert.equal(arrivals.length, 3);
  const [first = 0, second = 0] = arrivals;
  assert.ok(second - first >= 190, `waited ${second - first} ms, not the 200 ms asked for`);
});

test("a Status body's retryAfterSeconds counts when there is no header; waits are capped at 2 s", async (t) => {
  const { rest, arrivals } = await restAnswering(t, (n, response) => {
    if (n === 1) return tooMany(response, {}, 60);
    response.writeHead(200, { "content-type": "application/json" });
    response.end("{}");
  });
  await rest.get("/api/v1/namespaces");
  const [first = 0, second = 0] = arrivals;
  assert.ok(second - first < 2_500, `waited ${second - first} ms: the 60 s asked for is capped`);
  assert.ok(second - first >= 1_900, `waited ${second - first} ms`);
});

test("a 429 that persists reaches the caller after a bounded number of tries", async (t) => {
  const { rest, arrivals } = await restAnswering(t, (_n, response) =>
    tooMany(response, { "retry-after": "0" }),
  );
  await assert.rejects(
    rest.get("/api/v1/namespaces"),
    (e: unknown) => e instanceof KubeError && e.code === 429 && e.retryAfterSeconds === 0,
  );
  assert.equal(arrivals.length, TOO_MANY_REQUESTS_ATTEMPTS);
});

test("other errors are not sent again", async (t) => {
  const { rest, arrivals } = await restAnswering(t, (_n, response) => {
    response.writeHead(409, { "content-type": "application/json" });
    response.end(JSON.stringify({ kind: "Status", reason: "AlreadyExists", message: "exists" }));
  });
  await assert.rejects(
    rest.create("/api/v1/namespaces", {}),
    (e: unknown) => e instanceof KubeError && e.code === 409,
  );
  assert.equal(arrivals.length, 1);
});

test("an aborted caller stops waiting for the next try", async (t) => {
  const { rest, arrivals } = await restAnswering(t, (_n, response) =>
    tooMany(response, { "retry-after": "2" }),
  );
  const started = performance.now();
  await assert.rejects(rest.get("/api/v1/namespaces", { signal: AbortSignal.timeout(300) }));
  assert.ok(performance.now() - started < 1_500, "did not wait out the Retry-After");
  assert.equal(arrivals.length, 1);
});
