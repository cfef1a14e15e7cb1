/**
 * A hand-in frozen at its moment where the storage can (docs/decisions/0015-grading.md): with
 * OPERATOR_HANDIN_SNAPSHOT_CLASS set, the student's home claim is snapshotted (a CSI VolumeSnapshot)
 * as soon as the request is seen, a claim is restored from the snapshot, and the hand-in's copy pod
 * reads that claim instead of the live volume. What the student writes after the snapshot is never
 * in the hand-in; the receipt's `frozenAt` is the snapshot's time. Both objects are owned by the
 * Submission and deleted once the copy is in (or with the Submission).
 *
 * Level-triggered like the copies: the names come from the Submission's uid and the request, so a
 * sync (or a restarted operator) finds what an earlier one made; the snapshot controller's progress
 * is read with a GET while the Submission waits for it (a hand-in is a few objects a term per
 * student, not worth a watch).
 */
import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { shortHash } from "../../api/naming.ts";
import type { Submission } from "../../api/v1alpha1/index.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import type { OperatorContext } from "../context.ts";
import { controllerReference } from "../ownership.ts";
import { resources } from "../resources.ts";

/** How often a Submission waiting for its snapshot looks again. */
export const SNAPSHOT_POLL_MS = 2000;

/** What the operator reads of a snapshot.storage.k8s.io/v1 VolumeSnapshot. */
interface VolumeSnapshot {
  metadata: { name?: string; namespace?: string };
  status?: {
    readyToUse?: boolean;
    creationTime?: string;
    restoreSize?: string;
    error?: { message?: string; time?: string };
  };
}

export type FrozenHome =
  | { state: "waiting"; message: string }
  | { state: "failed"; message: string }
  | { state: "ready"; claim: string; frozenAt: string };

/** The snapshot's and the restored claim's name for one hand-in request (`request`: version@moment). */
export const frozenName = (submissionUid: string, request: string): string =>
  `userland-handin-${shortHash(`${submissionUid}/${request}`, 16)}`;

/**
 * The claim holding `homeClaim` as it was at the request: made step by step, one step per call
 * (snapshot, then the restored claim), "ready" once the claim exists.
 */
export async function frozenHome(
  ctx: OperatorContext,
  s: Submission,
  request: string,
  homeClaim: string,
): Promise<FrozenHome> {
  const namespace = s.metadata.namespace ?? "";
  const name = frozenName(s.metadata.uid ?? "", request);
  const owner = { ownerReferences: [controllerReference("Submission", s)] };
  let snapshot: VolumeSnapshot;
  try {
    snapshot = await ctx.rest.get<VolumeSnapshot>(resources.VolumeSnapshot.path(namespace, name));
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await ctx.rest.create(resources.VolumeSnapshot.path(namespace), {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshot",
        metadata: { name, namespace, ...owner },
        spec: {
          volumeSnapshotClassName: ctx.coursework.snapshotClass,
          source: { persistentVolumeClaimName: homeClaim },
        },
      });
    } catch (created) {
      if (!isAlreadyExists(created)) throw created;
    }
    return { state: "waiting", message: `Taking a snapshot of ${homeClaim}` };
  }
  if (snapshot.status?.error?.message)
    return {
      state: "failed",
      message: `The snapshot of ${homeClaim} failed: ${snapshot.status.error.message}`,
    };
  const frozenAt = snapshot.status?.creationTime;
  if (snapshot.status?.readyToUse !== true || frozenAt === undefined)
    return { state: "waiting", message: `Waiting for the snapshot of ${homeClaim} to be ready` };
  try {
    await ctx.rest.get(resources.PersistentVolumeClaim.path(namespace, name));
  } catch (error) {
    if (!isNotFound(error)) throw error;
    const home = await ctx.rest.get<V1PersistentVolumeClaim>(
      resources.PersistentVolumeClaim.path(namespace, homeClaim),
    );
    const size = snapshot.status.restoreSize ?? home.spec?.resources?.requests?.storage ?? "1Gi";
    try {
      await ctx.rest.create(resources.PersistentVolumeClaim.path(namespace), {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name, namespace, ...owner },
        spec: {
          // Read by one copy pod, on whichever node the scheduler picks.
          accessModes: ["ReadWriteOnce"],
          ...(home.spec?.storageClassName ? { storageClassName: home.spec.storageClassName } : {}),
          resources: { requests: { storage: size } },
          dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name },
        },
      });
    } catch (created) {
      if (!isAlreadyExists(created)) throw created;
    }
  }
  return { state: "ready", claim: name, frozenAt };
}

/** Deletes a hand-in's restored claim and snapshot once its copy is in (gone already: nothing to do). */
export async function releaseFrozenHome(ctx: OperatorContext, s: Submission, request: string): Promise<void> {
  const namespace = s.metadata.namespace ?? "";
  const name = frozenName(s.metadata.uid ?? "", request);
  for (const path of [
    resources.PersistentVolumeClaim.path(namespace, name),
    resources.VolumeSnapshot.path(namespace, name),
  ]) {
    try {
      await ctx.rest.delete(path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
