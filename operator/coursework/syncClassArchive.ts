/**
 * The ClassArchive sync handler: the end of a term (docs/decisions/0011-coursework.md, "End of term"),
 * in steps that status records, so an operator restarted anywhere picks up where it was:
 *
 * 0. Planned (until spec.archive): the class as it is now in status (whose environments would stop,
 *    whose volumes be read); nothing is stopped or read (issue 41 item 9, issue 44 item 5).
 * 1. Stopping: the class is recorded in status first (each student's Userland, uid, claims), then
 *    every environment is stopped (spec.enabled: false) and the step waits until their pods are gone.
 *    Each Userland's generation after the stop is recorded: a later change (a Start) shows.
 * 2. Archiving: one copy pod (`copy.ts archive-class`) mounts every student's claims read-only and the
 *    collection, and writes `archives/<name>-<uid hash>.zip` (stored) and its manifest into it.
 * 3. Verifying: a second pod (`copy.ts verify-archive`) mounts only the archives folder, read-only,
 *    reads the zip back and recomputes each folder's manifest hash against the manifest whose hash
 *    step 2 reported. A student is verified when all their folders are.
 * 4. DryRun: `toDelete` (verified students whose Userland is as it was stopped) and `kept` (everyone
 *    else, with the reason), and `dryRunHash` over toDelete. Recomputed at every sync.
 * 5. Ending, once spec.end and spec.confirm equals dryRunHash: each listed Userland is deleted (its
 *    uid as a precondition), then, once it is gone, its claims; one that changed meanwhile is kept.
 *    Ended when every listed Userland and claim is gone.
 * spec.cancel before Ending: each environment it stopped starts again as it was (Cancelled).
 */
