/**
 * The Assignment sync handler (docs/decisions/0011-coursework.md): publish each new spec.release as
 * a snapshot in the Template's collection (a copy pod), keep one Submission per student of the
 * Template (optionally of one class), request every outstanding hand-in at each student's closing
 * time (lateUntil, else the deadline: an extension's, else the assignment's), and count the
 * Submissions in status.
 */
import pLimit from "p-limit";
import { controllerReference } from "../ownership.ts";
import { collectionPaths, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  collectionFolderOf,
  newCollectionFolder,
  owningAssignmentUid,
  submissionIsOf,
} from "../../api/assignmentIdentity.ts";
import {
  API_VERSION,
  AssignmentConditions,
  TemplateConditions,
  type Assignment,
  type AssignmentStatus,
  type Submission,
  type Template,
} from "../../api/v1alpha1/index.ts";
import { namespacedKey } from "../../lib/informer.ts";
import { isAlreadyExists, isInvalid } from "../../lib/kubeRest.ts";
import { Index } from "../caches.ts";
import { findCondition, setCondition, timeMs, type ConditionInput } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { resources } from "../resources.ts";
import { copyPodName } from "./copyPods.ts";
import { deleteFinishedCopyPods, retryNote, runSnapshot } from "./copyRuns.ts";
import { writeStatus } from "../statusWrite.ts";
import { deadlineFor } from "../../api/deadlines.ts";
import { autograderPodName, checkInputs, snapshotAutograder } from "../grading/syncGrading.ts";
import { checkPodsToKeep } from "../grading/autograderCheck.ts";
import { kubeTime } from "../../api/times.ts";

/** Label on a Userland that puts it in a class (Assignment spec.class). */

export interface CourseworkSyncResult {
  /** Sync again after this long: a closing time, or a failed copy's retry. */
  againAfterMs?: number;
}

export const assignmentOwner = (a: Assignment) => controllerReference("Assignment", a);

/** What keeps the Assignment from being published, as a Published=False condition (undefined: nothing). */
export function assignmentProblem(
  ctx: OperatorContext,
  a: Assignment,
  template: Template | undefined,
): { reason: string; message: string } | undefined {
  const t = a.spec.templateName;
  if (!template)
    return { reason: "TemplateNotFound", message: `Template "${t}" does not exist in this namespace` };
  const coursework = template.spec.coursework;
  const unset = [
    ...(coursework?.home ? [] : ["spec.coursework.home (where a student's work lives)"]),
    ...(coursework?.collection
      ? []
      : ["spec.coursework.collection (the claim keeping published copies, hand-ins and feedback)"]),
  ];
  if (unset.length > 0)
    return { reason: "CourseworkNotSet", message: `Template "${t}" needs ${unset.join(" and ")}` };
  if (!coursework?.folders?.some((f) => f.name === a.spec.source.folder))
    return {
      reason: "SourceFolderNotFound",
      message: `Template "${t}" has no course folder "${a.spec.source.folder}" (spec.coursework.folders)`,
    };
  const claims = findCondition(template.status?.conditions, TemplateConditions.CourseFoldersReady);
  if (claims?.status !== "True")
    return {
      reason: "CollectionUnavailable",
      message: claims
        ? `Template "${t}": ${claims.message}`
        : `Template "${t}"'s claims have not been checked yet`,
    };
  if (!ctx.coursework.image)
    return {
      reason: "CopyImageUnset",
      message:
        "The operator has no OPERATOR_COPY_IMAGE: set it to the platform's image (the chart sets its own)",
    };
  return undefined;
}

