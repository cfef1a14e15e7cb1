import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { UserlandConditions, type Userland } from "../../api/v1alpha1/index.ts";
import {
  computeStatus,
  FIRST_STATUS_DELAY_MS,
  firstStatusDelayMs,
  phaseChangeEvent,
} from "../userlandStatus.ts";
import { serviceRoutes } from "../serviceRoutes.ts";

const now = new Date("2026-01-02T03:04:05.678Z");
const userland = (status?: Userland["status"]): Userland => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name: "ada", namespace: "ns", generation: 2 },
  spec: { user: "ada", templateName: "code", enabled: true },
  status,
});
const available: V1Deployment = {
  metadata: { generation: 1 },
  status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
};

test("computeStatus is pure: the same inputs give the same status, with the clock passed in", () => {
  const first = computeStatus(userland(), { deployment: available, routable: true }, now);
  assert.deepEqual(computeStatus(userland(), { deployment: available, routable: true }, now), first);
  assert.equal(first.phase, "Ready");
  const ready = first.conditions?.find((c) => c.type === UserlandConditions.Ready);
  assert.equal(ready?.lastTransitionTime, "2026-01-02T03:04:05Z");
  assert.equal(first.observedGeneration, 2);
});

test("a blocked sync is Failed with the blocker's reason; entering and leaving Failed deserve an Event", () => {
  const blocked = {
    condition: UserlandConditions.TemplateAvailable,
    reason: "TemplateNotFound",
    message: 'Template "code" does not exist in namespace ns',
  };
  const failed = computeStatus(userland({ phase: "Ready" }), { blocked }, now);
  assert.equal(failed.phase, "Failed");
  assert.deepEqual(phaseChangeEvent({ phase: "Ready" }, failed), {
    type: "warning",
    reason: "TemplateNotFound",
    message: blocked.message,
  });
  const recovered = computeStatus(userland(failed), { deployment: available, routable: true }, now);
  assert.deepEqual(phaseChangeEvent(failed, recovered), {
    type: "normal",
    reason: "Recovered",
    message: "The environment is ready",
  });
  assert.equal(phaseChangeEvent(failed, failed), undefined, "no Event while the phase stays");
  assert.equal(
    phaseChangeEvent({ phase: "Starting" }, recovered),
    undefined,
    "routine changes are not recorded",
  );
});

test("a new Userland's first status waits until it is Ready or its Deployment is 10 s old; later ones never wait", () => {
  const createdAt = (ms: number): V1Deployment => ({
    metadata: { generation: 1, creationTimestamp: new Date(now.getTime() - ms) },
    status: {},
  });
  const young = createdAt(4000);
  const starting = computeStatus(userland(), { deployment: young }, now);
  assert.equal(starting.phase, "Starting");
  assert.equal(firstStatusDelayMs(userland(), starting, young, now), FIRST_STATUS_DELAY_MS - 4000);
  const old = createdAt(FIRST_STATUS_DELAY_MS + 1);
  assert.equal(
    firstStatusDelayMs(userland(), starting, old, now),
    0,
    "still starting after the delay: say so",
  );
  const ready = computeStatus(userland(), { deployment: available, routable: true }, now);
  assert.equal(firstStatusDelayMs(userland(), ready, young, now), 0, "Ready is written at once");
  assert.equal(
    firstStatusDelayMs(userland({ phase: "Stopped" }), starting, young, now),
    0,
    "enabled again: the stored Stopped must not stay",
  );
  const future = createdAt(-60_000);
  assert.equal(
    firstStatusDelayMs(userland(), starting, future, now),
    FIRST_STATUS_DELAY_MS,
    "clock skew is bounded",
  );
});

test("Ready means reachable: an available Deployment whose Service does not route yet is still Starting", () => {
  const waiting = computeStatus(userland(), { deployment: available, routable: false }, now);
  assert.equal(waiting.phase, "Starting");
  const ready = waiting.conditions?.find((c) => c.type === UserlandConditions.Ready);
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "ServiceNotRouting");
  assert.equal(ready?.message, "Starting: waiting for the Service to route to the pod");
  assert.equal(computeStatus(userland(), { deployment: available, routable: true }, now).phase, "Ready");
});

test("serviceRoutes: a ready endpoint for the Service port the proxy uses, named as the Service names it", () => {
  const service: V1Service = { spec: { ports: [{ name: "http", port: 80, targetPort: "web" }] } };
  const slice = (
    ready: boolean | undefined,
    portName = "http",
    addresses = ["198.18.0.5"],
  ): V1EndpointSlice => ({
    addressType: "IPv4",
    ports: [{ name: portName, port: 8080, protocol: "TCP" }],
    endpoints: [{ addresses, conditions: ready === undefined ? {} : { ready } }],
  });
  assert.equal(serviceRoutes(service, 80, [slice(true)]), true);
  assert.equal(serviceRoutes(service, 80, [slice(undefined)]), true, "no ready condition means ready");
  assert.equal(serviceRoutes(service, 80, []), false, "no slice yet");
  assert.equal(serviceRoutes(service, 80, [slice(false)]), false, "the pod is not ready in the slice");
  assert.equal(serviceRoutes(service, 80, [slice(true, "other")]), false, "another port");
  assert.equal(serviceRoutes(service, 80, [slice(true, "http", [])]), false, "no address");
  assert.equal(serviceRoutes(service, 81, [slice(true)]), false, "not a port of the Service");
  // The named target port matched no container port: the controller writes the endpoint without ports.
  assert.equal(serviceRoutes(service, 80, [{ ...slice(true), ports: [] }]), false);
  assert.equal(serviceRoutes(service, 80, [slice(false), slice(true)]), true, "any slice will do");
});
