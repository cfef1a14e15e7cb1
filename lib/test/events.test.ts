/**
 * The EventRecorder writes in the background, two at a time, and drops Events beyond 1,000 waiting
 * (no cluster needed: a stand-in KubeRest whose creates wait until the test lets them finish).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubeRest } from "../kubeRest.ts";
import { createLogger } from "../logger.ts";
import { EventRecorder, type EventTarget } from "../events.ts";

/** A KubeRest stand-in: each create waits until release() ends it, and is remembered. */
function blockingRest() {
  const sent: { path: string; reason: string }[] = [];
  const waiting: (() => void)[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const rest = {
    create: async (path: string, body: { reason: string }) => {
      sent.push({ path, reason: body.reason });
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      inFlight--;
      if (body.reason === "Fails") throw new Error("the API server said no");
      return body;
    },
  } as unknown as KubeRest;
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  /** Lets every waiting create finish, until none is left. */
  const release = async () => {
    while (waiting.length > 0) {
      for (const resolve of waiting.splice(0)) resolve();
      await settle();
    }
  };
  return { rest, sent, release, settle, mostInFlight: () => mostInFlight };
}

const target = (name: string): EventTarget => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name, namespace: "ns", uid: `uid-${name}` },
});

test("Events are written in the order recorded, two at a time, and a failed one does not stop the rest", async () => {
  const { rest, sent, release, settle, mostInFlight } = blockingRest();
  const events = new EventRecorder(rest, "userland-operator", createLogger("events-test", "silent"));
  events.normal(target("a"), "Created", "Created Deployment code-a");
  events.warning(target("b"), "Fails", "this one is refused");
  for (const name of ["c", "d", "e"]) events.normal(target(name), "Created", `Created ${name}`);
  await settle();
  assert.equal(sent.length, 2, "two requests at once, the rest wait");
  await release();
  assert.deepEqual(
    sent.map((e) => e.reason),
    ["Created", "Fails", "Created", "Created", "Created"],
  );
  assert.equal(mostInFlight(), 2);
  assert.ok(sent.every((e) => e.path === "/api/v1/namespaces/ns/events"));
});

test("beyond 1,000 waiting Events, new ones are dropped rather than kept without bound", async () => {
  const { rest, sent, release, settle } = blockingRest();
  const events = new EventRecorder(rest, "userland-operator", createLogger("events-test", "silent"));
  for (let i = 0; i < 1010; i++) events.normal(target(`u${i}`), "Created", `Created ${i}`);
  await settle();
  await release();
  // Two were being written when the queue filled up, so it took 1,000 more.
  assert.equal(sent.length, 1002);
});
