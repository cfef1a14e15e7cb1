/**
 * Running one copy job for an Assignment or a Submission, level-triggered: the pod's name is
 * derived from its owner, job and generation, so a sync (or an operator restarted mid-copy) finds
 * the pod it made and reads it instead of running the copy again. Only a finished pod's termination
 * message is a result; a successful pod is deleted once its result is in status. A failed one is kept
 * until its job may run again: OPERATOR_COPY_RETRY (FAILED_COPY_RETRY_MS) after the failure, doubling
 * with each failure in a row up to MAX_COPY_RETRY_MS, so a folder that stays over a limit costs one
 * pod every 10 minutes, not one a minute forever. The count lives in the owner's status
 * (`failedCopies`, keyed by the pod's name and counted once per pod uid), so it survives restarts.
 */
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { collectionNames, courseFolderNames } from "../../api/naming.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import type { FailedCopies, Template } from "../../api/v1alpha1/index.ts";
import { timeMs } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { Index } from "../caches.ts";
import { resources } from "../resources.ts";
import {
  copyNetworkPolicy,
  copyOutcome,
  copyPod,
  COPY_NETWORK_POLICY,
  type CopyOutcome,
  type CopyPodInput,
} from "./copyPods.ts";
import { kubeTime } from "../../api/times.ts";

/** A failed copy's first wait (a student may fix an over-limit folder meanwhile); OPERATOR_COPY_RETRY. */
export const FAILED_COPY_RETRY_MS = 60_000;
/** The longest wait between two runs of a job that keeps failing. */
export const MAX_COPY_RETRY_MS = 10 * 60_000;

export type CopyRun =
  | { state: "running" }
  | (Extract<CopyOutcome, { ok: true }> & { pod: V1Pod })
  | (Extract<CopyOutcome, { ok: false }> & {
      pod: V1Pod;
      /** The owner's new status.failedCopies. */
      failedCopies: FailedCopies;
      /** When the job may run again (ms from now; 0: now, its pod is deleted). */
      retryInMs: number;
      /** A failure the job's `final` says no retry can change: never run again (retryInMs: Infinity). */
      final?: true;
    });

/** The wait after `count` failures in a row: `firstMs` doubling, at most MAX_COPY_RETRY_MS. */
export function copyRetryDelay(firstMs: number, count: number): number {
  return Math.min(MAX_COPY_RETRY_MS, firstMs * 2 ** Math.min(count - 1, 30));
}

/** What a failed copy's condition adds: how often it failed and when it runs again. */
export function retryNote(failed: FailedCopies): string {
  return ` (failed ${failed.count === 1 ? "once" : `${failed.count} times in a row`}; trying again at ${failed.retryAt})`;
}

/**
 * Reads the job's pod, creating it when there is none; never runs a job twice at once. `failed` is
 * the owner's status.failedCopies: the count of this job's earlier failures. `final` names the
 * failures no retry can change (a hand-in over its limits): reported `final`, the pod kept until
 * the owner's next job.
 */
export async function runCopy(
  ctx: OperatorContext,
  input: CopyPodInput,
  failed: FailedCopies | undefined,
  final?: (kind: string) => boolean,
): Promise<CopyRun> {
  const pod = ctx.caches.copyPods.get(input.name, input.namespace);
  if (!pod) {
    await ensureCopyNetworkPolicy(ctx, input.namespace);
    try {
      await ctx.rest.create(resources.Pod.path(input.namespace), copyPod(input));
    } catch (error) {
      // A pod of this name is still being deleted (a retry): its deletion event brings us back.
      if (!isAlreadyExists(error)) throw error;
    }
    return { state: "running" };
  }
  if (pod.metadata?.deletionTimestamp) return { state: "running" };
  const outcome = copyOutcome(pod, ctx.now());
  if (!outcome) return { state: "running" };
  if (outcome.ok) return { ...outcome, pod };
  const uid = pod.metadata?.uid ?? "";
  const count = failed?.pod !== input.name ? 1 : failed.podUid === uid ? failed.count : failed.count + 1;
  const retryAt = timeMs(outcome.finishedAt) + copyRetryDelay(ctx.coursework.retryMs, count);
  const failedCopies = { pod: input.name, podUid: uid, count, retryAt: kubeTime(new Date(retryAt)) };
  // Never deleted here, as a success's pod is not: the deletion's event may come before the
  // status update's, and a sync on the old status would run the job again (a hand-in refused at
  // its moment, taken later with what was written since).
  if (final?.(outcome.kind))
    return { ...outcome, pod, failedCopies, retryInMs: Number.POSITIVE_INFINITY, final: true };
  const retryInMs = Math.max(0, retryAt - ctx.now().getTime());
  // Its time has come: the pod goes, and its deletion brings the owner back to run the job again.
  if (retryInMs === 0) await deleteCopyPod(ctx, pod);
  return { ...outcome, pod, failedCopies, retryInMs };
}

