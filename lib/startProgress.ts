/**
 * A start's progress (a Userland's status.progress, written by the operator) in words, the same
 * on the student's starting page and home page and in the teachers' console: each step reached and
 * how long it took, and how long the step it waits for has taken so far.
 */
import {
  StartSteps,
  UserlandConditions,
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

/** The start cannot get further by itself (the operator's Stalled condition): its words stand out. */
export function isStalled(status: UserlandStatus | undefined): boolean {
  return (
    status?.conditions?.some((c) => c.type === UserlandConditions.Stalled && c.status === "True") === true
  );
}
