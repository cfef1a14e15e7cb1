/**
 * The store's Template lookups during a sign-in rush: every provisioning call looks the default
 * Template up, so concurrent lookups of one name share one request to the API server; nothing is
 * kept once it is answered. A counting stand-in for the API server: no cluster needed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Template } from "../../../api/v1alpha1/index.ts";
import type { KubeRest } from "../../../lib/kubeRest.ts";
import { parseWatchNamespaces, ServedNamespaces } from "../../../lib/namespaces.ts";
import { UserlandStore } from "../store.ts";

function countingRest() {
  const asked: string[] = [];
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  const template: Template = {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "demo", namespace: "course", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { template: { spec: { containers: [] } } },
  } as unknown as Template;
  const rest = {
    async request(method: string, path: string, opts?: { query?: Record<string, unknown> }) {
      asked.push(`${method} ${path} ${String(opts?.query?.fieldSelector)}`);
      await gate;
      return { items: [template], metadata: {} };
    },
  } as unknown as KubeRest;
  return {
    rest,
    asked,
    answer: () => {
      release();
      gate = new Promise<void>((r) => (release = r));
    },
  };
}

test("concurrent lookups of one Template share one request; the next lookup asks again", async () => {
  const api = countingRest();
  const store = new UserlandStore(api.rest, new ServedNamespaces(parseWatchNamespaces("*"), "userland"));
  const lookups = Array.from({ length: 20 }, () => store.getTemplate("demo"));
  const other = store.getTemplate("db");
  api.answer();
  const found = await Promise.all(lookups);
  await other;
  assert.ok(found.every((t) => t?.metadata.name === "demo" && t.metadata.namespace === "course"));
  assert.deepEqual(
    api.asked.map((a) => a.split(" ").at(-1)),
    ["metadata.name=demo", "metadata.name=db"],
    "one request per name for the 21 lookups in flight together",
  );
  const later = store.getTemplate("demo");
  api.answer();
  assert.equal((await later)?.metadata.name, "demo");
  assert.equal(api.asked.length, 3, "an answered lookup is not kept: the next one asks the API server");
});
