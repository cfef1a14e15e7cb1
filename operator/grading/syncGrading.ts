/**
 * Grading's two steps in the coursework syncs (docs/decisions/0015-grading.md), level-triggered:
 * the Assignment keeps a snapshot of its autograder per spec.autograder.release in the collection
 * (a copy pod, as a release's snapshot is taken), and each Submission with a receipt has one grading
 * run per key — the receipt, the snapshot's revision, the image and the timeout — so a new hand-in,
 * a changed autograder or another image grades again, and nothing else does. A run that gives no
 * result (timed out, results.json missing or invalid) is recorded as the last attempt and never
 * replaces the last good grade.
 */
import { collectionPaths } from "../../api/naming.ts";
import { collectionFolderOf } from "../../api/assignmentIdentity.ts";
import {
  AssignmentConditions,
  SubmissionConditions,
  TEST_VISIBILITIES,
  type Assignment,
  type AssignmentStatus,
  type Grade,
  type GradedTest,
  type Submission,
  type SubmissionStatus,
  type Template,
} from "../../api/v1alpha1/index.ts";
import type { ConditionInput } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { controllerReference } from "../ownership.ts";
import { copyPodName } from "../coursework/copyPods.ts";
import { retryNote, runSnapshot } from "../coursework/copyRuns.ts";
import { deadlineFor, latePenaltyPercent } from "../../api/deadlines.ts";
import { runGrading } from "./gradeRuns.ts";
import { checkAutograder } from "./autograderCheck.ts";
import { finiteNumber, gradeKey, gradePodName, type GradeInputs } from "./gradePods.ts";

const DEFAULT_TIMEOUT_SECONDS = 300;

/** The image an Assignment's autograder runs in: its own, else the Template's first container's. */
export function autograderImage(a: Assignment, template: Template): string {
  return a.spec.autograder?.image ?? template.spec.template.spec.containers[0]?.image ?? "";
}

/** What keeps the autograder from being used, as an AutograderReady=False condition. */
export function autograderProblem(
  ctx: OperatorContext,
  a: Assignment,
  template: Template,
): { reason: string; message: string } | undefined {
  const spec = a.spec.autograder;
  if (!spec) return undefined;
  const t = template.metadata.name ?? "";
  const folder = template.spec.coursework?.folders?.find((f) => f.name === spec.folder);
  if (!folder)
    return {
      reason: "AutograderFolderNotFound",
      message: `Template "${t}" has no course folder "${spec.folder}" (spec.coursework.folders)`,
    };
  if (!folder.teachersOnly)
    return {
      reason: "AutograderNotHidden",
      message: `course folder "${spec.folder}" is mounted in students' environments: an autograder's hidden tests must be in a folder with teachersOnly: true`,
    };
  const image = autograderImage(a, template);
  const namespace = a.metadata.namespace ?? "";
  const known = ctx.caches.templates
    .list(namespace)
    .some((other) => other.spec.template.spec.containers.some((c) => c.image === image));
  if (!known && !ctx.coursework.grading.images.includes(image))
    return {
      reason: "AutograderImageNotAllowed",
      message: `image ${JSON.stringify(image)} is neither a Template's image in this namespace nor listed by the admin (OPERATOR_AUTOGRADER_IMAGES)`,
    };
  return undefined;
}

/** The Assignment's side: the snapshot of spec.autograder.release, as AutograderReady. */
export async function snapshotAutograder(
  ctx: OperatorContext,
  a: Assignment,
  template: Template,
  status: AssignmentStatus,
): Promise<{ condition?: ConditionInput; retryInMs?: number }> {
  const spec = a.spec.autograder;
  if (!spec) {
    delete status.autograder;
    return {};
  }
  const type = AssignmentConditions.AutograderReady;
  const problem = autograderProblem(ctx, a, template);
  if (problem) return { condition: { type, status: "False", ...problem } };
  const release = spec.release ?? 1;
  const ready = async (revision: string): Promise<{ condition: ConditionInput; retryInMs?: number }> => {
    const checked = await checkAutograder(ctx, a, template, status, checkInputs(a, template, revision));
    if (checked.condition) return { condition: checked.condition, retryInMs: checked.retryInMs };
    return {
      condition: {
        type,
        status: "True",
        reason: spec.solution ? "Checked" : "SnapshotTaken",
        message: `Autograder release ${release} (sha256 ${revision}) grades every counted hand-in${spec.solution ? `: it gave the reference solution full marks (${status.autograder?.check?.solution?.message ?? ""}) and the starter files less (${status.autograder?.check?.starter?.message ?? ""})` : ""}`,
      },
    };
  };
  if (status.autograder?.release === release) return ready(status.autograder.revision);
  const run = await runSnapshot(
    ctx,
    {
      name: autograderPodName(a),
      job: "autograder",
      owner: controllerReference("Assignment", a),
      template,
      folder: spec.folder,
      path: spec.path,
      collectionFolder: "autograders",
      to: collectionPaths
        .autograder(collectionFolderOf(a, status) ?? "", release)
        .slice("autograders/".length),
    },
    status.failedCopies,
  );
  if (run.state === "running")
    return {
      condition: {
        type,
        status: "False",
        reason: "TakingSnapshot",
        message: `Taking the snapshot of ${spec.folder}/${spec.path} for autograder release ${release}`,
      },
    };
  if (!run.ok) {
    status.failedCopies = run.failedCopies;
    return {
      condition: {
        type,
        status: "False",
        reason: "SnapshotFailed",
        message: `Autograder release ${release} of ${spec.folder}/${spec.path}: ${run.message}${retryNote(run.failedCopies)}`,
      },
      retryInMs: run.retryInMs === 0 ? undefined : run.retryInMs,
    };
  }
  delete status.failedCopies;
  const revision = String(run.result.sha256);
  status.autograder = { release, revision, at: run.finishedAt };
  return ready(revision);
}

