/**
 * The Archive sync handler (docs/decisions/0011-coursework.md, "Downloads"): one archive pod per
 * Archive, running `copy.ts serve-archive` on the claim the Archive's source names (derived here,
 * never taken from the Archive), read-only, reachable only by the archive clients (the
 * user-manager's pods). Status says where it listens, then what it served. Archives are short-lived:
 * the user-manager deletes one after its transfer, and this handler deletes any older than
 * ARCHIVE_TTL_SECONDS (a user-manager that died mid-way).
 */
import { collectionFolderOf, submissionIsOf } from "../../api/assignmentIdentity.ts";
import type { V1Pod } from "@kubernetes/client-node";
import {
  childNames,
  collectionNames,
  collectionPaths,
  courseFolderNames,
  shortHash,
} from "../../api/naming.ts";
import type { Archive, ArchiveStatus, Assignment } from "../../api/v1alpha1/index.ts";
import type { Static } from "../../api/v1alpha1/schema.ts";
import type { UploadTargetSchema } from "../../api/v1alpha1/upload.ts";

type UploadTarget = Static<typeof UploadTargetSchema>;
import { controllerReference } from "../ownership.ts";
import { namespacedKey } from "../../lib/informer.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import { Index } from "../caches.ts";
import { timeMs } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { resources } from "../resources.ts";
import {
  ARCHIVE_NETWORK_POLICY,
  archiveNetworkPolicy,
  copyOutcome,
  copyPod,
  countOf,
  type CopyMount,
} from "./copyPods.ts";
import { deleteFinishedCopyPods, ensureCopyNetworkPolicy } from "./copyRuns.ts";
import type { CourseworkSyncResult } from "./syncAssignment.ts";
import { placement } from "./syncSubmission.ts";
import { writeStatus } from "../statusWrite.ts";
import { classArchiveFile } from "./syncClassArchive.ts";

/** The port archive pods listen on. */
export const ARCHIVE_PORT = 8080;
/** How long an archive pod may live: a download of gigabytes at a student's pace takes a while. */
export const ARCHIVE_DEADLINE_SECONDS = 3600;
/** An Archive is deleted this long after it was made, whatever became of it. */
export const ARCHIVE_TTL_SECONDS = ARCHIVE_DEADLINE_SECONDS + 300;
/** How long the pod waits for its one caller: the user-manager dials as soon as it is Serving. */
const WAIT_SECONDS = 300;
/** A whole home is more than a hand-in: limits well above a hand-in's, within the pod's memory. */
const ARCHIVE_LIMITS = ["--max-files", "50000", "--max-bytes", "20GiB"];
const MOUNT = "/archive-source";
/** An upload's folder, the only one its pod may write (copy.ts's default limits apply). */
const TARGET = "/upload-target";

export const archivePodName = (archiveUid: string) => `userland-archive-${shortHash(archiveUid, 16)}`;

type Source =
  | {
      mounts: CopyMount[];
      /** What is served: a folder zipped as it is read, or a file (a class's verified zip) as it is. */
      folder?: string;
      file?: string;
      nodeName?: string;
      template: NonNullable<ReturnType<typeof templateOf>>;
      /** Upload pods: receive-upload's arguments after the folder (the students of a feedback zip). */
      receive?: string[];
      /** serve-archive's arguments after the limits (a hand-ins zip's students, named in it). */
      serve?: string[];
    }
  | { fail: string }
  | { wait: string };

function templateOf(ctx: OperatorContext, namespace: string, name: string) {
  return ctx.caches.templates.get(name, namespace);
}

/** The students of an assignment (those with a Submission of it), sorted. */
function studentsOf(ctx: OperatorContext, assignment: Assignment): string[] {
  const { namespace = "", name = "" } = assignment.metadata;
  return ctx.caches.submissions
    .byIndex(Index.byAssignment, namespacedKey(namespace, name))
    .filter((s) => submissionIsOf(s, assignment))
    .map((s) => s.spec.user)
    .sort();
}

/**
 * An upload's claim, mounted read-write at only the target folder (a subPath: the pod cannot reach
 * the rest of the course folder or the collection), or why not.
 */
