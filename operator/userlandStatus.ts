/**
 * A Userland's status from what its sync found, and the Event a change of phase deserves. Pure:
 * no API calls and the clock passed in, so the same inputs always give the same status.
 */
import type { V1Deployment } from "@kubernetes/client-node";
import {
  CLASS_ARCHIVE_STOPPED_REASON,
  UserlandAnnotations,
  UserlandConditions,
  UserlandReasons,
  type Template,
  type Userland,
  type UserlandPhase,
  type UserlandStatus,
} from "../api/v1alpha1/index.ts";
import { findCondition, setCondition, timeMs } from "./conditions.ts";
import type { DesiredChildren } from "./desired.ts";
import type { Diagnosis } from "./startDiagnosis.ts";
import { kubeTime } from "../api/times.ts";

/** A failure reported in status that waits for a change instead of being retried. */
export interface Blocker {
  /** The condition it sets to False. */
  condition: string;
  reason: string;
  message: string;
}

/** What a sync saw and did: each part is missing when the sync did not get that far. */
interface SyncOutcome {
  template?: Template;
  desired?: DesiredChildren;
  deployment?: V1Deployment;
  /** The Service routes to a ready pod on the proxy's port (serviceRoutes.ts). */
  routable?: boolean;
  /** Where the start is and what stalls it (startDiagnosis.ts). */
  diagnosis?: Diagnosis;
  blocked?: Blocker;
}

export function computeStatus(userland: Userland, outcome: SyncOutcome, now: Date): UserlandStatus {
  const { template, desired, deployment, routable, diagnosis, blocked } = outcome;
  const previous = userland.status ?? {};
  let conditions = previous.conditions ?? [];
  const generation = userland.metadata.generation;
  const set = (type: string, status: "True" | "False", reason: string, message: string) => {
    conditions = setCondition(
      conditions,
      { type, status, reason, message, observedGeneration: generation },
      () => kubeTime(now),
    );
  };
  const templateName = userland.spec.templateName;
  const problem = diagnosis?.problem;

  if (blocked?.condition === UserlandConditions.TemplateAvailable) {
    set(UserlandConditions.TemplateAvailable, "False", blocked.reason, blocked.message);
  } else if (template) {
    set(
      UserlandConditions.TemplateAvailable,
      "True",
      "TemplateFound",
      `Template "${templateName}" is available`,
    );
  }

  let phase: UserlandPhase;
  let message: string;
  let readyReason: string;
  const enabled = userland.spec.enabled !== false;
  const stoppedReason = userland.metadata.annotations?.[UserlandAnnotations.stoppedReason];
  if (blocked) {
    phase = "Failed";
    message = blocked.message;
    readyReason = blocked.reason;
  } else if (!enabled) {
    phase = "Stopped";
    readyReason = stoppedReason ?? "Disabled";
    message =
      stoppedReason === "IdleTimeout"
        ? `Stopped after ${template?.spec.idleTimeout ?? "the idle timeout"} without activity; data is kept`
        : stoppedReason === CLASS_ARCHIVE_STOPPED_REASON
          ? "Stopped at the end of term: the class is being archived (its volumes read into the class's zip); data is kept"
          : "Stopped (spec.enabled is false); data is kept";
  } else if (!deployment) {
    phase = "Pending";
    readyReason = "Creating";
    message = "Creating the environment";
  } else {
    const status = deployment.status ?? {};
    const progressing = status.conditions?.find((c) => c.type === "Progressing");
    const current = (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0);
    if (progressing?.status === "False" && progressing.reason === "ProgressDeadlineExceeded") {
      phase = "Failed";
      // The cause, if known, is in the words and in the Stalled condition.
      readyReason = "ProgressDeadlineExceeded";
      message = `The environment did not start: ${problem?.message ?? progressing.message ?? ""}`.trim();
    } else if (
      current &&
      (status.updatedReplicas ?? 0) >= 1 &&
      (status.availableReplicas ?? 0) >= 1 &&
      (status.replicas ?? 0) === (status.updatedReplicas ?? 0)
    ) {
      if (routable === true) {
        phase = "Ready";
        readyReason = UserlandReasons.Available;
        message = "The environment is ready";
      } else {
        // The pod is ready but the Service does not send it traffic yet: the proxy's connection
        // would be refused, and the student would see an error page instead of a starting page.
        phase = "Starting";
        readyReason = UserlandReasons.ServiceNotRouting;
        message = "Starting: waiting for the Service to route to the pod";
      }
    } else if (problem) {
      // Still Starting: Kubernetes keeps trying, and a fix (an image pushed, a node added) needs
      // nothing from the operator. The reason and the words say what it waits for.
      phase = "Starting";
      readyReason = problem.reason;
      message = problem.message;
    } else {
      phase = "Starting";
      readyReason = "PodNotReady";
      message = "Starting: waiting for the pod to become ready";
    }
  }
  set(UserlandConditions.Ready, phase === "Ready" ? "True" : "False", readyReason, message);

  // Stalled appears with the first problem and then stays, False once the start gets further.
  const running = deployment !== undefined && enabled && !blocked;
  if (running && problem && phase !== "Ready")
    set(UserlandConditions.Stalled, "True", problem.reason, problem.message);
  else if (findCondition(conditions, UserlandConditions.Stalled))
    set(UserlandConditions.Stalled, "False", "NotStalled", "Nothing stalls the environment");

  const next: UserlandStatus = { phase, message, observedGeneration: generation, conditions };
  if (running && diagnosis?.progress) next.progress = diagnosis.progress;
  if (desired) next.service = { name: desired.names.service, port: desired.proxyPort };
  else if (previous.service) next.service = previous.service;
  return next;
}

