/**
 * Informer events → queue keys for coursework: what an Assignment's and a Submission's sync read
 * changed, so their key is queued (the sync handlers read everything else from the caches).
 */
import { collectionFolderOf } from "../../api/assignmentIdentity.ts";
import { LABELS, submissionNameFor } from "../../api/naming.ts";
import type { Archive, Assignment, ClassArchive, Submission, Userland } from "../../api/v1alpha1/index.ts";
import { namespacedKey } from "../../lib/informer.ts";
import type { k8s } from "../../lib/kube.ts";
import { Index, owningUserland, type Caches } from "../caches.ts";
import type { WorkQueue } from "../workqueue.ts";
import { queueKey } from "../queueKeys.ts";

export const assignmentKey = (namespace: string, name: string) => queueKey("Assignment", namespace, name);
export const submissionKey = (namespace: string, name: string) => queueKey("Submission", namespace, name);
export const archiveKey = (namespace: string, name: string) => queueKey("Archive", namespace, name);
/** The assignment whose hand-ins an Archive serves or whose feedback it receives, if any. */
const archiveAssignment = (r: Archive): string | undefined =>
  r.spec.source?.handins?.assignment ?? r.spec.target?.feedback?.assignment;

export const classArchiveKey = (namespace: string, name: string) => queueKey("ClassArchive", namespace, name);

/** Submission counts in an Assignment's status: batched, as Template recounts are. */
const RECOUNT_DELAY_MS = 1000;

/** What Submissions depend on in an Assignment: a recount of its status changes none of it. */
const assignmentFingerprint = (a: Assignment): string =>
  `${a.metadata.uid}/${a.metadata.generation}/${a.status?.publishedRelease}/${a.status?.autograder?.revision}/${a.status?.autograder?.checked}`;

