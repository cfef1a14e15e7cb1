/**
 * Running one grading pod, level-triggered like a copy (operator/coursework/copyRuns.ts): its name
 * is derived from its owner and its key, so a sync (or a restarted operator) finds the pod it made
 * and reads it instead of starting another. Finished pods are deleted by the owner's next sync
 * once its status records the run (deleteFinishedCopyPods: grading pods carry the copy label).
 */
import type { V1OwnerReference } from "@kubernetes/client-node";
import { collectionNames } from "../../api/naming.ts";
import type { Template } from "../../api/v1alpha1/index.ts";
import { isAlreadyExists } from "../../lib/kubeRest.ts";
import type { OperatorContext } from "../context.ts";
import { resources } from "../resources.ts";
import { gradeOutcome, gradePod, type GradeInputs, type GradeOutcome } from "./gradePods.ts";

export interface GradeRunInput {
  name: string;
  namespace: string;
  owner: V1OwnerReference;
  template: Template;
  inputs: GradeInputs;
  /** In the collection: the folder graded, the autograder's snapshot, where results go (under grades/). */
  handIn: string;
  autograder: string;
  out: string;
  metadata: Record<string, unknown>;
}

/** The run's outcome once its pod has finished; "running" until then (the pod is made if missing). */
export async function runGrading(
  ctx: OperatorContext,
  input: GradeRunInput,
): Promise<GradeOutcome | "running"> {
  const pod = ctx.caches.copyPods.get(input.name, input.namespace);
  if (!pod) {
    try {
      await ctx.rest.create(
        resources.Pod.path(input.namespace),
        gradePod({
          name: input.name,
          namespace: input.namespace,
          owner: input.owner,
          template: input.template,
          platformImage: ctx.coursework.image,
          autograderImage: input.inputs.image,
          timeoutSeconds: input.inputs.timeoutSeconds,
          resources: ctx.coursework.grading.resources,
          collectionClaim: collectionNames(input.template.metadata.name ?? "").claim,
          handIn: input.handIn,
          autograder: input.autograder,
          out: input.out.replace(/^grades\//, ""),
          receiptSha256: input.inputs.receiptSha256,
          metadata: input.metadata,
        }),
      );
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    return "running";
  }
  if (pod.metadata?.deletionTimestamp) return "running";
  return gradeOutcome(pod, input.inputs.timeoutSeconds, ctx.now()) ?? "running";
}
