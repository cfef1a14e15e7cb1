/**
 * Whether a Userland's pods carry the exam label (docs/decisions/0013-exams.md). The label takes
 * them out of the chart's environments policy, so it must never open a pod: it goes on only while
 * the operator's own Exam of that name, for the Userland's Template, reports its policy in place
 * (NetworkClosed=True). A label on a Userland naming no such exam (a hand edit) changes nothing.
 */
import { ExamConditions, ExamMarks, type Userland } from "../../api/v1alpha1/index.ts";
import { findCondition } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";

export function closedExamOf(ctx: Pick<OperatorContext, "caches">, userland: Userland): string | undefined {
  const name = userland.metadata.labels?.[ExamMarks.examLabel];
  if (name === undefined) return undefined;
  const exam = ctx.caches.exams.get(name, userland.metadata.namespace);
  if (!exam || exam.spec.templateName !== userland.spec.templateName) return undefined;
  const closed = findCondition(exam.status?.conditions, ExamConditions.NetworkClosed);
  return closed?.status === "True" ? name : undefined;
}