function resolveTarget(ctx: OperatorContext, archive: Archive, target: UploadTarget): Source {
  const namespace = archive.metadata.namespace ?? "";
  const { materials, feedback } = target;
  const templateName = materials?.templateName ?? feedback?.templateName ?? "";
  const template = templateOf(ctx, namespace, templateName);
  if (!template) return { fail: `Template "${templateName}" does not exist` };
  const mount = (claim: string, subPath: string) => ({
    template,
    mounts: [{ claim, mountPath: TARGET, subPath, readOnly: false }],
    folder: TARGET,
    receive: [] as string[],
  });
  if (materials) {
    if (!(template.spec.coursework?.folders ?? []).some((f) => f.name === materials.folder))
      return { fail: `"${materials.folder}" is not a course folder of Template "${templateName}"` };
    // "." is the course folder's root: the whole claim, no subPath.
    const path = materials.path === "." ? "" : materials.path;
    return mount(courseFolderNames(templateName, materials.folder).claim, path);
  }
  const assignment = ctx.caches.assignments.get(feedback?.assignment ?? "", namespace);
  if (!feedback || !assignment || assignment.spec.templateName !== templateName)
    return { fail: `Template "${templateName}" has no assignment "${feedback?.assignment}"` };
  if (!template.spec.coursework?.collection)
    return { fail: `Template "${templateName}" has no collection (spec.coursework.collection)` };
  const name = assignment.metadata.name ?? "";
  const folder = collectionFolderOf(assignment);
  if (folder === undefined) return { wait: `assignment "${name}" has not been synced yet` };
  const claim = collectionNames(templateName).claim;
  const users = studentsOf(ctx, assignment);
  if (feedback.user !== undefined) {
    if (!users.includes(feedback.user))
      return { fail: `${feedback.user} is not a student of assignment "${name}" (no Submission)` };
    return mount(claim, collectionPaths.feedback(folder, feedback.user));
  }
  if (users.length === 0) return { fail: `assignment "${name}" has no students yet (no Submissions)` };
  return {
    ...mount(claim, `feedback/${folder}`),
    receive: users.flatMap((user) => ["--student", user]),
  };
}

/** The claim the Archive's source (or target) names, where the pod may run, or why not. */
function resolve(ctx: OperatorContext, archive: Archive): Source {
  if (archive.spec.target) return resolveTarget(ctx, archive, archive.spec.target);
  const namespace = archive.metadata.namespace ?? "";
  const { home, handins, classArchive } = archive.spec.source ?? {};
  const templateName = home?.templateName ?? handins?.templateName ?? classArchive?.templateName ?? "";
  const template = templateOf(ctx, namespace, templateName);
  if (!template) return { fail: `Template "${templateName}" does not exist` };
  if (home) {
    const volume = template.spec.coursework?.home?.volume;
    if (!volume) return { fail: `Template "${templateName}" names no home volume (spec.coursework.home)` };
    const userland = ctx.caches.userlands
      .byIndex(Index.byTemplate, namespacedKey(namespace, templateName))
      .find((u) => u.spec.user === home.user && !u.metadata.deletionTimestamp);
    if (!userland) return { fail: `${home.user} has no Userland of Template "${templateName}"` };
    const names = childNames(templateName, userland.metadata.name ?? "");
    const claim = names.pvc(volume);
    const where = placement(ctx, userland, names.deployment, claim);
    if ("wait" in where) return { wait: where.wait };
    return {
      template,
      mounts: [{ claim, mountPath: MOUNT, readOnly: true }],
      folder: MOUNT,
      ...(where.nodeName ? { nodeName: where.nodeName } : {}),
    };
  }
  if (classArchive) {
    const ca = ctx.caches.classArchives.get(classArchive.name, namespace);
    // Only a zip that was read back: its path is the operator's, never taken from the request.
    if (!ca || ca.spec.templateName !== templateName || !ca.status?.archive?.verifiedAt)
      return { fail: `Template "${templateName}" has no verified class archive "${classArchive.name}"` };
    return {
      template,
      mounts: [
        {
          claim: collectionNames(templateName).claim,
          mountPath: MOUNT,
          readOnly: true,
          subPath: "archives",
        },
      ],
      file: `${MOUNT}/${classArchiveFile(ca)}`,
    };
  }
  const assignment = ctx.caches.assignments.get(handins?.assignment ?? "", namespace);
  if (!assignment || assignment.spec.templateName !== templateName)
    return { fail: `Template "${templateName}" has no assignment "${handins?.assignment}"` };
  if (!template.spec.coursework?.collection)
    return { fail: `Template "${templateName}" has no collection (spec.coursework.collection)` };
  const folder = collectionFolderOf(assignment);
  if (folder === undefined)
    return { wait: `assignment "${assignment.metadata.name}" has not been synced yet` };
  // The collection's root, read-only (a subPath of a read-only claim could not be made when no one
  // has handed in yet); only handins/<the assignment's folder> is served, each student's folder
  // named by the student in the zip (coursework/files/studentFolders.ts).
  const users = studentsOf(ctx, assignment);
  return {
    template,
    mounts: [{ claim: collectionNames(templateName).claim, mountPath: MOUNT, readOnly: true }],
    folder: `${MOUNT}/handins/${folder}`,
    serve: users.flatMap((user) => ["--student", user]),
  };
}

