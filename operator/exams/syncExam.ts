/**
 * The Exam sync handler (docs/decisions/0013-exams.md). Level-triggered: the phase follows from
 * the clock, the Exam and the caches, so a restart at any point converges.
 *
 * - Scheduled: in the day before the start, each student's exam environment carries the notice
 *   the home page shows (ExamMarks.upcomingAnnotation); it goes at the start, or if the exam moves.
 * - Running: the exam's NetworkPolicy exists; what is about to change is recorded in status first
 *   (changed.enabled, changed.stopped), then each student's exam environment is marked and started
 *   and their other Userlands, in every namespace the release serves, are put on hold (stopped).
 * - Collecting (after the end, with spec.assignment): every outstanding hand-in is requested, as
 *   at an Assignment's closing time; the network stays closed until each is collected or failed.
 * - Over (or the Exam deleted): marks removed, the record undone, the policy deleted once no pod
 *   carries the exam label any more.
 */
import { submissionIsOf } from "../../api/assignmentIdentity.ts";
import pLimit from "p-limit";
import { LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  API_VERSION,
  ExamConditions,
  examHoldValue,
  ExamMarks,
  parseExamNotice,
  SubmissionConditions,
  UserlandAnnotations,
  coversWholeTemplate,
  type Exam,
  type ExamNotice,
  type ExamPhase,
  type ExamStatus,
  type ExamStudent,
  type Submission,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { namespacedKey } from "../../lib/informer.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import { examMarkKey, holdMarkKey, Index } from "../caches.ts";
import { stableJson } from "../compare.ts";
import { findCondition, setCondition, timeMs, type ConditionInput } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { userlandRef, type EventTarget } from "../../lib/events.ts";
import { resources } from "../resources.ts";
import { requestOutstandingHandIns } from "../coursework/syncAssignment.ts";
import { examNetworkPolicy, examPolicyName, type ExamNetworkPolicy, type ProxyPods } from "./policy.ts";
import { writeStatus } from "../statusWrite.ts";

export interface ExamSyncResult {
  againAfterMs?: number;
}

/** How long before its start an exam is announced on its students' home pages. */
export const ANNOUNCE_BEFORE_MS = 24 * 3_600_000;
/** The network stays closed for collection at most this long after the end. */
export const COLLECT_AT_MOST_MS = 10 * 60_000;
/** While collecting, or waiting for exam pods to go, look again this often (events come too). */
const RECHECK_MS = 5_000;
/** A hand-in that will not succeed by waiting: the exam does not keep the network closed for it. */
const FINAL_FAILURES = new Set(["OverLimit", "NothingToCopy", "CopyFailed", "NoEnvironment"]);
const USERLAND_WRITES_IN_FLIGHT = 16;

/** What the exam controller needs beyond the shared context. */
export interface ExamOptions {
  /** The proxy's pods (OPERATOR_PROXY_PODS); unset, no exam closes the network (or starts). */
  proxyPods?: ProxyPods;
}

const label = (u: Userland, key: string) => u.metadata.labels?.[key];

/** An exam by namespace and name: a hold reaches across namespaces, names alone would meet. */
interface ExamRef {
  namespace: string;
  name: string;
}

/** "<namespace>/<name>", as status.changed.stopped keeps a held Userland. */
const userlandKey = (u: Userland) => namespacedKey(u.metadata.namespace, u.metadata.name ?? "");
const holdValueOf = (exam: Exam) => examHoldValue(exam.metadata.namespace ?? "", exam.metadata.name ?? "");
/** `u` is this exam's environment: its exam label, in the exam's namespace. */
const isExamEnvOf = (u: Userland, exam: Exam) =>
  u.metadata.namespace === exam.metadata.namespace && label(u, ExamMarks.examLabel) === exam.metadata.name;
/** `u` is held by this exam. */
const isHeldBy = (u: Userland, exam: Exam) => label(u, ExamMarks.holdLabel) === holdValueOf(exam);

export async function syncExam(
  ctx: OperatorContext,
  options: ExamOptions,
  namespace: string,
  name: string,
): Promise<ExamSyncResult> {
  const cached = ctx.caches.exams.get(name, namespace);
  if (!cached) return {};
  let exam = cached;
  const now = ctx.now().getTime();
  const start = timeMs(exam.spec.start);
  const end = timeMs(exam.spec.end);
  const deleting = exam.metadata.deletionTimestamp !== undefined;
  const previous = exam.status ?? {};

  if (!deleting && !exam.metadata.finalizers?.includes(ExamMarks.finalizer)) {
    exam = await ctx.rest.patch<Exam>(resources.Exam.path(namespace, name), {
      metadata: {
        resourceVersion: exam.metadata.resourceVersion,
        finalizers: [...(exam.metadata.finalizers ?? []), ExamMarks.finalizer],
      },
    });
  }

  const students = await studentsOf(ctx, exam);
  const submissions = submissionsOf(ctx, exam, students);
  const collected = (user: string) => handInState(submissions.get(user));
  const collectionDone = [...students.keys()].every((user) => collected(user) !== "pending");

  let phase: ExamPhase;
  if (deleting) phase = "Over";
  else if (now < start) phase = "Scheduled";
  else if (now < end) phase = "Running";
  else if (
    exam.spec.assignment !== undefined &&
    previous.phase !== "Over" &&
    !collectionDone &&
    now < end + COLLECT_AT_MOST_MS
  )
    phase = "Collecting";
  else phase = "Over";

  const status: ExamStatus = { ...previous, observedGeneration: exam.metadata.generation, phase };
  let againAfterMs: number | undefined;
  const soonest = (ms: number) => (againAfterMs = Math.min(againAfterMs ?? ms, Math.max(ms, 0)));
  if (phase === "Scheduled") soonest(start - now);
  if (phase === "Scheduled" && now < start - ANNOUNCE_BEFORE_MS) soonest(start - ANNOUNCE_BEFORE_MS - now);
  await announce(ctx, exam, students, phase === "Scheduled" && now >= start - ANNOUNCE_BEFORE_MS);
  if (phase === "Running") soonest(end - now);
  if (phase === "Collecting") soonest(Math.min(RECHECK_MS, end + COLLECT_AT_MOST_MS - now));

  if (phase === "Running" || phase === "Collecting") {
    const network = await closeNetwork(ctx, options, exam);
    status.conditions = setCondition(status.conditions, network);
    if (network.status === "True") status.policy = examPolicyName(name);
    if (network.status === "True") {
      exam = await recordChanges(ctx, exam, students, status);
      await applyMarks(ctx, exam, students);
    }
    if (phase === "Collecting" && exam.spec.assignment !== undefined)
      await requestOutstandingHandIns(
        ctx,
        [...students.keys()].flatMap((u) => submissions.get(u) ?? []),
        exam.spec.end,
      );
  } else if (phase === "Over") {
    const { restored, podsLeft } = await restore(ctx, exam, status, previous.phase !== "Over");
    if (podsLeft) soonest(RECHECK_MS);
    if (restored) {
      status.conditions = setCondition(status.conditions, {
        type: ExamConditions.NetworkClosed,
        status: "False",
        reason: "ExamOver",
        message: "The exam is over: its NetworkPolicy is removed and the students' environments restored",
      });
      if (deleting) {
        await ctx.rest.patch(resources.Exam.path(namespace, name), {
          metadata: {
            resourceVersion: exam.metadata.resourceVersion,
            finalizers: (exam.metadata.finalizers ?? []).filter((f) => f !== ExamMarks.finalizer),
          },
        });
        return {};
      }
    }
  }

  // By user: the same students in the same order write nothing.
  status.students = [...students.values()]
    .sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0))
    .map((s) => {
      const state = studentState(phase, s, exam, collected(s.user));
      const other =
        phase === "Running" || phase === "Collecting" ? otherExam(ctx, s.userland, exam) : undefined;
      const which =
        other && (other.namespace === namespace ? other.name : `${other.name} of ${other.namespace}`);
      return other ? { ...state, message: `Left to the exam ${which}, which holds this environment` } : state;
    });
  status.studentCount = status.students.length;
  status.ready = status.students.filter((s) => s.state === "Ready").length;
  status.collected = status.students.filter((s) => s.state === "Collected").length;
  if (previous.phase !== phase)
    ctx.events.normal(examRef(exam), `Exam${phase}`, phaseMessage(phase, exam, status));
  if (!deleting)
    await writeStatus(
      ctx.rest,
      resources.Exam.path(namespace, name, "status"),
      exam.status,
      status,
      exam.metadata.resourceVersion,
    );
  return againAfterMs === undefined ? {} : { againAfterMs };
}