import { collectionFolderOf, submissionIsOf } from "../../api/assignmentIdentity.ts";
import { createHash } from "node:crypto";
import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { childNames, collectionNames, collectionUserFolder, LABELS, shortHash } from "../../api/naming.ts";
import {
  API_VERSION,
  CLASS_ARCHIVE_STOPPED_REASON,
  TemplateConditions,
  UserlandAnnotations,
  coversWholeTemplate,
  type ClassArchive,
  type ClassArchiveListed,
  type ClassArchiveStatus,
  type ClassArchiveStudent,
  type Template,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { namespacedKey } from "../../lib/informer.ts";
import { isConflict, isNotFound } from "../../lib/kubeRest.ts";
import { Index } from "../caches.ts";
import { stableJson } from "../compare.ts";
import { findCondition } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { userlandRef } from "../../lib/events.ts";
import { controllerReference } from "../ownership.ts";
import { resources } from "../resources.ts";
import { copyPodName, type CopyMount } from "./copyPods.ts";
import { deleteCopyPod, deleteFinishedCopyPods, retryNote, runCopy } from "./copyRuns.ts";
import { writeStatus } from "../statusWrite.ts";
import type { CourseworkSyncResult } from "./syncAssignment.ts";
import { kubeTime } from "../../api/times.ts";

/** A class's volumes are more than a hand-in: per folder, well above a download's limits. */
const ARCHIVE_LIMITS = ["--max-files", "100000", "--max-bytes", "50GiB"];
/** Writing and reading back a whole class takes longer than one copy. */
const CLASS_ARCHIVE_DEADLINE_SECONDS = 6 * 3600;
/**
 * yazl keeps every entry until it writes the central directory (about 8 KiB each, measured: 70,000
 * entries took 570 MB): 4 GiB holds a class of about 400,000 files.
 */
const CLASS_ARCHIVE_MEMORY = "4Gi";
const COLLECTION_MOUNT = "/collection";
const ARCHIVES_MOUNT = "/archives";
const ARCHIVES_FOLDER = "archives";

/** The zip's file in the collection's archives/: the uid keeps a re-made ClassArchive's apart. */
export const classArchiveFile = (ca: ClassArchive) =>
  `${ca.metadata.name}-${shortHash(ca.metadata.uid ?? "", 8)}.zip`;

/** A student's folder for one of their claims, inside the zip. */
const claimFolder = (student: ClassArchiveStudent, claim: string) =>
  `students/${student.folder}/${claim.slice(claim.lastIndexOf("-pvc-") + 5)}`;

/** The hash a teacher confirms: the list of what an end deletes, in a fixed order and form. */
export function dryRunHash(toDelete: readonly ClassArchiveListed[]): string {
  const canonical = toDelete.map((d) => ({
    user: d.user,
    userland: d.userland,
    claims: [...d.claims].sort(),
  }));
  return createHash("sha256").update(stableJson(canonical)).digest("hex");
}

export async function syncClassArchive(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<CourseworkSyncResult> {
  const ca = ctx.caches.classArchives.get(name, namespace);
  if (!ca || ca.metadata.deletionTimestamp) return {};
  const uid = ca.metadata.uid ?? "";
  const previous = ca.status ?? {};
  const current =
    previous.phase === "Archiving"
      ? copyPodName("classarchive", uid, 1)
      : previous.phase === "Verifying"
        ? copyPodName("verify", uid, 1)
        : undefined;
  await deleteFinishedCopyPods(ctx, uid, current);
  const { status, againAfterMs } = await step(ctx, ca, {
    ...previous,
    observedGeneration: ca.metadata.generation,
  });
  await writeStatus(ctx.rest, resources.ClassArchive.path(namespace, name, "status"), previous, status);
  // Each step as an Event (`kubectl describe classarchive`), once: the phase changes once per step.
  if (status.phase && status.phase !== previous.phase) {
    const target = { apiVersion: API_VERSION, kind: "ClassArchive", metadata: ca.metadata };
    const message = status.message ?? status.phase;
    if (status.phase === "Failed") ctx.events.warning(target, status.phase, message);
    else ctx.events.normal(target, status.phase, message);
  }
  return againAfterMs === undefined ? {} : { againAfterMs };
}

interface Step {
  status: ClassArchiveStatus;
  againAfterMs?: number;
}

async function step(ctx: OperatorContext, ca: ClassArchive, status: ClassArchiveStatus): Promise<Step> {
  const namespace = ca.metadata.namespace ?? "";
  const template = ctx.caches.templates.get(ca.spec.templateName, namespace);
  if (status.phase === "Cancelled") {
    await deleteCopyPodsOf(ctx, ca);
    return { status };
  }
  if (ca.spec.cancel && status.phase !== "Ending" && status.phase !== "Ended")
    return { status: await cancel(ctx, ca, status) };
  switch (status.students ? status.phase : undefined) {
    case "Stopping":
      return { status: await stopping(ctx, ca, status) };
    case "Archiving":
      return archiving(ctx, ca, status, template);
    case "Verifying":
      return verifying(ctx, ca, status, template);
    case "DryRun":
      return { status: dryRun(ctx, ca, status) };
    case "Ending":
      return { status: await ending(ctx, ca, status) };
    case "Ended":
      return { status };
    default: {
      // Planned, or new: the class as it is now, until spec.archive says to stop it.
      const problem = templateProblem(ctx, ca, template);
      if (problem || !template) return { status: { ...status, phase: "Failed", message: problem } };
      const students = await classOf(ctx, ca, template);
      if (!ca.spec.archive) return { status: planned(status, students) };
      return {
        status: {
          ...status,
          phase: "Stopping",
          students,
          studentCount: students.length,
          message: `Stopping ${students.length} environments`,
        },
      };
    }
  }
}

/** The plan: who would be stopped and read, said before anyone is (the dry run of the stop). */
function planned(status: ClassArchiveStatus, students: ClassArchiveStudent[]): ClassArchiveStatus {
  const running = students.filter((s) => s.enabledBefore).length;
  const volumes = students.reduce((n, s) => n + s.claims.length, 0);
  return {
    ...status,
    phase: "Planned",
    students,
    studentCount: students.length,
    message:
      `A plan: ${students.length} students' environments (${running} running now) would be stopped and ` +
      `${volumes} volumes read into the class's zip. Nothing is stopped or read until spec.archive is true ` +
      "(the console's Stop and archive); spec.cancel ends the plan.",
  };
}

/**
 * spec.cancel: each environment this archive stopped starts again as it was before (those that ran
 * run again), its stopped reason removed, with an Event; nothing is deleted.
 */
async function cancel(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
): Promise<ClassArchiveStatus> {
  const namespace = ca.metadata.namespace ?? "";
  await deleteCopyPodsOf(ctx, ca);
  // Counted from the record, not from this sync's writes: a sync that ran again after its status
  // write failed finds the environments started already.
  const stopped = status.phase === "Planned" ? [] : (status.students ?? []);
  const restarted = stopped.filter((s) => s.enabledBefore !== false && recorded(ctx, namespace, s)).length;
  for (const s of stopped) {
    const u = recorded(ctx, namespace, s);
    if (u?.metadata.annotations?.[UserlandAnnotations.stoppedReason] !== CLASS_ARCHIVE_STOPPED_REASON)
      continue;
    try {
      const patched = await ctx.rest.patch<Userland>(resources.Userland.path(namespace, s.userland), {
        metadata: { uid: s.uid, annotations: { [UserlandAnnotations.stoppedReason]: null } },
        ...(s.enabledBefore === false ? {} : { spec: { enabled: true } }),
      });
      ctx.events.normal(
        userlandRef(patched),
        "ClassArchiveCancelled",
        `The class archive ${ca.metadata.name ?? ""} was cancelled: ${s.user}'s environment is ${s.enabledBefore === false ? "no longer held" : "started again"}`,
      );
    } catch (error) {
      if (!isNotFound(error) && !isConflict(error)) throw error;
    }
  }
  return {
    ...status,
    phase: "Cancelled",
    message:
      status.phase === "Planned" || status.phase === undefined
        ? "Cancelled before anything was stopped"
        : `Cancelled: ${restarted} environment${restarted === 1 ? "" : "s"} started again; nothing was deleted`,
  };
}

/**
 * A cancelled archive's zip, being written or read back, is not needed any more: its pods go, also
 * one the cache had not seen when the cancel was handled (its event syncs the archive again).
 */
async function deleteCopyPodsOf(ctx: OperatorContext, ca: ClassArchive): Promise<void> {
  for (const pod of ctx.caches.copyPods.byIndex(Index.byOwnerUid, ca.metadata.uid ?? ""))
    if (!pod.metadata?.deletionTimestamp) await deleteCopyPod(ctx, pod);
}

/** Why nothing can be archived (undefined: it can). Fixed by the Template's admin; synced again then. */
function templateProblem(
  ctx: OperatorContext,
  ca: ClassArchive,
  template: Template | undefined,
): string | undefined {
  const t = ca.spec.templateName;
  if (!template) return `Template "${t}" does not exist in this namespace`;
  if (!template.spec.coursework?.collection)
    return `Template "${t}" has no collection (spec.coursework.collection): the archive is written there`;
  const claims = findCondition(template.status?.conditions, TemplateConditions.CourseFoldersReady);
  if (claims?.status !== "True")
    return claims
      ? `Template "${t}": ${claims.message}`
      : `Template "${t}"'s claims have not been checked yet`;
  if (!ctx.coursework.image)
    return "The operator has no OPERATOR_COPY_IMAGE: set it to the platform's image (the chart sets its own)";
  return undefined;
}

/** The class as it is now: the Template's Userlands (of the class), not its teachers. */
async function classOf(
  ctx: OperatorContext,
  ca: ClassArchive,
  template: Template,
): Promise<ClassArchiveStudent[]> {
  const namespace = ca.metadata.namespace ?? "";
  const students: ClassArchiveStudent[] = [];
  for (const u of ctx.caches.userlands.byIndex(
    Index.byTemplate,
    namespacedKey(namespace, ca.spec.templateName),
  )) {
    if (u.metadata.deletionTimestamp) continue;
    if (!coversWholeTemplate(ca.spec) && u.metadata.labels?.[LABELS.class] !== ca.spec.class) continue;
    // A teacher's environment is not the class's: an Assignment gives them no Submission either.
    if (await ctx.teachers.isTeacher(namespace, ca.spec.templateName, u.spec.user)) continue;
    const names = childNames(ca.spec.templateName, u.metadata.name ?? "");
    const claims = (template.spec.volumes ?? [])
      .map((v) => names.pvc(v.name))
      .filter((claim) => ctx.caches.pvcs.get(claim, namespace));
    students.push({
      user: u.spec.user,
      userland: u.metadata.name ?? "",
      uid: u.metadata.uid ?? "",
      generation: u.metadata.generation ?? 0,
      claims,
      folder: collectionUserFolder(u.spec.user),
      enabledBefore: u.spec.enabled !== false,
    });
  }
  return students.sort((a, b) => (a.userland < b.userland ? -1 : a.userland > b.userland ? 1 : 0));
}

/** The student's Userland as it was recorded, or undefined when it is gone or another one now. */
function recorded(ctx: OperatorContext, namespace: string, s: ClassArchiveStudent): Userland | undefined {
  const u = ctx.caches.userlands.get(s.userland, namespace);
  return u && u.metadata.uid === s.uid && !u.metadata.deletionTimestamp ? u : undefined;
}

async function stopping(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
): Promise<ClassArchiveStatus> {
  const namespace = ca.metadata.namespace ?? "";
  const students: ClassArchiveStudent[] = [];
  let running = 0;
  for (const s of status.students ?? []) {
    const u = recorded(ctx, namespace, s);
    if (!u) {
      students.push({ ...s, verified: false, reason: "its Userland was deleted before it was archived" });
      continue;
    }
    let generation = u.metadata.generation ?? 0;
    // The student sees why (issue 41 item 9): the stopped reason on their home page and an Event,
    // once, when the archive takes their environment.
    const marked =
      u.metadata.annotations?.[UserlandAnnotations.stoppedReason] === CLASS_ARCHIVE_STOPPED_REASON;
    if (u.spec.enabled !== false || !marked) {
      try {
        const patched = await ctx.rest.patch<Userland>(resources.Userland.path(namespace, s.userland), {
          metadata: {
            uid: s.uid,
            annotations: { [UserlandAnnotations.stoppedReason]: CLASS_ARCHIVE_STOPPED_REASON },
          },
          spec: { enabled: false },
        });
        generation = patched.metadata.generation ?? generation;
        ctx.events.normal(
          userlandRef(patched),
          "ClassArchive",
          `Stopped at the end of term: the class archive ${ca.metadata.name ?? ""} reads ${s.user}'s volumes (${s.claims.join(", ")}) into the class's zip; the files are kept`,
        );
      } catch (error) {
        if (!isNotFound(error) && !isConflict(error)) throw error;
      }
    }
    const deployment = childNames(ca.spec.templateName, s.userland).deployment;
    if (ctx.caches.pods.byIndex(Index.byInstance, namespacedKey(namespace, deployment)).length > 0) running++;
    students.push({ ...s, generation });
  }
  if (running > 0)
    return {
      ...status,
      students,
      message: `Waiting for ${running} of ${students.length} environments to stop`,
    };
  return { ...status, students, phase: "Archiving", message: "Writing the class's archive" };
}

function archiving(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
  template: Template | undefined,
): Promise<Step> {
  const namespace = ca.metadata.namespace ?? "";
  const file = classArchiveFile(ca);
  const mounts: CopyMount[] = [
    { claim: collectionNames(ca.spec.templateName).claim, mountPath: COLLECTION_MOUNT, readOnly: true },
    {
      claim: collectionNames(ca.spec.templateName).claim,
      mountPath: ARCHIVES_MOUNT,
      readOnly: false,
      subPath: ARCHIVES_FOLDER,
    },
  ];
  const folders: string[] = [];
  (status.students ?? []).forEach((s, i) => {
    if (s.verified === false) return;
    for (const claim of s.claims) {
      const mountPath = `/students/${i}/${claim}`;
      mounts.push({ claim, mountPath, readOnly: true });
      folders.push("--folder", `${claimFolder(s, claim)}=${mountPath}`);
    }
  });
  for (const a of ctx.caches.assignments.byIndex(
    Index.assignmentsByTemplate,
    namespacedKey(namespace, ca.spec.templateName),
  )) {
    if (!coversWholeTemplate(ca.spec) && a.spec.class !== ca.spec.class) continue;
    const assignment = a.metadata.name ?? "";
    const folder = collectionFolderOf(a);
    // Only what was collected: an assignment nobody handed in has no folder in the collection.
    const collected = ctx.caches.submissions
      .byIndex(Index.byAssignment, namespacedKey(namespace, assignment))
      .some((sub) => submissionIsOf(sub, a) && sub.status?.receipt);
    if (!collected || folder === undefined) continue;
    // The zip names it as the teacher does; the collection's folder is bound to this Assignment.
    folders.push("--folder", `handins/${assignment}=${COLLECTION_MOUNT}/handins/${folder}`);
  }
  return runStep(ctx, ca, status, template, {
    job: "classarchive",
    args: ["archive-class", `${ARCHIVES_MOUNT}/${file}`, ...folders, ...ARCHIVE_LIMITS],
    mounts,
    done: (result) => ({
      ...status,
      phase: "Verifying",
      message: "Reading the archive back",
      archive: {
        path: `${ARCHIVES_FOLDER}/${file}`,
        manifestSha256: String(result.manifestSha256),
        files: typeof result.files === "number" ? result.files : 0,
        bytes: typeof result.bytes === "number" ? result.bytes : 0,
        archivedAt: kubeTime(ctx.now()),
      },
    }),
  });
}

function verifying(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
  template: Template | undefined,
): Promise<Step> {
  const file = classArchiveFile(ca);
  return runStep(ctx, ca, status, template, {
    job: "verify",
    args: [
      "verify-archive",
      `${ARCHIVES_MOUNT}/${file}`,
      "--manifest-sha256",
      status.archive?.manifestSha256 ?? "",
    ],
    mounts: [
      {
        claim: collectionNames(ca.spec.templateName).claim,
        mountPath: ARCHIVES_MOUNT,
        readOnly: true,
        subPath: ARCHIVES_FOLDER,
      },
    ],
    done: (result) => {
      const unverified = new Map<string, string>();
      for (const u of Array.isArray(result.unverified) ? (result.unverified as unknown[]) : []) {
        const { name, reason } = (u ?? {}) as { name?: unknown; reason?: unknown };
        if (typeof name === "string") unverified.set(name, String(reason));
      }
      // The list was cut to fit the termination message: who is missing from it is not known.
      const cut = ((result.omitted as Record<string, number> | undefined)?.unverified ?? 0) > 0;
      const students = (status.students ?? []).map((s): ClassArchiveStudent => {
        if (s.verified === false) return s;
        const problems = s.claims.flatMap((claim) => {
          const reason = unverified.get(claimFolder(s, claim));
          return reason ? [`${claim.slice(claim.lastIndexOf("-pvc-") + 5)}: ${reason}`] : [];
        });
        if (cut)
          return { ...s, verified: false, reason: "too many folders failed to list them; see the manifest" };
        if (problems.length > 0) return { ...s, verified: false, reason: problems.join("; ").slice(0, 1024) };
        return { ...s, verified: true };
      });
      const handins = [...unverified].filter(([folder]) => folder.startsWith("handins/"));
      const next: ClassArchiveStatus = {
        ...status,
        students,
        verifiedCount: students.filter((s) => s.verified).length,
        archive: {
          ...status.archive,
          path: status.archive?.path ?? `${ARCHIVES_FOLDER}/${file}`,
          sha256: String(result.sha256),
          bytes: typeof result.bytes === "number" ? result.bytes : status.archive?.bytes,
          verifiedAt: kubeTime(ctx.now()),
          ...(handins.length > 0
            ? {
                notArchived: handins
                  .map(([folder, reason]) => `${folder} (${reason})`)
                  .join("; ")
                  .slice(0, 2048),
              }
            : {}),
        },
        phase: "DryRun",
      };
      return dryRun(ctx, ca, next);
    },
  });
}

/** One copy pod of the given job; `done` turns its result into the next status. */
async function runStep(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
  template: Template | undefined,
  job: {
    job: "classarchive" | "verify";
    args: string[];
    mounts: CopyMount[];
    done: (result: Record<string, unknown>) => ClassArchiveStatus;
  },
): Promise<Step> {
  const namespace = ca.metadata.namespace ?? "";
  const problem = templateProblem(ctx, ca, template);
  if (problem || !template) return { status: { ...status, message: problem } };
  const run = await runCopy(
    ctx,
    {
      name: copyPodName(job.job, ca.metadata.uid ?? "", 1),
      namespace,
      job: job.job,
      owner: controllerReference("ClassArchive", ca),
      image: ctx.coursework.image,
      template,
      args: job.args,
      mounts: job.mounts,
      deadlineSeconds: CLASS_ARCHIVE_DEADLINE_SECONDS,
      memoryLimit: CLASS_ARCHIVE_MEMORY,
    },
    status.failedCopies,
  );
  if (run.state === "running") return { status };
  if (run.ok) {
    const next = job.done(run.result);
    delete next.failedCopies;
    return { status: next };
  }
  const what = job.job === "verify" ? "Reading the archive back failed" : "Writing the archive failed";
  return {
    status: {
      ...status,
      failedCopies: run.failedCopies,
      message: `${what}: ${run.message}${retryNote(run.failedCopies)}`.slice(0, 4096),
    },
    againAfterMs: run.retryInMs,
  };
}

/** toDelete, kept and their hash, from the recorded class and the Userlands as they are now. */
function dryRun(ctx: OperatorContext, ca: ClassArchive, status: ClassArchiveStatus): ClassArchiveStatus {
  const namespace = ca.metadata.namespace ?? "";
  const toDelete: ClassArchiveListed[] = [];
  const kept: ClassArchiveListed[] = [];
  for (const s of status.students ?? []) {
    const listed = { user: s.user, userland: s.userland, claims: s.claims };
    const u = recorded(ctx, namespace, s);
    if (!s.verified)
      kept.push({ ...listed, reason: `not verified: ${s.reason ?? "unknown"}`.slice(0, 1024) });
    else if (!u) kept.push({ ...listed, reason: "its Userland was deleted meanwhile (its claims are kept)" });
    else if ((u.metadata.generation ?? 0) !== s.generation || u.spec.enabled !== false)
      kept.push({ ...listed, reason: "its Userland changed after it was archived (started again?)" });
    else toDelete.push(listed);
  }
  const hash = dryRunHash(toDelete);
  const notArchived = status.archive?.notArchived ? ` Not archived: ${status.archive.notArchived}.` : "";
  const next: ClassArchiveStatus = {
    ...status,
    toDelete,
    toDeleteCount: toDelete.length,
    kept,
    dryRunHash: hash,
    // What a kubectl user needs to end it, in the message `kubectl get -o wide` shows.
    message:
      `Ending deletes ${toDelete.length} environments and their claims, keeps ${kept.length}; to end the class set spec.end: true and spec.confirm: ${hash}.${notArchived}`.slice(
        0,
        4096,
      ),
  };
  if (!ca.spec.end) return next;
  if (ca.spec.confirm !== hash)
    return {
      ...next,
      message:
        "spec.end is set but spec.confirm is not status.dryRunHash: nothing is deleted (read the dry run, then confirm its hash)",
    };
  return { ...next, phase: "Ending", message: `Deleting ${toDelete.length} environments and their claims` };
}

async function ending(
  ctx: OperatorContext,
  ca: ClassArchive,
  status: ClassArchiveStatus,
): Promise<ClassArchiveStatus> {
  const namespace = ca.metadata.namespace ?? "";
  const byUserland = new Map((status.students ?? []).map((s) => [s.userland, s]));
  const toDelete: ClassArchiveListed[] = [];
  const kept = [...(status.kept ?? [])];
  let remaining = 0;
  for (const listed of status.toDelete ?? []) {
    const s = byUserland.get(listed.userland);
    const u = ctx.caches.userlands.get(listed.userland, namespace);
    if (s && u && u.metadata.uid === s.uid) {
      // Marked for deletion already (which raises its generation): waiting for it to go.
      if (u.metadata.deletionTimestamp) {
        remaining++;
        toDelete.push(listed);
        continue;
      }
      if ((u.metadata.generation ?? 0) !== s.generation || u.spec.enabled !== false) {
        // Changed between the dry run and now: it was not what was archived.
        kept.push({ ...listed, reason: "its Userland changed after it was archived (started again?)" });
        continue;
      }
      remaining++;
      try {
        await ctx.rest.delete(resources.Userland.path(namespace, listed.userland), {
          preconditions: { uid: s.uid, resourceVersion: u.metadata.resourceVersion },
        });
      } catch (error) {
        // Conflict: it changed since the cache saw it; the next sync looks again.
        if (!isNotFound(error) && !isConflict(error)) throw error;
      }
    } else {
      // The Userland is gone: now its claims (before, its sync would have made them again).
      for (const claim of listed.claims) {
        const pvc = ctx.caches.pvcs.get(claim, namespace);
        if (!pvc) continue;
        remaining++;
        if (!pvc.metadata?.deletionTimestamp) await deleteClaim(ctx, pvc);
      }
    }
    toDelete.push(listed);
  }
  const next = { ...status, toDelete, toDeleteCount: toDelete.length, kept };
  if (remaining > 0) return { ...next, message: `Deleting: ${remaining} environments or claims left` };
  return {
    ...next,
    phase: "Ended",
    deleted: toDelete.length,
    endedAt: kubeTime(ctx.now()),
    message: `${toDelete.length} environments and their claims deleted, ${kept.length} kept; the archive is ${status.archive?.path} in the collection`,
  };
}

async function deleteClaim(ctx: OperatorContext, pvc: V1PersistentVolumeClaim): Promise<void> {
  try {
    await ctx.rest.delete(
      resources.PersistentVolumeClaim.path(pvc.metadata?.namespace ?? "", pvc.metadata?.name),
      { preconditions: { uid: pvc.metadata?.uid } },
    );
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}