export async function syncArchive(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<CourseworkSyncResult> {
  const archive = ctx.caches.archives.get(name, namespace);
  if (!archive || archive.metadata.deletionTimestamp) return {};
  const uid = archive.metadata.uid ?? "";
  const podName = archivePodName(uid);
  const expiresInMs =
    timeMs(String(archive.metadata.creationTimestamp ?? ctx.now().toISOString())) +
    ARCHIVE_TTL_SECONDS * 1000 -
    ctx.now().getTime();
  if (expiresInMs <= 0) {
    try {
      await ctx.rest.delete(resources.Archive.path(namespace, name), { preconditions: { uid } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    return {};
  }
  const previous = archive.status ?? {};
  let status: ArchiveStatus = previous;
  if (previous.phase === "Served" || previous.phase === "Failed") {
    await deleteFinishedCopyPods(ctx, uid, undefined);
  } else {
    status = await converge(ctx, archive, podName);
  }
  await writeStatus(ctx.rest, resources.Archive.path(namespace, name, "status"), previous, status);
  return { againAfterMs: expiresInMs };
}

async function converge(ctx: OperatorContext, archive: Archive, podName: string): Promise<ArchiveStatus> {
  const namespace = archive.metadata.namespace ?? "";
  const failed = (message: string): ArchiveStatus => ({ phase: "Failed", message });
  if (!ctx.coursework.image) return failed("OPERATOR_COPY_IMAGE is unset: the operator runs no archive pods");
  const clients = ctx.coursework.archiveClients;
  if (!clients) return failed("OPERATOR_ARCHIVE_CLIENTS is unset: nobody could reach an archive pod");
  const pod = ctx.caches.copyPods.get(podName, namespace);
  if (pod && !pod.metadata?.deletionTimestamp) return statusOf(ctx, pod);
  if (pod) return { phase: "Pending", pod: podName, message: "An earlier archive pod is being deleted" };
  const source = resolve(ctx, archive);
  if ("fail" in source) return failed(source.fail);
  if ("wait" in source) return { phase: "Pending", message: source.wait };
  await ensureCopyNetworkPolicy(ctx, namespace);
  await ensureArchiveNetworkPolicy(ctx, namespace);
  try {
    await ctx.rest.create(
      resources.Pod.path(namespace),
      copyPod({
        name: podName,
        namespace,
        job: "archive",
        owner: controllerReference("Archive", archive),
        image: ctx.coursework.image,
        template: source.template,
        args: [
          ...(source.file
            ? ["serve-file", source.file]
            : [source.receive ? "receive-upload" : "serve-archive", source.folder ?? ""]),
          "--token-sha256",
          archive.spec.tokenSha256,
          "--port",
          String(ARCHIVE_PORT),
          "--wait",
          String(WAIT_SECONDS),
          ...(source.file ? [] : (source.receive ?? [...ARCHIVE_LIMITS, ...(source.serve ?? [])])),
        ],
        mounts: source.mounts,
        port: ARCHIVE_PORT,
        deadlineSeconds: ARCHIVE_DEADLINE_SECONDS,
        ...(source.nodeName ? { nodeName: source.nodeName } : {}),
      }),
    );
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  return { phase: "Pending", pod: podName, message: "The archive pod is starting" };
}

/** Pending until the program listens and the pod has an address; then Serving; then what it served. */
function statusOf(ctx: OperatorContext, pod: V1Pod): ArchiveStatus {
  const podName = pod.metadata?.name ?? "";
  const outcome = copyOutcome(pod, ctx.now());
  if (outcome?.ok) {
    const r = outcome.result;
    return {
      phase: "Served",
      pod: podName,
      summary: {
        // An upload's summary counts its files; a download's lists them.
        files: typeof r.files === "number" ? r.files : countOf(r, "files"),
        bytes: typeof r.bytes === "number" ? r.bytes : 0,
        sha256: String(r.sha256),
        skipped: countOf(r, "skipped"),
      },
    };
  }
  if (outcome) return { phase: "Failed", pod: podName, message: outcome.message.slice(0, 4096) };
  const copy = pod.status?.containerStatuses?.find((c) => c.name === "copy");
  const podIP = pod.status?.podIP;
  // Ready (its readiness check connected): the program listens, not only runs.
  if (copy?.state?.running && copy.ready && podIP)
    return { phase: "Serving", pod: podName, podIP, port: ARCHIVE_PORT };
  return { phase: "Pending", pod: podName, message: "The archive pod is starting" };
}

/** The ingress policy for archive pods, made beside the deny-all one; remembered per term. */
async function ensureArchiveNetworkPolicy(ctx: OperatorContext, namespace: string): Promise<void> {
  const key = `${ARCHIVE_NETWORK_POLICY}/${namespace}`;
  const clients = ctx.coursework.archiveClients;
  if (ctx.coursework.policies.has(key) || !clients) return;
  try {
    await ctx.rest.create(
      resources.NetworkPolicy.path(namespace),
      archiveNetworkPolicy(namespace, clients, ARCHIVE_PORT),
    );
    ctx.log.info(
      { namespace, networkPolicy: ARCHIVE_NETWORK_POLICY },
      "created the archive pods' NetworkPolicy",
    );
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  ctx.coursework.policies.add(key);
}