const examRef = (exam: Exam): EventTarget => ({
  apiVersion: API_VERSION,
  kind: "Exam",
  metadata: exam.metadata,
});

function phaseMessage(phase: ExamPhase, exam: Exam, status: ExamStatus): string {
  const n = status.studentCount ?? 0;
  if (phase === "Scheduled") return `Scheduled for ${exam.spec.start} to ${exam.spec.end}`;
  if (phase === "Running") return `Started for ${n} students: the network is closed until ${exam.spec.end}`;
  if (phase === "Collecting") return `Collecting the hand-ins of ${exam.spec.assignment ?? "?"}`;
  return `Over: ${status.collected ?? 0} of ${n} collected; environments restored`;
}

/** One student's exam environment (their Userland of the Template). */
interface Student {
  user: string;
  userland: Userland;
}

/** The class's students, by user: the Template's Userlands of the class, teachers left out. */
async function studentsOf(ctx: OperatorContext, exam: Exam): Promise<Map<string, Student>> {
  const namespace = exam.metadata.namespace ?? "";
  const template = exam.spec.templateName;
  const students = new Map<string, Student>();
  for (const u of ctx.caches.userlands.byIndex(Index.byTemplate, namespacedKey(namespace, template))) {
    if (u.metadata.deletionTimestamp) continue;
    if (!coversWholeTemplate(exam.spec) && label(u, LABELS.class) !== exam.spec.class) continue;
    if (await ctx.teachers.isTeacher(namespace, template, u.spec.user)) continue;
    if (!students.has(u.spec.user)) students.set(u.spec.user, { user: u.spec.user, userland: u });
  }
  return students;
}

