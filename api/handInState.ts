/**
 * What a student's Submission means to people, decided from the objects alone (pure): the state a
 * teacher's hand-in table shows, whether the student may still hand in, and the receipt.
 */
import { deadlineFor } from "./deadlines.ts";
import { pendingHandIn } from "./handIns.ts";
import type { Assignment, Submission } from "./v1alpha1/index.ts";

export const HAND_IN_STATES = [
  "not-distributed",
  "open",
  "handing-in",
  "on-time",
  "late",
  "collected",
  "missing",
] as const;
export type HandInState = (typeof HAND_IN_STATES)[number];

/** How the console and the home page word each state. */
export const STATE_LABELS: Record<HandInState, string> = {
  "not-distributed": "not yet distributed",
  open: "working on it",
  "handing-in": "handing in",
  "on-time": "on time",
  late: "late",
  collected: "collected at closing",
  missing: "missing",
};

/**
 * When hand-ins stop being accepted for `user` (undefined: everyone without an extension):
 * lateUntil, else the deadline, their extension's if they have one; undefined: never.
 */
export function closesAt(assignment: Assignment, user: string | undefined): Date | undefined {
  const at = deadlineFor(assignment, user).closesAt;
  return at === undefined ? undefined : new Date(at);
}

export const isClosed = (assignment: Assignment, user: string | undefined, now: Date): boolean => {
  const at = closesAt(assignment, user);
  return at !== undefined && now.getTime() >= at.getTime();
};

/**
 * A student's state: a hand-in being collected is "handing in"; else the counted receipt decides
 * once there is one (a deadline collection that found no files is "missing": nothing was handed
 * in); past
 * the closing time without either, "missing"; otherwise whether their copy was handed out.
 */
export function handInState(
  assignment: Assignment,
  submission: Submission | undefined,
  now: Date,
): HandInState {
  const receipt = submission?.status?.receipt;
  // Handing in again: the new version is being collected.
  if (submission && pendingHandIn(submission)) return "handing-in";
  if (receipt) {
    if (receipt.by === "deadline") return receipt.files > 0 ? "collected" : "missing";
    return receipt.late ? "late" : "on-time";
  }
  if (isClosed(assignment, submission?.spec.user, now)) return "missing";
  return submission?.status?.distributedRelease === undefined &&
    submission?.status?.distributedAt === undefined
    ? "not-distributed"
    : "open";
}
