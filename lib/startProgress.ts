/**
 * A start's progress (a Userland's status.progress, written by the operator) in words, the same
 * on the student's starting page and home page and in the teachers' console: each step reached and
 * how long it took, and how long the step it waits for has taken so far.
 */
import {
  StartProblems,
  StartSteps,
  UserlandConditions,
  type StartProblem,
  type StartProgress,
  type StartStep,
  type UserlandStatus,
} from "../api/v1alpha1/index.ts";

const LABELS: Record<StartStep, string> = {
  Scheduled: "placed on a node",
  VolumeBound: "volume ready",
  ContainerStarted: "image pulled, container started",
  AppReady: "app ready",
  Reachable: "answering",
};

/** What it waits for after each step (a volume may be bound before or after scheduling). */
const WAITING: Record<StartStep | "start", string> = {
  start: "waiting for a node",
  Scheduled: "pulling the image and starting the container",
  VolumeBound: "pulling the image and starting the container",
  ContainerStarted: "waiting for the app to answer its readiness check",
  AppReady: "waiting for the network to route to it",
  Reachable: "",
};

const seconds = (ms: number) => `${Math.max(0, Math.round(ms / 1000))} s`;

/**
 * "placed on a node 1 s, image pulled, container started 12 s, app ready 3 s; waiting for the
 * network to route to it (2 s so far)". Each step's time is the gap since the step before (or
 * since the start began). Empty without progress.
 */
export function progressText(progress: StartProgress | undefined, now: Date): string {
  if (!progress) return "";
  let previous = Date.parse(progress.since);
  if (!Number.isFinite(previous)) return "";
  const parts: string[] = [];
  let last: StartStep | "start" = "start";
  for (const { step, at } of progress.steps) {
    const ms = Date.parse(at);
    if (!Number.isFinite(ms) || !StartSteps.includes(step)) continue;
    parts.push(`${LABELS[step]} ${seconds(ms - previous)}`);
    previous = Math.max(previous, ms);
    last = step;
  }
  const waiting = WAITING[last];
  const done = parts.join(", ");
  if (!waiting) return done;
  const current = `${waiting} (${seconds(now.getTime() - previous)} so far)`;
  return done ? `${done}; ${current}` : current;
}

/** How long the last start took from its beginning to answering, when it got there. */
export function startDuration(progress: StartProgress | undefined): string | undefined {
  const reached = progress?.steps.find((s) => s.step === "Reachable");
  if (!progress || !reached) return undefined;
  const ms = Date.parse(reached.at) - Date.parse(progress.since);
  return Number.isFinite(ms) ? seconds(ms) : undefined;
}

/** The operator's Stalled condition while it is True. */
const stalledCondition = (status: UserlandStatus | undefined) =>
  status?.conditions?.find((c) => c.type === UserlandConditions.Stalled && c.status === "True");

/** The start cannot get further by itself (the operator's Stalled condition): its words stand out. */
export function isStalled(status: UserlandStatus | undefined): boolean {
  return stalledCondition(status) !== undefined;
}

/**
 * What a stalled start means to a student, in plain words and with what to do (issue 44 item 6):
 * the operator's message names images, nodes and storage classes, which only an admin can act on,
 * so it stays one click away on the page (and in `kubectl get`), never the page's words.
 */
const STUDENT_WORDS: Record<StartProblem, string> = {
  [StartProblems.Unschedulable]:
    "The cluster has no room for your environment right now. It starts by itself as soon as there is; if it is still waiting in a few minutes, tell your course administrator.",
  [StartProblems.ImagePullFailed]:
    "Your environment's software cannot be downloaded. Waiting will not help: tell your course administrator and send them the details below.",
  [StartProblems.VolumeProvisioningFailed]:
    "The storage for your files cannot be prepared. Waiting will not help: tell your course administrator and send them the details below.",
  [StartProblems.ContainerCannotStart]:
    "Your environment cannot be started as it is set up. Waiting will not help: tell your course administrator and send them the details below.",
  [StartProblems.ContainerCrashing]:
    "Your environment stops each time it starts. Tell your course administrator and send them the details below; your files are kept.",
  [StartProblems.ReadinessProbeFailing]:
    "Your environment is running but does not answer yet. It may still be getting ready; if this lasts a few minutes, tell your course administrator.",
};

/** The stalled start's cause (the Stalled condition's reason), if it is stalled for a known one. */
function stallReason(status: UserlandStatus | undefined): StartProblem | undefined {
  const reason = stalledCondition(status)?.reason as StartProblem | undefined;
  return reason !== undefined && Object.hasOwn(STUDENT_WORDS, reason) ? reason : undefined;
}

/** A stalled start's cause as a student reads it. */
export const studentWords = (reason: StartProblem): string => STUDENT_WORDS[reason];

/**
 * What a starting or failed page says of `status`: `message` in words for the student (a stalled
 * start's cause as studentWords says it), `detail` the operator's own message where the words
 * replace it (for the course administrator), and whether the start is stalled.
 */
export function startWords(status: UserlandStatus | undefined): {
  message: string;
  detail: string;
  stalled: boolean;
} {
  const reason = stallReason(status);
  const raw = status?.message ?? "";
  if (reason) return { message: studentWords(reason), detail: raw, stalled: true };
  return { message: raw, detail: "", stalled: isStalled(status) };
}