/** A check run's inputs for an input's hash: as a student's run with this autograder revision. */
export const checkInputs =
  (a: Assignment, template: Template, revision: string) =>
  (receiptSha256: string): GradeInputs => ({
    receiptSha256,
    autograderRevision: revision,
    image: autograderImage(a, template),
    timeoutSeconds: a.spec.autograder?.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  });

/** The autograder snapshot's copy pod of the current release (kept until its result is in status). */
export function autograderPodName(a: Assignment): string {
  return copyPodName("autograder", a.metadata.uid ?? "", a.spec.autograder?.release ?? 1);
}

/** The run a Submission needs now, or undefined (no autograder, no receipt, no snapshot yet). */
export function gradeInputs(s: Submission, a: Assignment, template: Template): GradeInputs | undefined {
  const receipt = s.status?.receipt;
  const snapshot = a.status?.autograder;
  if (!a.spec.autograder || !receipt || !snapshot || snapshot.release !== (a.spec.autograder.release ?? 1))
    return undefined;
  // A checked autograder only (autograderCheck.ts): a broken one never grades a student.
  if (a.spec.autograder.solution && snapshot.checked !== true) return undefined;
  return {
    receiptSha256: receipt.sha256,
    autograderRevision: snapshot.revision,
    image: autograderImage(a, template),
    timeoutSeconds: a.spec.autograder.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  };
}

/** The grading pod a Submission's cached status still waits for (the others may go). */
export function pendingGradePod(s: Submission, a: Assignment, template: Template): string | undefined {
  const inputs = gradeInputs(s, a, template);
  if (!inputs) return undefined;
  const key = gradeKey(inputs);
  return s.status?.gradeAttempt?.key === key ? undefined : gradePodName(s.metadata.uid ?? "", key);
}

/** Gradescope's submission_metadata.json for the counted hand-in. */
function submissionMetadata(s: Submission, a: Assignment, status: SubmissionStatus): Record<string, unknown> {
  // The student's own deadline: autograders that treat late work differently see theirs.
  const { deadline, lateUntil } = deadlineFor(a, s.spec.user);
  const counted = status.receipt;
  return {
    id: s.metadata.uid,
    created_at: counted?.requestedAt,
    assignment: {
      id: a.metadata.name,
      title: a.spec.title,
      due_date: deadline ?? null,
      late_due_date: lateUntil ?? null,
      release_date: a.status?.publishedAt ?? null,
      total_points: null,
    },
    submission_method: "upload",
    users: [{ id: s.spec.user, name: s.spec.user, email: null }],
    // Gradescope's shape: the earlier versions, with the score each had while it counted.
    previous_submissions: (status.versions ?? [])
      .filter((v) => v.version < (counted?.version ?? 0))
      .map((v) => ({ submission_time: v.requestedAt, score: v.score ?? null, results: {} })),
  };
}

function testsOf(summary: Record<string, unknown>): GradedTest[] {
  const list = Array.isArray(summary.tests) ? (summary.tests as Record<string, unknown>[]) : [];
  return list.slice(0, 100).map((t) => ({
    name: typeof t.name === "string" ? t.name.slice(0, 200) : "",
    ...(finiteNumber(t.score) !== undefined ? { score: finiteNumber(t.score) } : {}),
    ...(finiteNumber(t.maxScore) !== undefined ? { maxScore: finiteNumber(t.maxScore) } : {}),
    ...(t.status === "passed" || t.status === "failed" ? { status: t.status } : {}),
    ...((TEST_VISIBILITIES as readonly unknown[]).includes(t.visibility)
      ? { visibility: t.visibility as GradedTest["visibility"] }
      : {}),
  }));
}

