/**
 * Changes decided on the object as read: a conflict (someone wrote in between) is read and decided
 * again, never written over. The API server's side of it (a stale resourceVersion is a 409) is
 * Kubernetes' own; here a client stands in for it to make the race happen every time.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeError, type KubeRest } from "../../../lib/kubeRest.ts";
import { ServedNamespaces } from "../../../lib/namespaces.ts";
import type { Assignment } from "../../../api/v1alpha1/index.ts";
import { CourseworkStore } from "../courseworkStore.ts";

const assignment = (release: number, resourceVersion: string): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name: "week1", namespace: "ns", resourceVersion },
  spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "w1" }, release },
});

test("Publish again after another teacher's write: read again, decided on the new release, written with its resourceVersion", async () => {
  // The first read sees release 1; meanwhile another teacher raised it to 2 (resourceVersion 8).
  const reads = [assignment(1, "7"), assignment(2, "8")];
  const written: Assignment[] = [];
  const rest = {
    get: () => Promise.resolve(reads.shift()),
    replace: (_path: string, body: Assignment) => {
      written.push(body);
      if (body.metadata.resourceVersion === "7")
        return Promise.reject(new KubeError(409, "Conflict", "the object has been modified", {}));
      return Promise.resolve(body);
    },
  } as unknown as KubeRest;
  const store = new CourseworkStore(rest, new ServedNamespaces(undefined, "ns"));
  const seen: number[] = [];
  const result = await store.changeAssignment(
    "ns",
    "week1",
    (a) => {
      seen.push(a.spec.release ?? 1);
      return { write: { ...a, spec: { ...a.spec, release: (a.spec.release ?? 1) + 1 } } };
    },
    (a) => a.spec.release,
  );
  assert.deepEqual(seen, [1, 2], "decided again on what the other teacher wrote");
  assert.equal(result, 3);
  assert.deepEqual(
    written.map((w) => [w.metadata.resourceVersion, w.spec.release]),
    [
      ["7", 2],
      ["8", 3],
    ],
    "every write carries the resourceVersion it was decided on",
  );
});