/** Where a snapshot's source folder is mounted in its copy pod. */
const SOURCE_MOUNT = "/source";

export interface SnapshotInput {
  name: string;
  job: "publish" | "autograder" | "solution";
  owner: V1OwnerReference;
  template: Template;
  /** The course folder and the folder inside it. */
  folder: string;
  path: string;
  /** The collection's folder the snapshots of this kind live in (mounted at `/<collectionFolder>`). */
  collectionFolder: string;
  /** The snapshot's folder inside it, e.g. `<assignment>/<release>`. */
  to: string;
}

/**
 * A read-only snapshot of a course folder's `path` into the Template's collection, with its
 * manifest hash: a copy pod's `handin` (an Assignment's release, its autograder's).
 */
export function runSnapshot(
  ctx: OperatorContext,
  input: SnapshotInput,
  failed: FailedCopies | undefined,
): Promise<CopyRun> {
  const templateName = input.template.metadata.name ?? "";
  const collectionMount = `/${input.collectionFolder}`;
  return runCopy(
    ctx,
    {
      name: input.name,
      namespace: input.template.metadata.namespace ?? "",
      job: input.job,
      owner: input.owner,
      image: ctx.coursework.image,
      template: input.template,
      args: ["handin", `${SOURCE_MOUNT}/${input.path}`, `${collectionMount}/${input.to}`],
      mounts: [
        {
          claim: courseFolderNames(templateName, input.folder).claim,
          mountPath: SOURCE_MOUNT,
          readOnly: true,
        },
        {
          claim: collectionNames(templateName).claim,
          mountPath: collectionMount,
          subPath: input.collectionFolder,
          readOnly: false,
        },
      ],
    },
    failed,
  );
}

/**
 * Deletes the owner's finished copy pods but those in `current` (the pods of the jobs its cached
 * status still asks for). A pod is deleted only once a sync reads its result back from the cache, never in the
 * sync that wrote it: the deletion's event can come before the status update's, and a sync reading
 * the old status would find no pod and run the copy again (a second publish then fails on its own
 * snapshot). This also removes a failed pod whose job was overtaken (a new release, a hand-in).
 */
export async function deleteFinishedCopyPods(
  ctx: OperatorContext,
  ownerUid: string,
  current: string | undefined | readonly (string | undefined)[],
): Promise<void> {
  const kept = new Set(Array.isArray(current) ? current : [current]);
  for (const pod of ctx.caches.copyPods.byIndex(Index.byOwnerUid, ownerUid)) {
    if (kept.has(pod.metadata?.name) || pod.metadata?.deletionTimestamp) continue;
    if (copyOutcome(pod, ctx.now())) await deleteCopyPod(ctx, pod);
  }
}

/** Deletes a pod (its result is in status, or its job is to run again). */
export async function deleteCopyPod(ctx: OperatorContext, pod: V1Pod): Promise<void> {
  try {
    await ctx.rest.delete(resources.Pod.path(pod.metadata?.namespace ?? "", pod.metadata?.name), {
      preconditions: { uid: pod.metadata?.uid },
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/**
 * The deny-all policy for copy pods, made by the operator before its first copy pod in a namespace
 * (the chart cannot: with USERLAND_WATCH_NAMESPACES=* it does not know the namespaces). Kept as it is
 * once there; remembered per controller term.
 */
export async function ensureCopyNetworkPolicy(ctx: OperatorContext, namespace: string): Promise<void> {
  if (ctx.coursework.policies.has(namespace)) return;
  try {
    await ctx.rest.create(resources.NetworkPolicy.path(namespace), copyNetworkPolicy(namespace));
    ctx.log.info(
      { namespace, networkPolicy: COPY_NETWORK_POLICY },
      "created the copy pods' deny-all NetworkPolicy",
    );
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  ctx.coursework.policies.add(namespace);
}