export async function syncAssignment(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<CourseworkSyncResult> {
  const assignment = ctx.caches.assignments.get(name, namespace);
  if (!assignment || assignment.metadata.deletionTimestamp) return {};
  const template = ctx.caches.templates.get(assignment.spec.templateName, namespace);
  const previous = assignment.status ?? {};
  const status: AssignmentStatus = {
    ...previous,
    observedGeneration: assignment.metadata.generation,
    collectionFolder: collectionFolderOf(assignment) ?? newCollectionFolder(assignment),
  };
  let againAfterMs: number | undefined;
  const soonest = (ms: number | undefined) => {
    if (ms !== undefined) againAfterMs = againAfterMs === undefined ? ms : Math.min(againAfterMs, ms);
  };
  const release = assignment.spec.release ?? 1;
  const autograderRelease = assignment.spec.autograder?.release ?? 1;
  await deleteFinishedCopyPods(ctx, assignment.metadata.uid ?? "", [
    previous.publishedRelease === release
      ? undefined
      : copyPodName("publish", assignment.metadata.uid ?? "", release),
    !assignment.spec.autograder || previous.autograder?.release === autograderRelease
      ? undefined
      : autograderPodName(assignment),
    ...(template && previous.autograder
      ? checkPodsToKeep(
          ctx,
          assignment,
          previous,
          checkInputs(assignment, template, previous.autograder.revision),
        )
      : []),
  ]);
  const problem = assignmentProblem(ctx, assignment, template);
  let published: ConditionInput;
  if (problem || !template) {
    published = {
      type: AssignmentConditions.Published,
      status: "False",
      ...(problem ?? { reason: "", message: "" }),
    };
  } else {
    const step = await publish(ctx, assignment, template, status);
    published = step.condition;
    soonest(step.retryInMs);
    await ensureSubmissions(ctx, assignment, template);
  }
  status.conditions = setCondition(previous.conditions, {
    ...published,
    observedGeneration: assignment.metadata.generation,
  });
  if (!problem && template) {
    const grader = await snapshotAutograder(ctx, assignment, template, status);
    soonest(grader.retryInMs);
    if (grader.condition)
      status.conditions = setCondition(status.conditions, {
        ...grader.condition,
        observedGeneration: assignment.metadata.generation,
      });
  }
  if (!assignment.spec.autograder)
    status.conditions = status.conditions.filter((c) => c.type !== AssignmentConditions.AutograderReady);

  // Each student closes at their own time: an extension's, else the assignment's.
  const submissions = ctx.caches.submissions
    .byIndex(Index.byAssignment, namespacedKey(namespace, name))
    .filter((s) => submissionIsOf(s, assignment));
  await adoptSubmissions(ctx, assignment, submissions);
  const nowMs = ctx.now().getTime();
  const closed: Submission[] = [];
  for (const s of submissions) {
    const closing = deadlineFor(assignment, s.spec.user).closesAt;
    if (closing === undefined) continue;
    if (timeMs(closing) <= nowMs) closed.push(s);
    else soonest(timeMs(closing) - nowMs);
  }
  if (!problem)
    await requestOutstandingHandIns(ctx, closed, (s) => deadlineFor(assignment, s.spec.user).closesAt ?? "");
  Object.assign(status, counts(submissions, status.publishedRelease, new Set(closed)));

  await writeStatus(ctx.rest, resources.Assignment.path(namespace, name, "status"), previous, status);
  return againAfterMs === undefined ? {} : { againAfterMs };
}

/** The snapshot of spec.release: a copy pod's hand-in of the source into the collection. */
/** The Published condition of a release whose snapshot was taken. */
const published = (release: number, revision: string | undefined): ConditionInput => ({
  type: AssignmentConditions.Published,
  status: "True",
  reason: "Published",
  message: `Release ${release} is published (sha256 ${revision ?? "?"})`,
});

async function publish(
  ctx: OperatorContext,
  a: Assignment,
  template: Template,
  status: AssignmentStatus,
): Promise<{ condition: ConditionInput; retryInMs?: number }> {
  const release = a.spec.release ?? 1;
  const folder = collectionFolderOf(a, status) ?? "";
  const type = AssignmentConditions.Published;
  if (status.publishedRelease === release)
    return {
      condition: published(release, status.publishedRevision),
    };
  const run = await runSnapshot(
    ctx,
    {
      name: copyPodName("publish", a.metadata.uid ?? "", release),
      job: "publish",
      owner: assignmentOwner(a),
      template,
      folder: a.spec.source.folder,
      path: a.spec.source.path,
      collectionFolder: "published",
      to: collectionPaths.published(folder, release).slice("published/".length),
    },
    status.failedCopies,
  );
  if (run.state === "running")
    return {
      condition: {
        type,
        status: "False",
        reason: "Publishing",
        message: `Taking the snapshot of ${a.spec.source.folder}/${a.spec.source.path} for release ${release}`,
      },
    };
  if (!run.ok) {
    status.failedCopies = run.failedCopies;
    return {
      condition: {
        type,
        status: "False",
        reason: "PublishFailed",
        message: `Release ${release} of ${a.spec.source.folder}/${a.spec.source.path}: ${run.message}${retryNote(run.failedCopies)}`,
      },
      retryInMs: run.retryInMs === 0 ? undefined : run.retryInMs,
    };
  }
  delete status.failedCopies;
  const sha256 = run.result.sha256;
  status.publishedRevision = typeof sha256 === "string" ? sha256 : undefined;
  status.publishedRelease = release;
  status.publishedAt = run.finishedAt;
  return {
    condition: published(release, status.publishedRevision),
  };
}

/**
 * One Submission per student of the Template (of the class, when set); students who join later get
 * theirs. The Template's teachers (RBAC, operator/teachers.ts: the answer their environments' mounts
 * already use, cached) are not students: they would get the handout and be collected at the closing
 * time and counted as missing. A Submission made before its person became a teacher stays.
 */
/**
 * Writes one Assignment sync makes to every student's Submission, in flight at once: one after
 * another, 300 students' hand-in requests at a closing time took 9.4 s on kwok (bench/coursework.ts),
 * and each student's copy waited for its turn.
 */
const STUDENT_WRITES_IN_FLIGHT = 16;

async function ensureSubmissions(ctx: OperatorContext, a: Assignment, template: Template): Promise<void> {
  const namespace = a.metadata.namespace ?? "";
  const name = a.metadata.name ?? "";
  const templateName = template.metadata.name ?? "";
  const users = new Set<string>();
  for (const u of ctx.caches.userlands.byIndex(Index.byTemplate, namespacedKey(namespace, templateName))) {
    if (u.metadata.deletionTimestamp) continue;
    if (a.spec.class !== undefined && u.metadata.labels?.[LABELS.class] !== a.spec.class) continue;
    users.add(u.spec.user);
  }
  const limit = pLimit(STUDENT_WRITES_IN_FLIGHT);
  await Promise.all(
    [...users].map((user) =>
      limit(async () => {
        const submissionName = submissionNameFor(name, user);
        // One of an earlier Assignment of this name: its deletion brings this one back here.
        if (ctx.caches.submissions.get(submissionName, namespace)) return;
        if (await ctx.teachers.isTeacher(namespace, templateName, user)) return;
        const body: Submission = {
          apiVersion: API_VERSION,
          kind: "Submission",
          metadata: { name: submissionName, namespace, ownerReferences: [assignmentOwner(a)] },
          spec: { assignment: name, user },
        };
        try {
          await ctx.rest.create(resources.Submission.path(namespace), body);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
      }),
    ),
  );
}

/**
 * A hand-made Submission (kubectl) becomes the Assignment's: deleted with it, never counted for a
 * later Assignment of the same name (issue 41 item 6).
 */
async function adoptSubmissions(
  ctx: OperatorContext,
  a: Assignment,
  submissions: readonly Submission[],
): Promise<void> {
  for (const s of submissions) {
    if (owningAssignmentUid(s) !== undefined || s.metadata.deletionTimestamp) continue;
    await ctx.rest.patch(resources.Submission.path(s.metadata.namespace ?? "", s.metadata.name), {
      metadata: {
        resourceVersion: s.metadata.resourceVersion,
        ownerReferences: [...(s.metadata.ownerReferences ?? []), assignmentOwner(a)],
      },
    });
  }
}

/**
 * At the closing time, the platform asks for every hand-in nobody asked for. `closing`: one time for
 * all (an exam's end), or each student's own (an assignment's extensions).
 */
export async function requestOutstandingHandIns(
  ctx: Pick<OperatorContext, "rest">,
  submissions: readonly Submission[],
  closing: string | ((s: Submission) => string),
): Promise<void> {
  const at = (s: Submission) =>
    kubeTime(new Date(timeMs(typeof closing === "string" ? closing : closing(s))));
  const outstanding = submissions.filter(
    (s) => s.spec.handInRequestedAt === undefined && !s.metadata.deletionTimestamp,
  );
  const limit = pLimit(STUDENT_WRITES_IN_FLIGHT);
  await Promise.all(
    outstanding.map((s) =>
      limit(async () => {
        try {
          await ctx.rest.patch(resources.Submission.path(s.metadata.namespace ?? "", s.metadata.name), {
            spec: { handInRequestedAt: at(s), handInRequestedBy: "deadline" },
          });
        } catch (error) {
          // The student's own request got there first: it is final, and theirs stands.
          if (!isInvalid(error)) throw error;
        }
      }),
    ),
  );
}

function counts(
  submissions: readonly Submission[],
  release: number | undefined,
  closed: ReadonlySet<Submission>,
) {
  const received = submissions.filter((s) => s.status?.receipt !== undefined);
  return {
    students: submissions.length,
    distributed: submissions.filter((s) => release !== undefined && s.status?.distributedRelease === release)
      .length,
    handedIn: received.length,
    late: received.filter((s) => s.status?.receipt?.late).length,
    missing: submissions.filter((s) => closed.has(s) && s.status?.receipt === undefined).length,
  };
}