export function registerCourseworkHandlers(
  caches: Caches,
  queue: WorkQueue,
): {
  /** Queue every Assignment of a Template, and their Submissions (its spec or claims changed). */
  onTemplate: (namespace: string, template: string) => void;
} {
  const { assignments, submissions, userlands, deployments, pods, pvcs, copyPods, archives, classArchives } =
    caches;
  // Ends of terms of a Template (few: one per class and term), queued when its class changes.
  const enqueueClassArchivesOf = (namespace: string, template: string) => {
    for (const c of classArchives.list(namespace))
      if (c.spec.templateName === template) queue.add(classArchiveKey(namespace, c.metadata.name ?? ""));
  };
  const enqueueSubmissionsOf = (a: Assignment) => {
    for (const s of submissions.byIndex(
      Index.byAssignment,
      namespacedKey(a.metadata.namespace, a.metadata.name),
    ))
      queue.add(submissionKey(s.metadata.namespace ?? "", s.metadata.name ?? ""));
  };
  const assignmentsOf = (namespace: string, template: string) =>
    assignments.byIndex(Index.assignmentsByTemplate, namespacedKey(namespace, template));

  const onAssignment = (a: Assignment, old?: Assignment) => {
    const namespace = a.metadata.namespace ?? "";
    queue.add(assignmentKey(namespace, a.metadata.name ?? ""));
    if (!old || assignmentFingerprint(old) !== assignmentFingerprint(a)) enqueueSubmissionsOf(a);
    // An archive of its hand-ins or feedback waits for its folder in the collection, chosen at its
    // first sync (CI saw one made right after the Assignment wait until the next resync).
    if (collectionFolderOf(a) !== undefined && (!old || collectionFolderOf(old) === undefined))
      for (const r of archives.list(namespace))
        if (archiveAssignment(r) === a.metadata.name) queue.add(archiveKey(namespace, r.metadata.name ?? ""));
  };
  assignments.on("add", (a) => onAssignment(a));
  assignments.on("update", (a, old) => onAssignment(a, old));

  const onSubmission = (s: Submission) => {
    const namespace = s.metadata.namespace ?? "";
    queue.add(submissionKey(namespace, s.metadata.name ?? ""));
    queue.addAfter(assignmentKey(namespace, s.spec.assignment), RECOUNT_DELAY_MS);
  };
  submissions.on("add", onSubmission);
  submissions.on("update", onSubmission);
  submissions.on("delete", onSubmission);

  // A student's environment came, went, stopped or moved: their Submissions may copy now, and a
  // new student (or one who joined the class) gets a Submission.
  const onStudent = (u: Userland, classChanged: boolean) => {
    const namespace = u.metadata.namespace ?? "";
    // A download of their home waits for their volume and its node (archives are few and short-lived).
    for (const r of archives.list(namespace)) {
      const home = r.spec.source?.home;
      if (home?.user === u.spec.user && home.templateName === u.spec.templateName)
        queue.add(archiveKey(namespace, r.metadata.name ?? ""));
    }
    enqueueClassArchivesOf(namespace, u.spec.templateName);
    for (const a of assignmentsOf(namespace, u.spec.templateName)) {
      if (classChanged) queue.add(assignmentKey(namespace, a.metadata.name ?? ""));
      queue.add(submissionKey(namespace, submissionNameFor(a.metadata.name ?? "", u.spec.user)));
    }
  };
  userlands.on("add", (u) => onStudent(u, true));
  userlands.on("delete", (u) => onStudent(u, true));
  userlands.on("update", (u, old) =>
    onStudent(u, old?.metadata.labels?.[LABELS.class] !== u.metadata.labels?.[LABELS.class]),
  );
  const onStudentChild = (child: k8s.KubernetesObject) => {
    const owner = owningUserland(child);
    const u = owner && userlands.get(owner, child.metadata?.namespace);
    if (u) onStudent(u, false);
  };
  // A pod names its Deployment; the Deployment names its Userland.
  const onPod = (pod: k8s.KubernetesObject) => {
    const instance = pod.metadata?.labels?.[LABELS.instance];
    const deployment = instance && deployments.get(instance, pod.metadata?.namespace);
    if (deployment) onStudentChild(deployment);
  };
  pods.on("add", onPod);
  pods.on("update", onPod);
  pods.on("delete", onPod);
  pvcs.on("add", onStudentChild);
  // An end of term waits for the claims it deletes to go.
  pvcs.on("delete", (pvc) => {
    const template = pvc.metadata?.labels?.[LABELS.template];
    if (template) enqueueClassArchivesOf(pvc.metadata?.namespace ?? "", template);
  });

  // A copy pod reports to its owner.
  const onCopyPod = (pod: k8s.KubernetesObject) => {
    const owner = pod.metadata?.ownerReferences?.find((r) => r.controller);
    const namespace = pod.metadata?.namespace ?? "";
    if (owner?.kind === "Assignment") queue.add(assignmentKey(namespace, owner.name));
    if (owner?.kind === "Submission") queue.add(submissionKey(namespace, owner.name));
    if (owner?.kind === "Archive") queue.add(archiveKey(namespace, owner.name));
    if (owner?.kind === "ClassArchive") queue.add(classArchiveKey(namespace, owner.name));
  };
  const onClassArchive = (c: ClassArchive) =>
    queue.add(classArchiveKey(c.metadata.namespace ?? "", c.metadata.name ?? ""));
  classArchives.on("add", onClassArchive);
  classArchives.on("update", onClassArchive);
  const onArchive = (r: Archive) => queue.add(archiveKey(r.metadata.namespace ?? "", r.metadata.name ?? ""));
  archives.on("add", onArchive);
  archives.on("update", onArchive);
  copyPods.on("add", onCopyPod);
  copyPods.on("update", onCopyPod);
  copyPods.on("delete", onCopyPod);

  return {
    onTemplate: (namespace, template) => {
      enqueueClassArchivesOf(namespace, template);
      for (const a of assignmentsOf(namespace, template)) {
        queue.add(assignmentKey(namespace, a.metadata.name ?? ""));
        enqueueSubmissionsOf(a);
      }
    },
  };
}
