/**
 * Where a start is and, when it cannot get further by itself, why: from the pod's and the claims'
 * status as the informers hold them (no API calls, the clock passed in). The words are for
 * teachers and students, so they name the image, the exit code and the container's last output,
 * the scheduler's reason, the storage class.
 */
import type {
  V1ContainerStatus,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodCondition,
} from "@kubernetes/client-node";
import {
  StartProblems,
  type StartProblem,
  type StartProgress,
  type StartStep,
} from "../api/v1alpha1/index.ts";
import { timeMs } from "./conditions.ts";
import { kubeTime } from "../api/times.ts";

/** Running but not ready for this long: the readiness check is failing, not just slow. */
export const READINESS_GRACE_MS = 20_000;
/** How much of a crashed container's last output the status keeps (its end). */
const OUTPUT_TAIL_CHARS = 600;
const OUTPUT_TAIL_LINES = 8;

export interface Problem {
  reason: StartProblem;
  message: string;
}

/** One claim of the Userland: the cached object (if any) and what its Warning Events said. */
export interface ClaimState {
  volume: string;
  claim: V1PersistentVolumeClaim | undefined;
  /** The newest Warning Event's message for a Pending claim (ProvisioningFailed…), if looked up. */
  provisioningMessage?: string | undefined;
}

export interface StartObservation {
  /** The pods of the Userland's Deployment (its instance label). */
  pods: readonly V1Pod[];
  claims: readonly ClaimState[];
  routable: boolean;
  /** The previous progress: times only the operator saw (VolumeBound, Reachable) are kept from it. */
  previous: StartProgress | undefined;
  /**
   * The progress this operator last computed to write, newer than `previous` when the cache has
   * not caught up with that write yet: its times are kept too.
   */
  remembered?: StartProgress | undefined;
  now: Date;
}

export interface Diagnosis {
  problem?: Problem;
  progress?: StartProgress;
  /** Look again after this long: a condition that depends on time alone (readiness grace). */
  recheckAfterMs?: number;
}

const IMAGE_PULL = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);
const CANNOT_START = new Set(["CreateContainerConfigError", "CreateContainerError", "RunContainerError"]);

/** The pod this start is about: the newest one not being deleted (Recreate: the old one is going). */
export function currentPod(pods: readonly V1Pod[]): V1Pod | undefined {
  return [...pods]
    .filter((p) => !p.metadata?.deletionTimestamp)
    .sort((a, b) => timeMs(b.metadata?.creationTimestamp) - timeMs(a.metadata?.creationTimestamp))[0];
}

export function diagnoseStart(obs: StartObservation): Diagnosis {
  const pod = currentPod(obs.pods);
  const progress = startProgress(pod, obs);
  const problem = claimProblem(obs.claims) ?? (pod ? podProblem(pod, obs.now) : undefined);
  const recheckAfterMs = pod && !problem ? readinessRecheck(pod, obs.now) : undefined;
  return {
    ...(problem ? { problem } : {}),
    ...(progress ? { progress } : {}),
    ...(recheckAfterMs !== undefined ? { recheckAfterMs } : {}),
  };
}

function claimProblem(claims: readonly ClaimState[]): Problem | undefined {
  for (const { volume, claim, provisioningMessage } of claims) {
    if (claim?.status?.phase !== "Pending" || !provisioningMessage) continue;
    const storageClass = claim.spec?.storageClassName;
    const cls = storageClass ? ` (storage class "${storageClass}")` : " (the default storage class)";
    return {
      reason: StartProblems.VolumeProvisioningFailed,
      message: `The volume "${volume}"${cls} cannot be provisioned: ${provisioningMessage}`,
    };
  }
  return undefined;
}

const condition = (pod: V1Pod, type: string): V1PodCondition | undefined =>
  pod.status?.conditions?.find((c) => c.type === type);

function podProblem(pod: V1Pod, now: Date): Problem | undefined {
  const scheduled = condition(pod, "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    return {
      reason: StartProblems.Unschedulable,
      message: `No node can take the environment: ${schedulerReasons(scheduled.message) || "the scheduler found none"}`,
    };
  }
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const s of statuses) {
    const problem = containerProblem(s);
    if (problem) return problem;
  }
  const ready = condition(pod, "Ready");
  const running = pod.status?.containerStatuses ?? [];
  if (ready?.status !== "True" && running.length > 0 && running.every((s) => s.state?.running)) {
    const runningMs = now.getTime() - lastStart(running);
    if (runningMs >= READINESS_GRACE_MS) {
      const notReady = running.filter((s) => !s.ready).map((s) => `"${s.name}"`);
      return {
        reason: StartProblems.ReadinessProbeFailing,
        // No running time in the words: the message must not change while nothing else does.
        message: `The environment has been running for more than ${READINESS_GRACE_MS / 1000} s but does not pass its readiness check (container ${notReady.join(", ")}): it may still be starting inside, or the check may not fit the app`,
      };
    }
  }
  return undefined;
}

/**
 * The scheduler's reasons without its node counts: "0/3 nodes are available: 2 Insufficient cpu,
 * 1 node(s) had untolerated taint {t: }. preemption: 0/3 nodes are available: 3 Preemption is not
 * helpful for scheduling." says "Insufficient cpu, node(s) had untolerated taint {t: }". The scheduler
 * rewrites its message whenever a node comes or goes (the counts change); copied as it is, every
 * stuck Userland's status was written again for each such node, in a class as in the tests
 * (operator/test/lifecycle.test.ts saw it while another file added a node).
 */