/**
 * The Submission's side: runs (or reads) the grading pod of the current inputs and records its
 * outcome. Returns the Graded condition to set, if any.
 */
export async function gradeSubmission(
  ctx: OperatorContext,
  s: Submission,
  a: Assignment,
  template: Template,
  status: SubmissionStatus,
): Promise<ConditionInput | undefined> {
  const type = SubmissionConditions.Graded;
  if (!a.spec.autograder || !status.receipt) return undefined;
  const inputs = gradeInputs({ ...s, status }, a, template);
  if (!inputs)
    return {
      type,
      status: "False",
      reason: "WaitingForAutograder",
      message:
        "The autograder is not ready yet: its snapshot, or its check against the reference solution (the Assignment's AutograderReady says why)",
    };
  const key = gradeKey(inputs);
  if (status.gradeAttempt?.key === key) return gradedCondition(status);
  const folder = collectionFolderOf(a) ?? "";
  const outcome = await runGrading(ctx, {
    name: gradePodName(s.metadata.uid ?? "", key),
    namespace: s.metadata.namespace ?? "",
    owner: controllerReference("Submission", s),
    template,
    inputs,
    handIn: collectionPaths.handIn(folder, s.spec.user, status.receipt.version),
    autograder: collectionPaths.autograder(folder, a.status?.autograder?.release ?? 1),
    out: collectionPaths.grade(folder, s.spec.user, key),
    metadata: submissionMetadata(s, a, status),
  });
  if (outcome === "running")
    return { type, status: "False", reason: "Grading", message: "The autograder is running" };
  const recorded = { key, ...inputs, time: outcome.finishedAt };
  const { timeoutSeconds: _timeout, ...attemptInputs } = recorded;
  if (!outcome.ok) {
    status.gradeAttempt = { ...attemptInputs, ok: false, reason: outcome.reason, message: outcome.message };
    return gradedCondition(status);
  }
  const summary = outcome.summary;
  const grade: Grade = {
    ...attemptInputs,
    score: finiteNumber(summary.score) ?? 0,
    ...(finiteNumber(summary.maxScore) !== undefined ? { maxScore: finiteNumber(summary.maxScore) } : {}),
    ...(finiteNumber(summary.executionSeconds) !== undefined
      ? { executionSeconds: finiteNumber(summary.executionSeconds) }
      : {}),
    tests: testsOf(summary),
    testCount: finiteNumber(summary.testCount) ?? 0,
    ...latePenalty(a, { ...s, status }),
    results: collectionPaths.grade(folder, s.spec.user, key),
  };
  // The same hand-in graded again by another autograder revision: the teacher sees before and after.
  const before = status.grade;
  if (
    before &&
    before.receiptSha256 === grade.receiptSha256 &&
    before.autograderRevision !== grade.autograderRevision
  )
    grade.previous = { score: before.score, autograderRevision: before.autograderRevision };
  status.grade = grade;
  status.gradeAttempt = { ...attemptInputs, ok: true, reason: "Graded", message: scoreText(grade) };
  return gradedCondition(status);
}

/** spec.latePenalty's share of a late hand-in, taken from the time it was handed in. */
function latePenalty(a: Assignment, s: Submission): { latePenaltyPercent?: number } {
  const at = s.status?.receipt?.requestedAt;
  const percent = at === undefined ? 0 : latePenaltyPercent(a, s.spec.user, at);
  return percent > 0 ? { latePenaltyPercent: percent } : {};
}

const scoreText = (g: Grade): string =>
  `${g.score}${g.maxScore !== undefined ? ` of ${g.maxScore}` : ""} points (${g.testCount ?? 0} tests)`;

/** The Graded condition from the last attempt: a failed one keeps the last good grade's score in view. */
function gradedCondition(status: SubmissionStatus): ConditionInput | undefined {
  const attempt = status.gradeAttempt;
  if (!attempt) return undefined;
  if (attempt.ok)
    return { type: SubmissionConditions.Graded, status: "True", reason: "Graded", message: attempt.message };
  const kept =
    status.grade && status.grade.key !== attempt.key
      ? `; the earlier grade stands (${scoreText(status.grade)})`
      : "";
  return {
    type: SubmissionConditions.Graded,
    status: "False",
    reason: attempt.reason,
    message: `${attempt.message}${kept}`,
  };
}
