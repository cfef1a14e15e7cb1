/**
 * Which informer events queue an Exam (operator/exams/wiring.ts), with stand-in informers that only
 * record their handlers: the whole exam against the API server is in exams.test.ts, where other
 * changes sync the exam too and hide a missing event.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ExamMarks } from "../../api/v1alpha1/index.ts";
import type { Caches } from "../caches.ts";
import { examKey, registerExamHandlers } from "../exams/wiring.ts";
import type { WorkQueue } from "../workqueue.ts";

type Handler = (obj: unknown, old?: unknown) => void;

/** An informer that keeps its handlers, lists nothing and can be made to emit. */
function standIn() {
  const handlers = new Map<string, Handler[]>();
  return {
    on(event: string, fn: Handler) {
      handlers.set(event, [...(handlers.get(event) ?? []), fn]);
    },
    list: () => [],
    emit(event: string, obj: unknown) {
      for (const fn of handlers.get(event) ?? []) fn(obj);
    },
  };
}

test("an exam's NetworkPolicy edited or deleted queues its exam at once; another policy queues nothing", () => {
  const informers = {
    exams: standIn(),
    userlands: standIn(),
    submissions: standIn(),
    pods: standIn(),
    examPolicies: standIn(),
  };
  const added: string[] = [];
  const queue = { add: (key: string) => added.push(key), addAfter: () => undefined } as unknown as WorkQueue;
  registerExamHandlers(informers as unknown as Caches, queue, () => undefined);
  const policy = (labels: Record<string, string>) => ({
    metadata: { name: "userland-exam-midterm", namespace: "course", labels },
  });
  informers.examPolicies.emit("delete", policy({ [ExamMarks.examLabel]: "midterm" }));
  informers.examPolicies.emit("update", policy({ [ExamMarks.examLabel]: "midterm" }));
  informers.examPolicies.emit("delete", policy({ app: "other" }));
  assert.deepEqual(added, [examKey("course", "midterm"), examKey("course", "midterm")]);
});