function submissionsOf(ctx: OperatorContext, exam: Exam, students: Map<string, Student>) {
  const out = new Map<string, Submission>();
  const assignment = exam.spec.assignment;
  if (assignment === undefined) return out;
  const namespace = exam.metadata.namespace ?? "";
  const a = ctx.caches.assignments.get(assignment, namespace);
  if (!a) return out;
  for (const user of students.keys()) {
    const s = ctx.caches.submissions.get(submissionNameFor(assignment, user), namespace);
    if (s && submissionIsOf(s, a)) out.set(user, s);
  }
  return out;
}

type HandIn = "none" | "pending" | "collected" | "failed";

function handInState(s: Submission | undefined): HandIn {
  // No Submission: the Assignment has none for this student (none to collect, or no Assignment).
  if (!s) return "none";
  if (s.status?.receipt) return "collected";
  const handedIn = findCondition(s.status?.conditions, SubmissionConditions.HandedIn);
  if (handedIn?.status === "False" && FINAL_FAILURES.has(handedIn.reason)) return "failed";
  return "pending";
}

function studentState(phase: ExamPhase, s: Student, exam: Exam, handIn: HandIn): ExamStudent {
  const base = { user: s.user, userland: s.userland.metadata.name ?? "" };
  const env = s.userland.status?.phase;
  if (phase === "Scheduled") return { ...base, state: "Waiting" };
  if (phase === "Running")
    return { ...base, state: env === "Ready" ? "Ready" : env === "Stopped" ? "Stopped" : "Starting" };
  if (exam.spec.assignment === undefined) return { ...base, state: "Done" };
  if (handIn === "collected") return { ...base, state: "Collected" };
  if (handIn === "failed" || phase === "Over")
    return {
      ...base,
      state: "NotCollected",
      message:
        handIn === "none"
          ? `No Submission of ${exam.spec.assignment} for this student`
          : `Not collected: see the Submission ${submissionNameFor(exam.spec.assignment, s.user)}`,
    };
  return { ...base, state: "HandInRequested" };
}

