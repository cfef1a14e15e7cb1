/**
 * Which deadline applies to a student (docs/decisions/0015-grading.md): their extension's, else the
 * assignment's. The operator collects at it and marks lateness by it; the user-manager refuses a
 * hand-in after it and shows it; the grade book takes the late penalty from it. Pure.
 */
import type { Assignment } from "./v1alpha1/index.ts";

export interface StudentDeadline {
  /** Hand-ins after it are late. */
  deadline?: string;
  /** Late hand-ins are accepted until then. */
  lateUntil?: string;
  /** When outstanding work is collected and hand-ins stop: lateUntil, else the deadline. */
  closesAt?: string;
  /** It is the student's own (an extension). */
  extended: boolean;
}

/** `user` undefined: the assignment's own times, as everyone without an extension has them. */
export function deadlineFor(a: Assignment, user: string | undefined): StudentDeadline {
  const own = user === undefined ? undefined : a.spec.extensions?.find((e) => e.user === user);
  const deadline = own ? own.deadline : a.spec.deadline;
  const lateUntil = own ? own.lateUntil : a.spec.lateUntil;
  return {
    ...(deadline !== undefined ? { deadline } : {}),
    ...(lateUntil !== undefined ? { lateUntil } : {}),
    ...(lateUntil !== undefined || deadline !== undefined ? { closesAt: lateUntil ?? deadline } : {}),
    extended: own !== undefined,
  };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The percentage a late hand-in at `handedInAt` loses: percentPerDay for each day or part of one
 * after the student's deadline, at most maxPercent (default 100); 0 when on time or without a rule.
 */
export function latePenaltyPercent(a: Assignment, user: string, handedInAt: string): number {
  const rule = a.spec.latePenalty;
  const { deadline } = deadlineFor(a, user);
  if (!rule || deadline === undefined) return 0;
  const lateMs = Date.parse(handedInAt) - Date.parse(deadline);
  if (!(lateMs > 0)) return 0;
  return Math.min(rule.maxPercent ?? 100, Math.ceil(lateMs / DAY_MS) * rule.percentPerDay);
}
