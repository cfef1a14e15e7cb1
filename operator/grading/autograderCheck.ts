/**
 * The autograder's check before it grades anyone (docs/decisions/0015-grading.md): with
 * spec.autograder.solution, the operator snapshots the reference solution and runs the autograder
 * on it (it must score full marks) and on the published starter files (they must not). Hand-ins are
 * graded only once both hold (status.autograder.checked), so a broken autograder never grades a
 * student. Each run is a grading pod owned by the Assignment, keyed like a student's run (the input's
 * hash, the autograder's revision, the image, the timeout), so a new release checks again.
 */
import { collectionPaths, LABELS } from "../../api/naming.ts";
import { collectionFolderOf } from "../../api/assignmentIdentity.ts";
import type { Assignment, AssignmentStatus, Template } from "../../api/v1alpha1/index.ts";
import { Index } from "../caches.ts";
import type { ConditionInput } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { copyPodName } from "../coursework/copyPods.ts";
import { retryNote, runSnapshot } from "../coursework/copyRuns.ts";
import { controllerReference } from "../ownership.ts";
import { runGrading } from "./gradeRuns.ts";
import {
  finiteNumber,
  GRADE_JOB,
  gradeKey,
  gradePodName,
  type GradeInputs,
  type GradeOutcome,
} from "./gradePods.ts";

type Which = "solution" | "starter";
type Check = NonNullable<NonNullable<AssignmentStatus["autograder"]>["check"]>["solution"];

export interface CheckStep {
  /** AutograderReady while the check is not passed; undefined once it is. */
  condition?: ConditionInput;
  retryInMs?: number;
  /** The check's pods still to be read (the Assignment's sync keeps them). */
  pending: string[];
}

export const solutionPodName = (a: Assignment): string =>
  copyPodName("solution", a.metadata.uid ?? "", a.spec.autograder?.release ?? 1);

const checkPodName = (a: Assignment, which: Which, key: string): string =>
  gradePodName(a.metadata.uid ?? "", `${which}/${key}`);

function checkOf(key: string, outcome: GradeOutcome): NonNullable<Check> {
  if (!outcome.ok) return { key, ok: false, message: outcome.message };
  const score = finiteNumber(outcome.summary.score) ?? 0;
  const maxScore = finiteNumber(outcome.summary.maxScore);
  return {
    key,
    ok: true,
    score,
    ...(maxScore !== undefined ? { maxScore } : {}),
    message: `${score}${maxScore !== undefined ? ` of ${maxScore}` : ""} points`,
  };
}

/** Full marks: a result whose score reaches its tests' max_score (none given: nothing to reach). */
const fullMarks = (c: Check): boolean =>
  c !== undefined && c.ok && c.maxScore !== undefined && (c.score ?? 0) >= c.maxScore;

/**
 * Runs (or reads) the check for the Assignment's current autograder revision; `status.autograder`
 * must hold that revision's snapshot. Sets `status.autograder.checked` when it passes.
 */
/**
 * The check's pods the Assignment's sync must not delete: while the cached status lacks a result
 * of the current check, every grading pod of the Assignment besides the pending ones. The status a
 * sync wrote may not be in the cache when the next sync starts (a pod finished right after it was
 * made): a finished run deleted then would be made again instead of read (CI saw the check stay
 * CheckingAutograder with a new pod nobody ran).
 */
export function checkPodsToKeep(
  ctx: Pick<OperatorContext, "caches">,
  a: Assignment,
  status: AssignmentStatus,
  inputsFor: (receiptSha256: string) => GradeInputs,
): string[] {
  const pending = pendingCheckPods(a, status, inputsFor);
  if (pending.length === 0) return [];
  const grading = ctx.caches.copyPods
    .byIndex(Index.byOwnerUid, a.metadata.uid ?? "")
    .filter((p) => p.metadata?.labels?.[LABELS.copy] === GRADE_JOB)
    .map((p) => p.metadata?.name ?? "");
  return [...pending, ...grading];
}

/** The check's pods whose results the cached status does not hold yet. */
function pendingCheckPods(
  a: Assignment,
  status: AssignmentStatus,
  inputsFor: (receiptSha256: string) => GradeInputs,
): string[] {
  const snapshot = status.autograder;
  if (!a.spec.autograder?.solution || !snapshot) return [];
  // A status of an earlier release holds none of this release's results: its solution pod may have
  // finished already (CI saw it deleted on a stale status, made again, and never run).
  if (!snapshot.solutionRevision || snapshot.release !== (a.spec.autograder.release ?? 1))
    return [solutionPodName(a)];
  const starter = status.publishedRevision;
  return [
    ["solution", snapshot.solutionRevision],
    ["starter", starter],
  ].flatMap(([which, sha]) => {
    if (!sha) return [];
    const key = gradeKey(inputsFor(sha));
    return snapshot.check?.[which as Which]?.key === key ? [] : [checkPodName(a, which as Which, key)];
  });
}