/**
 * How long a new Userland's first status is held back: until it is Ready, or this long after its
 * Deployment was created if it is still starting then. Most environments start within it, so a new
 * Userland costs one status write (Ready) instead of two (Starting, then Ready), which at the start
 * of a class is a third of the operator's writes. Until then readers see no status, which the proxy
 * shows as starting and the user-manager as not reported yet.
 */
export const FIRST_STATUS_DELAY_MS = 10_000;

/** Milliseconds to hold `next` back before writing it (0: write it now); see FIRST_STATUS_DELAY_MS. */
export function firstStatusDelayMs(
  userland: Userland,
  next: UserlandStatus,
  deployment: V1Deployment | undefined,
  now: Date,
): number {
  // A stalled start is said at once: the student and the teacher are waiting for that.
  if (userland.status?.phase !== undefined || next.phase !== "Starting" || stallOf(next)) return 0;
  const created = timeMs(deployment?.metadata?.creationTimestamp);
  if (!Number.isFinite(created)) return 0;
  // Clamped: the API server's clock (creationTimestamp) need not agree with this one.
  return Math.min(Math.max(0, created + FIRST_STATUS_DELAY_MS - now.getTime()), FIRST_STATUS_DELAY_MS);
}

interface StatusEvent {
  type: "normal" | "warning";
  reason: string;
  message: string;
}

/**
 * Entering Failed is a warning and leaving it a recovery; a start that stalls is a warning once per
 * cause, and one that gets going again a recovery. Other changes are routine and not recorded.
 */
export function statusEvents(
  previous: UserlandStatus | undefined,
  next: UserlandStatus,
  /**
   * The stall reason the last sync saw ("" for none), when known: the cached status may not hold
   * the last write yet, and a sync right after it must not report the same cause again.
   */
  lastStall?: string,
): StatusEvent[] {
  const events: StatusEvent[] = [];
  const phaseEvent = phaseChangeEvent(previous, next);
  if (phaseEvent) events.push(phaseEvent);
  const cached = findCondition(previous?.conditions, UserlandConditions.Stalled);
  const before = lastStall ?? (cached?.status === "True" ? cached.reason : "");
  const after = findCondition(next.conditions, UserlandConditions.Stalled);
  const wasStalled = before !== "";
  const stalled = after?.status === "True";
  if (stalled && before !== after.reason)
    events.push({ type: "warning", reason: after.reason, message: after.message });
  else if (wasStalled && !stalled && !phaseEvent)
    events.push({ type: "normal", reason: "Recovered", message: next.message ?? "" });
  return events;
}

/** Entering Failed is a warning and leaving it a recovery; other phase changes are routine and not recorded. */
/** The reason of `status`'s Stalled condition if it is True, else "". */
export function stallOf(status: UserlandStatus): string {
  const stalled = findCondition(status.conditions, UserlandConditions.Stalled);
  return stalled?.status === "True" ? stalled.reason : "";
}

export function phaseChangeEvent(
  previous: UserlandStatus | undefined,
  next: UserlandStatus,
): StatusEvent | undefined {
  const before = previous?.phase;
  if (before === next.phase || (next.phase !== "Failed" && before !== "Failed")) return undefined;
  const message = next.message ?? "";
  if (next.phase !== "Failed") return { type: "normal", reason: "Recovered", message };
  const reason = findCondition(next.conditions, UserlandConditions.Ready)?.reason ?? "Failed";
  return { type: "warning", reason, message };
}
