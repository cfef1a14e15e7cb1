/**
 * Running one copy job for an Assignment or a Submission, level-triggered: the pod's name is
 * derived from its owner, job and generation, so a sync (or an operator restarted mid-copy) finds
 * the pod it made and reads it instead of running the copy again. Only a finished pod's termination
 * message is a result; a successful pod is deleted once its result is in status, a failed one after
 * FAILED_COPY_RETRY_MS, when the next sync runs it again.
 */
import type { V1Pod } from "@kubernetes/client-node";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import { timeMs } from "../conditions.ts";
import type { OperatorContext } from "../context.ts";
import { resources } from "../resources.ts";
import {
  copyNetworkPolicy,
  copyOutcome,
  copyPod,
  COPY_NETWORK_POLICY,
  type CopyOutcome,
  type CopyPodInput,
} from "./copyPods.ts";

/** A failed copy is tried again after this long (a student may fix an over-limit folder meanwhile). */
export const FAILED_COPY_RETRY_MS = 60_000;

export type CopyRun =
  | { state: "running" }
  | (CopyOutcome & { pod: V1Pod; /** When a failed job may run again (ms from now). */ retryInMs?: number });

/** Reads the job's pod, creating it when there is none; never runs a job twice at once. */
export async function runCopy(ctx: OperatorContext, input: CopyPodInput): Promise<CopyRun> {
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
  const retryInMs = timeMs(outcome.finishedAt) + FAILED_COPY_RETRY_MS - ctx.now().getTime();
  return { ...outcome, pod, retryInMs: Math.max(0, retryInMs) };
}

/** Deletes a finished pod (its result is in status). */
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
async function ensureCopyNetworkPolicy(ctx: OperatorContext, namespace: string): Promise<void> {
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
