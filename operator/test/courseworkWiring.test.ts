/**
 * Which informer events queue coursework keys (operator/coursework/wiring.ts), with stand-in
 * informers: against the API server (archives.test.ts) an Archive made right after its Assignment
 * waited for a resync now and then.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Archive, Assignment } from "../../api/v1alpha1/index.ts";
import type { Caches } from "../caches.ts";
import { archiveKey, assignmentKey, registerCourseworkHandlers } from "../coursework/wiring.ts";
import type { WorkQueue } from "../workqueue.ts";
import { recordingQueue, standInInformer } from "../../test/support/standInInformers.ts";

test("an Archive of an assignment's hand-ins is queued again when the assignment gets its folder in the collection", () => {
  const handins = {
    metadata: { name: "a1-handins", namespace: "course" },
    spec: { source: { handins: { templateName: "lab", assignment: "a1" } } },
  } as unknown as Archive;
  const other = {
    metadata: { name: "b-handins", namespace: "course" },
    spec: { source: { handins: { templateName: "lab", assignment: "b" } } },
  } as unknown as Archive;
  const informers = {
    assignments: standInInformer(),
    submissions: standInInformer(),
    userlands: standInInformer(),
    deployments: standInInformer(),
    pods: standInInformer(),
    pvcs: standInInformer(),
    copyPods: standInInformer(),
    archives: standInInformer([handins, other]),
    classArchives: standInInformer(),
  };
  const queue = recordingQueue();
  registerCourseworkHandlers(informers as unknown as Caches, queue as unknown as WorkQueue);
  const a1 = (status: Assignment["status"]) =>
    ({
      metadata: { name: "a1", namespace: "course", uid: "u1", generation: 1 },
      spec: { templateName: "lab", title: "A1", source: { folder: "course", path: "a1" } },
      status,
    }) as Assignment;
  const before = a1({});
  const synced = a1({ collectionFolder: "a1-12345678" });
  informers.assignments.emit("update", synced, before);
  assert.ok(queue.added.includes(archiveKey("course", "a1-handins")), queue.added.join(", "));
  assert.ok(!queue.added.includes(archiveKey("course", "b-handins")));
  // A later change of the synced assignment (a recount) queues no archive again.
  queue.added.length = 0;
  informers.assignments.emit("update", synced, synced);
  assert.deepEqual(queue.added, [assignmentKey("course", "a1")]);
});