export function schedulerReasons(message: string | undefined): string {
  const reasons = (message ?? "")
    .replace(/^\s*\d+\/\d+ nodes are available:\s*/, "")
    .replace(/\s*(?:pod group )?preemption:[\s\S]*$/, "")
    .trim()
    .replace(/\.$/, "");
  // Each reason but the first follows ", " and starts with its count.
  return reasons
    .split(/, (?=\d+ )/)
    .map((reason) => reason.replace(/^\d+ /, ""))
    .join(", ");
}

function containerProblem(s: V1ContainerStatus): Problem | undefined {
  const waiting = s.state?.waiting;
  if (waiting?.reason && IMAGE_PULL.has(waiting.reason)) {
    return {
      reason: StartProblems.ImagePullFailed,
      message: `The image "${s.image}" of container "${s.name}" cannot be pulled${waiting.message ? `: ${waiting.message}` : ` (${waiting.reason})`}`,
    };
  }
  if (waiting?.reason && CANNOT_START.has(waiting.reason)) {
    return {
      reason: StartProblems.ContainerCannotStart,
      message: `The container "${s.name}" cannot start: ${waiting.message ?? waiting.reason}`,
    };
  }
  // Exited with an error: now (about to be restarted), or before the back-off it waits in.
  const terminated =
    s.state?.terminated ?? (waiting?.reason === "CrashLoopBackOff" ? s.lastState?.terminated : undefined);
  if (terminated && (terminated.exitCode !== 0 || waiting?.reason === "CrashLoopBackOff")) {
    const how =
      terminated.signal !== undefined && terminated.signal !== 0
        ? `signal ${terminated.signal}`
        : `exit code ${terminated.exitCode}`;
    const why = terminated.reason && terminated.reason !== "Error" ? `, ${terminated.reason}` : "";
    const restarts =
      s.restartCount > 0 ? `; restarted ${s.restartCount} time${s.restartCount === 1 ? "" : "s"}` : "";
    const output = tail(terminated.message);
    return {
      reason: StartProblems.ContainerCrashing,
      message: `The container "${s.name}" stopped with ${how}${why}${restarts}.${output ? ` Its last output:\n${output}` : ""}`,
    };
  }
  return undefined;
}

/** The end of a container's output: its last lines, at most OUTPUT_TAIL_CHARS. */
function tail(text: string | undefined): string {
  const lines = (text ?? "").trimEnd().split("\n").slice(-OUTPUT_TAIL_LINES).join("\n");
  return lines.length > OUTPUT_TAIL_CHARS ? `…${lines.slice(-OUTPUT_TAIL_CHARS)}` : lines;
}

const lastStart = (statuses: readonly V1ContainerStatus[]): number =>
  Math.max(...statuses.map((s) => timeMs(s.state?.running?.startedAt)));

function readinessRecheck(pod: V1Pod, now: Date): number | undefined {
  const running = pod.status?.containerStatuses ?? [];
  if (condition(pod, "Ready")?.status === "True" || running.length === 0) return undefined;
  if (!running.every((s) => s.state?.running)) return undefined;
  const due = lastStart(running) + READINESS_GRACE_MS - now.getTime();
  return Number.isFinite(due) ? Math.max(due, 0) + 100 : undefined;
}

/**
 * The steps reached by this start. Times the pod records are its own; a claim's binding and the
 * Service's routing have no time in any object, so they are the time the operator first saw them,
 * kept from the previous progress of the same start.
 */
function startProgress(pod: V1Pod | undefined, obs: StartObservation): StartProgress | undefined {
  if (!pod) return undefined;
  const created = timeMs(pod.metadata?.creationTimestamp);
  if (!Number.isFinite(created)) return undefined;
  const since = kubeTime(new Date(created));
  const sameStart = (p: StartProgress | undefined) => (p?.since === since ? p : undefined);
  const earlier = [sameStart(obs.previous), sameStart(obs.remembered)];
  const seen = (step: StartStep) =>
    earlier.map((p) => p?.steps.find((s) => s.step === step)?.at).find((at) => at !== undefined) ??
    kubeTime(obs.now);
  const steps: StartProgress["steps"] = [];
  const at = (time: Date | string | undefined) => {
    const ms = timeMs(time);
    return Number.isFinite(ms) ? kubeTime(new Date(ms)) : undefined;
  };
  const scheduled = condition(pod, "PodScheduled");
  if (scheduled?.status === "True") {
    steps.push({ step: "Scheduled", at: at(scheduled.lastTransitionTime) ?? seen("Scheduled") });
  }
  if (obs.claims.length > 0 && obs.claims.every((c) => c.claim?.status?.phase === "Bound")) {
    steps.push({ step: "VolumeBound", at: seen("VolumeBound") });
  }
  const containers = pod.status?.containerStatuses ?? [];
  if (containers.length > 0 && containers.every((s) => s.state?.running)) {
    steps.push({
      step: "ContainerStarted",
      at: at(new Date(lastStart(containers))) ?? seen("ContainerStarted"),
    });
    const ready = condition(pod, "Ready");
    if (ready?.status === "True") {
      steps.push({ step: "AppReady", at: at(ready.lastTransitionTime) ?? seen("AppReady") });
      if (obs.routable) steps.push({ step: "Reachable", at: seen("Reachable") });
    }
  }
  return { since, steps };
}
