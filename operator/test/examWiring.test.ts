/**
 * Which informer events queue an Exam (operator/exams/wiring.ts), with stand-in informers: the whole
 * exam against the API server is in exams.test.ts, where other changes sync the exam too and hide a
 * missing event.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ExamMarks } from "../../api/v1alpha1/index.ts";
import type { Caches } from "../caches.ts";
import { examKey, registerExamHandlers } from "../exams/wiring.ts";
import type { WorkQueue } from "../workqueue.ts";
import { recordingQueue, standInInformer } from "../../test/support/standInInformers.ts";

test("an exam's NetworkPolicy edited or deleted queues its exam at once; another policy queues nothing", () => {
  const informers = {
    exams: standInInformer(),
    userlands: standInInformer(),
    submissions: standInInformer(),
    pods: standInInformer(),
    examPolicies: standInInformer(),
  };
  const queue = recordingQueue();
  registerExamHandlers(informers as unknown as Caches, queue as unknown as WorkQueue, () => undefined);
  const policy = (labels: Record<string, string>) => ({
    metadata: { name: "userland-exam-midterm", namespace: "course", labels },
  });
  informers.examPolicies.emit("delete", policy({ [ExamMarks.examLabel]: "midterm" }));
  informers.examPolicies.emit("update", policy({ [ExamMarks.examLabel]: "midterm" }));
  informers.examPolicies.emit("delete", policy({ app: "other" }));
  assert.deepEqual(queue.added, [examKey("course", "midterm"), examKey("course", "midterm")]);
});
