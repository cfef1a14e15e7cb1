/**
 * Informer events → Exam keys: an Exam is synced again when it changes, and (batched) when what its
 * sync reads changes: a Userland in its namespace (a student, a mark), one in any served namespace
 * while it runs (a student's other environments, held wherever they are),
 * a Submission of its assignment (collection), a pod carrying its label (the policy waits for
 * them to go at the end), and its NetworkPolicy, edited or deleted by someone: written again at once,
 * not at the next resync (issue 41 item 8; the proxy serves no one while it is missing).
 */
import {
  ExamConditions,
  examHoldValue,
  ExamMarks,
  parseExamNotice,
  type Exam,
} from "../../api/v1alpha1/index.ts";
import type { k8s } from "../../lib/kube.ts";
import type { Caches } from "../caches.ts";
import type { WorkQueue } from "../workqueue.ts";
import { queueKey } from "../queueKeys.ts";

export const examKey = (namespace: string, name: string) => queueKey("Exam", namespace, name);

/** Many students' changes at once (a start, a collection) make one sync. */
const BATCH_MS = 500;

/** An exam that can still change something: not over, or being deleted. */
const active = (e: Exam) => e.status?.phase !== "Over" || e.metadata.deletionTimestamp !== undefined;
/** An exam that holds (or releases) Userlands in other namespaces than its own. */
const holding = (e: Exam) =>
  e.status?.phase === "Running" ||
  e.status?.phase === "Collecting" ||
  e.metadata.deletionTimestamp !== undefined;

const networkClosed = (e: Exam | undefined) =>
  e?.status?.conditions?.find((c) => c.type === ExamConditions.NetworkClosed)?.status;

export function registerExamHandlers(
  caches: Caches,
  queue: WorkQueue,
  /** Queues a Userland's sync: its pods carry the exam label only while the exam's network is closed. */
  enqueueUserland: (namespace: string, name: string) => void,
): void {
  const { exams, userlands, submissions, pods, examPolicies } = caches;
  const onExam = (e: Exam, old?: Exam) => {
    const namespace = e.metadata.namespace ?? "";
    queue.add(examKey(namespace, e.metadata.name ?? ""));
    if (networkClosed(e) === networkClosed(old)) return;
    for (const u of userlands.list(namespace))
      if (u.metadata.labels?.[ExamMarks.examLabel] === e.metadata.name)
        enqueueUserland(namespace, u.metadata.name ?? "");
  };
  exams.on("add", (e) => onExam(e));
  exams.on("update", (e, old) => onExam(e, old));
  exams.on("delete", (e) => onExam(e, { ...e, status: {} }));

  const later = (namespace: string, name: string) => queue.addAfter(examKey(namespace, name), BATCH_MS);
  /** The exams that marked `o`: its exam label's (its namespace), its hold's (named in its annotation). */
  const marksOf = (o: k8s.KubernetesObject | undefined): [string, string][] => {
    const namespace = o?.metadata?.namespace ?? "";
    const exam = o?.metadata?.labels?.[ExamMarks.examLabel];
    const hold = o?.metadata?.labels?.[ExamMarks.holdLabel];
    const notice = parseExamNotice(o?.metadata?.annotations?.[ExamMarks.holdAnnotation]);
    return [
      ...(exam === undefined ? [] : [[namespace, exam] as [string, string]]),
      ...(hold !== undefined &&
      notice?.namespace !== undefined &&
      examHoldValue(notice.namespace, notice.exam) === hold
        ? [[notice.namespace, notice.exam] as [string, string]]
        : []),
    ];
  };
  const onUserland = (u: k8s.KubernetesObject, old?: k8s.KubernetesObject) => {
    const namespace = u.metadata?.namespace ?? "";
    for (const [ns, name] of [...marksOf(u), ...marksOf(old)]) later(ns, name);
    for (const e of exams.list())
      if (e.metadata.namespace === namespace ? active(e) : holding(e))
        later(e.metadata.namespace ?? "", e.metadata.name ?? "");
  };
  userlands.on("add", (u) => onUserland(u));
  userlands.on("update", (u, old) => onUserland(u, old));
  userlands.on("delete", (u) => onUserland(u));

  const onSubmission = (s: k8s.KubernetesObject & { spec?: { assignment?: string } }) => {
    const namespace = s.metadata?.namespace ?? "";
    for (const e of exams.list(namespace))
      if (active(e) && e.spec.assignment === s.spec?.assignment) later(namespace, e.metadata.name ?? "");
  };
  submissions.on("add", onSubmission);
  submissions.on("update", onSubmission);

  const onPod = (pod: k8s.KubernetesObject) => {
    const name = pod.metadata?.labels?.[ExamMarks.examLabel];
    if (name) later(pod.metadata?.namespace ?? "", name);
  };
  pods.on("update", onPod);
  pods.on("delete", onPod);
  // Right away: an exam without its policy is closed to everyone until it is back.
  const onPolicy = (policy: k8s.KubernetesObject) => {
    const name = policy.metadata?.labels?.[ExamMarks.examLabel];
    if (name) queue.add(examKey(policy.metadata?.namespace ?? "", name));
  };
  examPolicies.on("update", onPolicy);
  examPolicies.on("delete", onPolicy);
}