/** The exam's NetworkPolicy, made or repaired; the NetworkClosed condition says how it went. */
async function closeNetwork(ctx: OperatorContext, options: ExamOptions, exam: Exam): Promise<ConditionInput> {
  const type = ExamConditions.NetworkClosed;
  if (!options.proxyPods)
    return {
      type,
      status: "False",
      reason: "ProxyPodsUnset",
      message:
        "The operator has no OPERATOR_PROXY_PODS (the proxy's pods, the only ones let in): the exam does not start without its network closed",
    };
  const namespace = exam.metadata.namespace ?? "";
  const desired = examNetworkPolicy(exam, options.proxyPods);
  const path = resources.NetworkPolicy.path(namespace, desired.metadata?.name);
  let current: ExamNetworkPolicy | undefined;
  try {
    current = await ctx.rest.get<ExamNetworkPolicy>(path);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  if (!current) {
    try {
      await ctx.rest.create(resources.NetworkPolicy.path(namespace), desired);
      ctx.log.info(
        { namespace, exam: exam.metadata.name, policy: desired.metadata?.name },
        "exam network closed",
      );
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  } else if (stableJson(current.spec) !== stableJson(desired.spec)) {
    await ctx.rest.replace(path, { ...current, spec: desired.spec });
  }
  return {
    type,
    status: "True",
    reason: "PolicyInPlace",
    message: `NetworkPolicy ${desired.metadata?.name}: in only from the proxy, out only to cluster DNS`,
  };
}

/**
 * The other exam a Userland is marked for (exam or hold label), if that exam exists and is not
 * over: two exams at once over the same environments leave them to the first; a mark naming no
 * such exam (left by hand) is taken over. An exam label names an exam of the Userland's own
 * namespace; a hold names its exam in the hold annotation, checked against the label's value.
 */
function otherExam(ctx: Pick<OperatorContext, "caches">, u: Userland, exam: Exam): ExamRef | undefined {
  const live = (ref: ExamRef) => {
    const found = ctx.caches.exams.get(ref.name, ref.namespace);
    return found && found.status?.phase !== "Over" ? ref : undefined;
  };
  const examMark = label(u, ExamMarks.examLabel);
  if (examMark !== undefined && !isExamEnvOf(u, exam)) {
    const other = live({ namespace: u.metadata.namespace ?? "", name: examMark });
    if (other) return other;
  }
  const hold = label(u, ExamMarks.holdLabel);
  if (hold !== undefined && !isHeldBy(u, exam)) {
    const notice = parseExamNotice(u.metadata.annotations?.[ExamMarks.holdAnnotation]);
    const namespace = notice?.namespace;
    if (notice && namespace !== undefined && examHoldValue(namespace, notice.exam) === hold) {
      const other = live({ namespace, name: notice.exam });
      if (other) return other;
    }
  }
  return undefined;
}

/** A student's Userlands in every namespace the release serves that are not their exam environment. */
function othersOf(ctx: OperatorContext, students: Map<string, Student>): Userland[] {
  return [...students.values()].flatMap(({ user, userland: env }) =>
    ctx.caches.userlands
      .byIndex(Index.byUser, user)
      .filter(
        (u) => !u.metadata.deletionTimestamp && u.spec.user === user && userlandKey(u) !== userlandKey(env),
      ),
  );
}

/**
 * Records what the marks are about to change, before changing it: an exam environment met stopped
 * (it is stopped again at the end), another Userland met running (started again at the end). Only
 * at first touch (no mark yet): one a student starts or stops during the exam is not theirs to
 * keep that way. Written with the cached resourceVersion, so a stale cache cannot drop a record.
 */
async function recordChanges(
  ctx: OperatorContext,
  exam: Exam,
  students: Map<string, Student>,
  status: ExamStatus,
): Promise<Exam> {
  const name = exam.metadata.name ?? "";
  const enabled = new Set(status.changed?.enabled ?? []);
  const stopped = new Set(status.changed?.stopped ?? []);
  for (const { userland: u } of students.values())
    if (!isExamEnvOf(u, exam) && u.spec.enabled === false && !otherExam(ctx, u, exam))
      enabled.add(u.metadata.name ?? "");
  for (const u of othersOf(ctx, students))
    if (!isHeldBy(u, exam) && u.spec.enabled !== false && !otherExam(ctx, u, exam))
      stopped.add(userlandKey(u));
  const changed = { enabled: [...enabled].sort(), stopped: [...stopped].sort() };
  status.changed = changed;
  if (stableJson(exam.status?.changed ?? { enabled: [], stopped: [] }) === stableJson(changed)) return exam;
  return ctx.rest.patch<Exam>(resources.Exam.path(exam.metadata.namespace ?? "", name, "status"), {
    metadata: { resourceVersion: exam.metadata.resourceVersion },
    status: { changed },
  });
}

function notice(exam: Exam): ExamNotice {
  return {
    exam: exam.metadata.name ?? "",
    namespace: exam.metadata.namespace ?? "",
    ...(exam.spec.title ? { title: exam.spec.title } : {}),
    ...(coversWholeTemplate(exam.spec) ? {} : { class: exam.spec.class }),
    start: exam.spec.start,
    end: exam.spec.end,
    proctors: { users: exam.spec.proctors?.users ?? [], groups: exam.spec.proctors?.groups ?? [] },
  };
}

/** The upcoming exam a Userland's notice names (ExamMarks.upcomingAnnotation), if readable. */
function upcomingOn(u: Userland): ExamRef | undefined {
  const n = parseExamNotice(u.metadata.annotations?.[ExamMarks.upcomingAnnotation]);
  return n ? { namespace: n.namespace ?? u.metadata.namespace ?? "", name: n.exam } : undefined;
}

/**
 * Another scheduled exam that starts sooner (or at the same time, first by name) and already
 * announces itself on `u`: the notice names one exam, the soonest; this one follows once it started.
 */
function soonerAnnounced(ctx: OperatorContext, u: Userland, exam: Exam): boolean {
  const ref = upcomingOn(u);
  if (!ref || (ref.namespace === exam.metadata.namespace && ref.name === exam.metadata.name)) return false;
  const other = ctx.caches.exams.get(ref.name, ref.namespace);
  if (!other || other.metadata.deletionTimestamp || (other.status?.phase ?? "Scheduled") !== "Scheduled")
    return false;
  const [a, b] = [timeMs(other.spec.start), timeMs(exam.spec.start)];
  return a < b || (a === b && (other.metadata.name ?? "") < (exam.metadata.name ?? ""));
}

/**
 * The home page's notice before the start: on each student's exam environment while `show`,
 * taken off every Userland of the Template that carries this exam's otherwise (started, moved
 * later, deleted, a student who left the class).
 */
async function announce(
  ctx: OperatorContext,
  exam: Exam,
  students: Map<string, Student>,
  show: boolean,
): Promise<void> {
  const namespace = exam.metadata.namespace ?? "";
  const info = JSON.stringify(notice(exam));
  const limit = pLimit(USERLAND_WRITES_IN_FLIGHT);
  const writes: Promise<void>[] = [];
  const shown = new Set<string>();
  if (show)
    for (const { userland: u } of students.values()) {
      if (soonerAnnounced(ctx, u, exam)) continue;
      shown.add(userlandKey(u));
      writes.push(
        limit(() => mark(ctx, u, { labels: {}, annotations: { [ExamMarks.upcomingAnnotation]: info } })),
      );
    }
  const template = namespacedKey(namespace, exam.spec.templateName);
  for (const u of ctx.caches.userlands.byIndex(Index.byTemplate, template)) {
    const ref = upcomingOn(u);
    if (ref?.namespace === namespace && ref.name === exam.metadata.name && !shown.has(userlandKey(u)))
      writes.push(
        limit(() => mark(ctx, u, { labels: {}, annotations: { [ExamMarks.upcomingAnnotation]: null } })),
      );
  }
  await Promise.all(writes);
}

/** Patches a Userland when `want` (labels, annotations, enabled) differs from what it has. */
async function mark(
  ctx: OperatorContext,
  u: Userland,
  want: {
    labels: Record<string, string | null>;
    annotations: Record<string, string | null>;
    enabled?: boolean;
  },
): Promise<void> {
  const has = (map: Record<string, string> | undefined, k: string, v: string | null) =>
    v === null ? map?.[k] === undefined : map?.[k] === v;
  const same =
    Object.entries(want.labels).every(([k, v]) => has(u.metadata.labels, k, v)) &&
    Object.entries(want.annotations).every(([k, v]) => has(u.metadata.annotations, k, v)) &&
    (want.enabled === undefined || (u.spec.enabled !== false) === want.enabled);
  if (same) return;
  try {
    await ctx.rest.patch(resources.Userland.path(u.metadata.namespace ?? "", u.metadata.name), {
      metadata: { labels: want.labels, annotations: want.annotations },
      ...(want.enabled === undefined ? {} : { spec: { enabled: want.enabled } }),
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Running: exam environments marked and started; the students' others held (stopped). */
async function applyMarks(ctx: OperatorContext, exam: Exam, students: Map<string, Student>): Promise<void> {
  const name = exam.metadata.name ?? "";
  const namespace = exam.metadata.namespace ?? "";
  const hold = holdValueOf(exam);
  const info = JSON.stringify(notice(exam));
  const limit = pLimit(USERLAND_WRITES_IN_FLIGHT);
  const writes: Promise<void>[] = [];
  for (const { userland: u } of students.values()) {
    if (otherExam(ctx, u, exam)) continue;
    writes.push(
      limit(async () => {
        await mark(ctx, u, {
          labels: { [ExamMarks.examLabel]: name },
          annotations: { [ExamMarks.examAnnotation]: info },
          enabled: true,
        });
      }),
    );
  }
  const others = othersOf(ctx, students);
  for (const u of others) {
    if (otherExam(ctx, u, exam)) continue;
    writes.push(
      limit(async () => {
        const wasRunning = u.spec.enabled !== false && !isHeldBy(u, exam);
        await mark(ctx, u, {
          labels: { [ExamMarks.holdLabel]: hold },
          annotations: {
            [ExamMarks.holdAnnotation]: info,
            [UserlandAnnotations.stoppedReason]: ExamMarks.stoppedReason,
          },
          enabled: false,
        });
        if (wasRunning)
          ctx.events.normal(
            userlandRef(u),
            "ExamHold",
            `Stopped for the exam ${name} of ${namespace} until ${exam.spec.end}; started again after it`,
          );
      }),
    );
  }
  // Marked earlier but no longer in the class (a label changed): let go now, as at the end.
  const current = new Set([...students.values()].map((s) => userlandKey(s.userland)));
  const heldNow = new Set(others.map(userlandKey));
  for (const u of markedBy(ctx, exam))
    if (isExamEnvOf(u, exam) ? !current.has(userlandKey(u)) : !heldNow.has(userlandKey(u)))
      writes.push(limit(() => release(ctx, u, exam)));
  await Promise.all(writes);
}

/** The Userlands this exam marked: its environments (its namespace) and its holds (any namespace). */
function markedBy(ctx: OperatorContext, exam: Exam): Userland[] {
  const key = namespacedKey(exam.metadata.namespace, exam.metadata.name ?? "");
  return [
    ...ctx.caches.userlands.byIndex(Index.byExamMark, examMarkKey(key)),
    ...ctx.caches.userlands.byIndex(Index.byExamMark, holdMarkKey(holdValueOf(exam))),
  ].filter((u) => isExamEnvOf(u, exam) || isHeldBy(u, exam));
}

/** One Userland back to what it was before the exam touched it. */
async function release(ctx: OperatorContext, u: Userland, exam: Exam): Promise<void> {
  const name = u.metadata.name ?? "";
  const changed = exam.status?.changed ?? {};
  if (isExamEnvOf(u, exam)) {
    await mark(ctx, u, {
      labels: { [ExamMarks.examLabel]: null },
      annotations: { [ExamMarks.examAnnotation]: null },
      ...(changed.enabled?.includes(name) ? { enabled: false } : {}),
    });
  } else if (isHeldBy(u, exam)) {
    const reason = u.metadata.annotations?.[UserlandAnnotations.stoppedReason];
    await mark(ctx, u, {
      labels: { [ExamMarks.holdLabel]: null },
      annotations: {
        [ExamMarks.holdAnnotation]: null,
        ...(reason === ExamMarks.stoppedReason ? { [UserlandAnnotations.stoppedReason]: null } : {}),
      },
      ...(changed.stopped?.includes(userlandKey(u)) ? { enabled: true } : {}),
    });
  }
}

/**
 * Over: every Userland the exam marked is released; the policy goes once no pod carries the exam
 * label (a pod still going would otherwise be open: the chart's policy does not select it).
 */
async function restore(
  ctx: OperatorContext,
  exam: Exam,
  status: ExamStatus,
  /** The policy may still be there (it is looked for only until the exam has been seen over). */
  policyMayExist: boolean,
): Promise<{ restored: boolean; podsLeft: boolean }> {
  const namespace = exam.metadata.namespace ?? "";
  const name = exam.metadata.name ?? "";
  const marked = markedBy(ctx, exam);
  const limit = pLimit(USERLAND_WRITES_IN_FLIGHT);
  await Promise.all(marked.map((u) => limit(() => release(ctx, u, { ...exam, status }))));
  const podsLeft = ctx.caches.pods
    .list(namespace)
    .some((p) => p.metadata?.labels?.[ExamMarks.examLabel] === name);
  if (marked.length > 0 || podsLeft) return { restored: false, podsLeft };
  if (!policyMayExist && status.policy === undefined) return { restored: true, podsLeft: false };
  delete status.policy;
  try {
    await ctx.rest.delete(resources.NetworkPolicy.path(namespace, examPolicyName(name)));
    ctx.log.info({ namespace, exam: name }, "exam network opened again");
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return { restored: true, podsLeft: false };
}