export async function checkAutograder(
  ctx: OperatorContext,
  a: Assignment,
  template: Template,
  status: AssignmentStatus,
  inputsFor: (receiptSha256: string) => GradeInputs,
): Promise<CheckStep> {
  const spec = a.spec.autograder;
  if (!spec?.solution || !status.autograder) return { pending: [] };
  // A copy: the status came from the cache, whose objects are frozen.
  const snapshot = { ...status.autograder };
  status.autograder = snapshot;
  const type = "AutograderReady";
  const name = a.metadata.name ?? "";
  const folder = collectionFolderOf(a, status) ?? "";
  const release = snapshot.release;
  const waiting = (
    reason: string,
    message: string,
    pending: string[] = [],
    retryInMs?: number,
  ): CheckStep => ({
    condition: { type, status: "False", reason, message },
    pending,
    ...(retryInMs !== undefined ? { retryInMs } : {}),
  });

  if (!snapshot.solutionRevision) {
    const run = await runSnapshot(
      ctx,
      {
        name: solutionPodName(a),
        job: "solution",
        owner: controllerReference("Assignment", a),
        template,
        folder: spec.folder,
        path: spec.solution,
        collectionFolder: "autograders",
        to: collectionPaths.autograderSolution(folder, release).slice("autograders/".length),
      },
      status.failedCopies,
    );
    if (run.state === "running")
      return waiting(
        "CheckingAutograder",
        `Taking the snapshot of the reference solution ${spec.folder}/${spec.solution}`,
        [solutionPodName(a)],
      );
    if (!run.ok) {
      status.failedCopies = run.failedCopies;
      return waiting(
        "CheckFailed",
        `The reference solution ${spec.folder}/${spec.solution}: ${run.message}${retryNote(run.failedCopies)}`,
        [solutionPodName(a)],
        run.retryInMs === 0 ? undefined : run.retryInMs,
      );
    }
    delete status.failedCopies;
    snapshot.solutionRevision = String(run.result.sha256);
  }
  const published = a.status?.publishedRelease;
  const starterRevision = status.publishedRevision;
  if (published === undefined || !starterRevision)
    return waiting("CheckingAutograder", "Waiting for the starter files' snapshot (the Published condition)");

  const inputs: Record<Which, { input: GradeInputs; handIn: string }> = {
    solution: {
      input: inputsFor(snapshot.solutionRevision),
      handIn: collectionPaths.autograderSolution(folder, release),
    },
    starter: { input: inputsFor(starterRevision), handIn: collectionPaths.published(folder, published) },
  };
  const check = { ...snapshot.check };
  const pending: string[] = [];
  for (const which of ["solution", "starter"] as const) {
    const { input, handIn } = inputs[which];
    const key = gradeKey(input);
    if (check[which]?.key === key) continue;
    const podName = checkPodName(a, which, key);
    const outcome = await runGrading(ctx, {
      name: podName,
      namespace: a.metadata.namespace ?? "",
      owner: controllerReference("Assignment", a),
      template,
      inputs: input,
      handIn,
      autograder: collectionPaths.autograder(folder, release),
      out: collectionPaths.autograderCheck(folder, which, key),
      metadata: { id: `${name}-${which}`, assignment: { id: name, title: a.spec.title }, users: [] },
    });
    if (outcome === "running") pending.push(podName);
    else check[which] = checkOf(key, outcome);
  }
  snapshot.check = check;
  snapshot.checked = false;
  if (pending.length > 0)
    return waiting(
      "CheckingAutograder",
      "Running the autograder on the reference solution and the starter files",
      pending,
    );
  const { solution, starter } = check;
  if (!fullMarks(solution))
    return waiting(
      "AutograderCheckFailed",
      `The reference solution ${spec.folder}/${spec.solution} did not score full marks (${solution?.message ?? "no result"}): fix the autograder or the solution; no hand-in is graded until then`,
    );
  if (fullMarks(starter))
    return waiting(
      "AutograderCheckFailed",
      `The starter files score full marks (${starter?.message ?? ""}): the autograder would pass work nobody did; no hand-in is graded until it tells them apart`,
    );
  snapshot.checked = true;
  return { pending: [] };
}
