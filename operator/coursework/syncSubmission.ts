/**
 * The Submission sync handler (docs/decisions/0011-coursework.md): one student's copy of one
 * Assignment, converged by copy pods that mount the student's home claim, one job at a time, in
 * this order: (a) each hand-in requested (a version: a snapshot into the collection and its
 * receipt), (b) the published release into `<home>/assignments/<name>/` (nbgitpuller's rule), (c)
 * feedback into `…/<name>/feedback/`, (d) once grades are released, the grade the student may see
 * as `…/feedback/grade.md` (written again when it changes). A running environment's claim may be ReadWriteOnce and attached to its
 * node: the copy goes to that node; a stopped one's claim is free.
 */
import { controllerReference } from "../ownership.ts";
import { childNames, collectionNames, collectionPaths, collectionUserFolder } from "../../api/naming.ts";
import { collectionFolderOf, submissionIsOf } from "../../api/assignmentIdentity.ts";
import {
  SubmissionConditions,
  type Assignment,
  type Receipt,
  type Submission,
  type SubmissionStatus,
  type Template,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { namespacedKey } from "../../lib/informer.ts";
import { Index } from "../caches.ts";
import { setCondition, timeMs, type ConditionInput } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { resources } from "../resources.ts";
import { copyPodName, countOf, type CopyJob, type CopyMount } from "./copyPods.ts";
import { deleteFinishedCopyPods, retryNote, runCopy } from "./copyRuns.ts";
import { frozenHome, releaseFrozenHome, SNAPSHOT_POLL_MS } from "./handInSnapshots.ts";
import type { CourseworkSyncResult } from "./syncAssignment.ts";
import { writeStatus } from "../statusWrite.ts";
import { deadlineFor } from "../../api/deadlines.ts";
import { countedReceipt, maxVersionsOf, pendingHandIn, versionsOf } from "../../api/handIns.ts";
import { kubeTime } from "../../api/times.ts";
import { gradeReport } from "../../api/studentGrade.ts";
import { createHash } from "node:crypto";
import { gradeSubmission, pendingGradePod } from "../grading/syncGrading.ts";

const HOME_MOUNT = "/home-claim";
const COLLECTION_MOUNT = "/collection";
/** At most this many kept paths go into status (the CRD's maxItems). */
const MAX_KEPT = 1000;
/** The released grade's file in the student's feedback folder. */
export const GRADE_FILE = "grade.md";
/** At most this many late-written paths go into a receipt (the CRD's maxItems). */
const MAX_WRITTEN_AFTER = 20;

/** The jobs run for one student's Submission. */
type StudentJob = Exclude<
  CopyJob,
  "publish" | "archive" | "classarchive" | "verify" | "autograder" | "solution"
>;

/** Where a copy into the student's claim can run now, or why it waits. */
type Placement = { nodeName?: string } | { wait: string };

export function placement(
  ctx: OperatorContext,
  userland: Userland,
  deployment: string,
  claim: string,
): Placement {
  const namespace = userland.metadata.namespace ?? "";
  if (!ctx.caches.pvcs.get(claim, namespace))
    return {
      wait: "The student's volume does not exist yet: it is made when their environment first starts",
    };
  const pods = ctx.caches.pods
    .byIndex(Index.byInstance, namespacedKey(namespace, deployment))
    .filter((p) => p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed");
  if (pods.length === 0) {
    // No pod: a stopped environment's claim may be mounted anywhere. A running one's pod is on its
    // way (not made yet, or not in this cache yet: the Archive's or Submission's event can come
    // first); a copy placed now could take the claim on another node than the environment's,
    // which then cannot mount it (ReadWriteOnce). Its pod's event syncs this again.
    const running = userland.spec.enabled !== false && userland.status?.phase !== "Failed";
    if (running) return { wait: "The student's environment is starting; the copy follows it to its node" };
    return {};
  }
  const nodes = new Set(pods.map((p) => p.spec?.nodeName));
  const [node] = nodes;
  // Being scheduled, or moving between nodes: where the claim will be is not known yet.
  if (nodes.size !== 1 || node === undefined)
    return { wait: "The student's environment is being placed on a node; the copy follows it there" };
  return { nodeName: node };
}

export async function syncSubmission(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<CourseworkSyncResult> {
  const submission = ctx.caches.submissions.get(name, namespace);
  if (!submission || submission.metadata.deletionTimestamp) return {};
  const assignment = ctx.caches.assignments.get(submission.spec.assignment, namespace);
  const template = assignment && ctx.caches.templates.get(assignment.spec.templateName, namespace);
  const home = template?.spec.coursework?.home;
  // The Assignment's Published condition says what is missing; nothing can be copied without it.
  // A Submission of an earlier Assignment of the same name waits for the garbage collector.
  if (
    !assignment ||
    !submissionIsOf(submission, assignment) ||
    collectionFolderOf(assignment) === undefined ||
    !template ||
    !home ||
    !template.spec.coursework?.collection ||
    !ctx.coursework.image
  )
    return {};
  const previous = submission.status ?? {};
  const status: SubmissionStatus = { ...previous, observedGeneration: submission.metadata.generation };
  let conditions = previous.conditions ?? [];
  const set = (c: ConditionInput) => (conditions = setCondition(conditions, c));

  const job = nextJob(submission, assignment, ctx.now());
  const uid = submission.metadata.uid ?? "";
  await deleteFinishedCopyPods(ctx, uid, [
    job && copyPodName(job, uid, generationOf(job, assignment, submission, ctx.now())),
    pendingGradePod(submission, assignment, template),
  ]);
  let againAfterMs: number | undefined;
  const pending = pendingHandIn(submission);
  if (pending && pending.version > maxVersionsOf(assignment))
    set({
      type: SubmissionConditions.HandedIn,
      status: "False",
      reason: "TooManyVersions",
      message: `Hand-in ${pending.version} asked for, but the assignment keeps at most ${maxVersionsOf(assignment)}: version ${pending.version - 1} counts`,
    });
  const userland = ctx.caches.userlands
    .byIndex(Index.byTemplate, namespacedKey(namespace, template.metadata.name))
    .find((u) => u.spec.user === submission.spec.user && !u.metadata.deletionTimestamp);
  if (job && !userland) {
    set({
      type: conditionOf(job),
      status: "False",
      reason: "NoEnvironment",
      message: `${submission.spec.user} has no Userland of Template "${template.metadata.name}": their work cannot be reached`,
    });
  } else if (job && userland) {
    const names = childNames(template.metadata.name ?? "", userland.metadata.name ?? "");
    const claim = names.pvc(home.volume);
    const where = placement(ctx, userland, names.deployment, claim);
    if ("wait" in where) {
      set({ type: conditionOf(job), status: "False", reason: "WaitingForVolume", message: where.wait });
    } else {
      const step = await copy(ctx, job, submission, assignment, template, claim, where.nodeName, status);
      set(step.condition);
      againAfterMs = step.retryInMs;
    }
  }
  // A teacher may pick another version at any time: the counted receipt follows.
  const counted = countedReceipt({ ...submission, status });
  if (counted) status.receipt = counted;
  // Grading reads the collection alone: it runs beside the copies into the student's volume.
  const graded = await gradeSubmission(ctx, submission, assignment, template, status);
  if (graded) set(graded);
  status.conditions = conditions;
  await writeStatus(ctx.rest, resources.Submission.path(namespace, name, "status"), previous, status);
  return againAfterMs === undefined ? {} : { againAfterMs };
}

/** The one job due now, by priority: the hand-in, then the published release, then feedback. */
export function nextJob(s: Submission, a: Assignment, now: Date): StudentJob | undefined {
  const status = s.status ?? {};
  const handIn = s.spec.handInRequestedAt !== undefined;
  const pending = pendingHandIn(s);
  if (pending && pending.version <= maxVersionsOf(a)) return "handin";
  const published = a.status?.publishedRelease;
  if (!handIn && published !== undefined && status.distributedRelease !== published) return "distribute";
  if ((a.spec.feedbackRelease ?? 0) > (status.feedbackRelease ?? 0)) return "feedback";
  const report = gradeReport(a, s, now);
  if (report !== undefined && sha256(report) !== status.gradeFile?.sha256) return "report";
  return undefined;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

const CONDITIONS: Record<StudentJob, string> = {
  handin: SubmissionConditions.HandedIn,
  distribute: SubmissionConditions.Distributed,
  feedback: SubmissionConditions.FeedbackReturned,
  report: SubmissionConditions.GradeReturned,
};
const conditionOf = (job: StudentJob): string => CONDITIONS[job];

/** Generation of a job: a new one (a new release, new feedback, a new hand-in) is a new pod. */
function generationOf(job: StudentJob, a: Assignment, s: Submission, now: Date): number | string {
  if (job === "distribute") return a.status?.publishedRelease ?? 0;
  if (job === "feedback") return a.spec.feedbackRelease ?? 0;
  // A grade file per text: a changed grade is a new pod.
  if (job === "report") return sha256(gradeReport(a, s, now) ?? "");
  // Each request its own pod: a refused one's pod never answers the next request of that version.
  const pending = pendingHandIn(s);
  return pending ? handInRequest(pending) : 1;
}

/** On a hand-in's copy pod that read a snapshot: when the snapshot was taken (the receipt's frozenAt). */
const FROZEN_AT_ANNOTATION = "userland.dev/frozen-at";

/** One hand-in request, as the names of its pod and snapshot know it. */
const handInRequest = (pending: { version: number; moment: string }): string =>
  `${pending.version}@${pending.moment}`;

async function copy(
  ctx: OperatorContext,
  job: StudentJob,
  s: Submission,
  a: Assignment,
  template: Template,
  homeClaim: string,
  nodeName: string | undefined,
  status: SubmissionStatus,
): Promise<{ condition: ConditionInput; retryInMs?: number }> {
  const assignmentName = a.metadata.name ?? "";
  const folder = collectionFolderOf(a) ?? assignmentName;
  const userFolder = collectionUserFolder(s.spec.user);
  const collection = collectionNames(template.metadata.name ?? "").claim;
  const studentFolder = `${HOME_MOUNT}/assignments/${assignmentName}`;
  const home = (readOnly: boolean): CopyMount => ({ claim: homeClaim, mountPath: HOME_MOUNT, readOnly });
  const limits = a.spec.limits ?? {};
  const pending = pendingHandIn(s) ?? { version: 1, moment: kubeTime(ctx.now()) };
  const report = gradeReport(a, s, ctx.now());
  const type = conditionOf(job);
  const podName = copyPodName(job, s.metadata.uid ?? "", generationOf(job, a, s, ctx.now()));
  // Where the storage can, the hand-in reads a snapshot taken at its moment, not the live volume.
  // Asked only before its pod exists: a sync on an older status (the pod done, its snapshot
  // released) must not take another snapshot; the pod itself records what it read.
  let frozen: { claim: string; frozenAt: string } | undefined;
  if (
    job === "handin" &&
    ctx.coursework.snapshotClass &&
    !ctx.caches.copyPods.get(podName, s.metadata.namespace ?? "")
  ) {
    const home = await frozenHome(ctx, s, handInRequest(pending), homeClaim);
    if (home.state === "waiting")
      return {
        condition: { type, status: "False", reason: "Snapshotting", message: home.message },
        retryInMs: SNAPSHOT_POLL_MS,
      };
    // Nothing lost: the live volume is read instead, the files written after the moment named.
    if (home.state === "failed")
      ctx.log.warn({ submission: s.metadata.name, err: home.message }, "hand-in snapshot failed");
    else frozen = home;
  }
  const plan: Record<typeof job, { args: string[]; mounts: CopyMount[] }> = {
    handin: {
      args: [
        "handin",
        studentFolder,
        `${COLLECTION_MOUNT}/${folder}/${userFolder}/${pending.version}`,
        // A restored snapshot's change times are the restore's on some drivers: nothing to name.
        ...(frozen ? [] : ["--moment", pending.moment]),
        "--max-bytes",
        String(limits.maxBytes ?? 104857600),
        "--max-files",
        String(limits.maxFiles ?? 1000),
      ],
      mounts: [
        frozen ? { claim: frozen.claim, mountPath: HOME_MOUNT, readOnly: true } : home(true),
        { claim: collection, mountPath: COLLECTION_MOUNT, subPath: "handins", readOnly: false },
      ],
    },
    distribute: {
      args: ["distribute", COLLECTION_MOUNT, studentFolder],
      mounts: [
        {
          claim: collection,
          mountPath: COLLECTION_MOUNT,
          subPath: collectionPaths.published(folder, a.status?.publishedRelease ?? 0),
          readOnly: true,
        },
        home(false),
      ],
    },
    report: {
      args: ["write-file", `${studentFolder}/feedback/${GRADE_FILE}`, "--text", report ?? ""],
      mounts: [home(false)],
    },
    feedback: {
      args: ["distribute", `${COLLECTION_MOUNT}/${folder}/${userFolder}`, `${studentFolder}/feedback`],
      mounts: [
        { claim: collection, mountPath: COLLECTION_MOUNT, subPath: "feedback", readOnly: true },
        home(false),
      ],
    },
  };
  const run = await runCopy(
    ctx,
    {
      name: podName,
      namespace: s.metadata.namespace ?? "",
      job,
      owner: controllerReference("Submission", s),
      image: ctx.coursework.image,
      template,
      args: plan[job].args,
      mounts: plan[job].mounts,
      // A restored claim is the copy pod's alone: wherever the scheduler puts it.
      nodeName: frozen ? undefined : nodeName,
      ...(frozen ? { annotations: { [FROZEN_AT_ANNOTATION]: frozen.frozenAt } } : {}),
    },
    status.failedCopies,
    // What the student's folder holds decides a hand-in's refusal: no retry changes the moment's files.
    job === "handin" ? (kind) => kind === "limit" || kind === "refused" : undefined,
  );
  if (run.state === "running")
    return { condition: { type, status: "False", reason: "Copying", message: `The ${job} copy is running` } };
  if (!run.ok) {
    // No feedback folder for this student: nothing to return for this feedback release.
    if (job === "feedback" && run.kind === "refused") {
      delete status.failedCopies;
      status.feedbackRelease = a.spec.feedbackRelease ?? 0;
      status.feedbackFiles = 0;
      return {
        condition: { type, status: "True", reason: "NoFeedback", message: run.message },
      };
    }
    const reason =
      run.kind === "limit" ? "OverLimit" : run.kind === "refused" ? "NothingToCopy" : "CopyFailed";
    // What the student's folder holds decided it: refused for good, never taken later by a retry
    // (the files would then be newer than the moment); they may hand in again (issue 41 item 5).
    if (run.final && reason !== "CopyFailed") {
      if (ctx.coursework.snapshotClass) await releaseFrozenHome(ctx, s, handInRequest(pending));
      delete status.failedCopies;
      status.refusedHandIn = {
        requestedAt: pending.moment,
        reason,
        message: run.message,
        at: kubeTime(ctx.now()),
      };
      return {
        condition: {
          type,
          status: "False",
          reason,
          message: `The hand-in of ${pending.moment} was refused: ${run.message}. Nothing was collected; hand in again once it is fixed`,
        },
      };
    }
    status.failedCopies = run.failedCopies;
    return {
      condition: { type, status: "False", reason, message: `${run.message}${retryNote(run.failedCopies)}` },
      retryInMs: run.retryInMs === 0 ? undefined : run.retryInMs,
    };
  }
  delete status.failedCopies;
  const result = run.result;
  if (job === "handin") {
    const receipt = handInReceipt(s, a, pending, run, run.pod.metadata?.annotations?.[FROZEN_AT_ANNOTATION]);
    if (ctx.coursework.snapshotClass) await releaseFrozenHome(ctx, s, handInRequest(pending));
    // The version that counted until now keeps the score it had, for the student's and the autograder's history.
    const versions = versionsOf(s).map((v) =>
      v.sha256 === status.grade?.receiptSha256 && v.score === undefined
        ? { ...v, score: status.grade.score }
        : v,
    );
    status.versions = [...versions, receipt];
    const skipped = receipt.skipped
      ? `; ${receipt.skipped} entries left out (links, FIFOs, devices or files changed while read)`
      : "";
    const after = receipt.writtenAfterCount
      ? `; ${receipt.writtenAfterCount} files were written after the hand-in's moment and copied as they were then`
      : "";
    return {
      condition: {
        type,
        status: "True",
        reason: "Collected",
        message: `Version ${receipt.version}: ${receipt.files} files, ${receipt.bytes} bytes collected${skipped}${after}`,
      },
    };
  }
  if (job === "distribute") {
    const kept = Array.isArray(result.kept) ? (result.kept as { path?: unknown }[]) : [];
    status.distributedRevision = String(result.revision);
    status.distributedRelease = a.status?.publishedRelease;
    status.distributedAt = run.finishedAt;
    status.keptOwnVersion = kept
      .map((k) => k.path)
      .filter((p): p is string => typeof p === "string")
      .slice(0, MAX_KEPT);
    return {
      condition: {
        type,
        status: "True",
        reason: "Distributed",
        message: `Release ${status.distributedRelease} is in assignments/${assignmentName}/${kept.length ? `; ${countOf(result, "kept")} files kept as the student changed them` : ""}`,
      },
    };
  }
  if (job === "report") {
    status.gradeFile = { sha256: String(result.sha256), at: run.finishedAt };
    return {
      condition: {
        type,
        status: "True",
        reason: "Returned",
        message: `The released grade is in assignments/${assignmentName}/feedback/${GRADE_FILE}`,
      },
    };
  }
  status.feedbackRelease = a.spec.feedbackRelease ?? 0;
  status.feedbackFiles = typeof result.files === "number" ? result.files : 0;
  return {
    condition: {
      type,
      status: "True",
      reason: "Returned",
      message: `${status.feedbackFiles} files in assignments/${assignmentName}/feedback/`,
    },
  };
}

/** A finished hand-in copy's receipt: its moment is the one the copy was started for (copy.ts echoes it). */
function handInReceipt(
  s: Submission,
  a: Assignment,
  pending: { version: number; moment: string },
  run: { result: Record<string, unknown>; finishedAt: string },
  frozenAt: string | undefined,
): Receipt {
  const { result } = run;
  const requestedAt = typeof result.moment === "string" ? result.moment : pending.moment;
  const { deadline, extended } = deadlineFor(a, s.spec.user);
  const writtenAfter = Array.isArray(result.writtenAfter)
    ? result.writtenAfter.filter((p): p is string => typeof p === "string")
    : [];
  return {
    version: pending.version,
    requestedAt,
    ...(frozenAt !== undefined ? { frozenAt } : {}),
    ...(typeof result.startedAt === "string" ? { copyStartedAt: result.startedAt } : {}),
    time: run.finishedAt,
    files: countOf(result, "files"),
    bytes: typeof result.bytes === "number" ? result.bytes : 0,
    sha256: String(result.sha256),
    late: deadline !== undefined && timeMs(requestedAt) > timeMs(deadline),
    ...(deadline !== undefined ? { deadline } : {}),
    ...(extended ? { extended } : {}),
    by: s.spec.handInRequestedBy ?? "student",
    skipped: countOf(result, "skipped"),
    ...(writtenAfter.length > 0
      ? {
          writtenAfter: writtenAfter.slice(0, MAX_WRITTEN_AFTER),
          writtenAfterCount: countOf(result, "writtenAfter"),
        }
      : {}),
  };
}
