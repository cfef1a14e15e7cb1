/**
 * A hand-in's score (docs/decisions/0015-grading.md), computed the one way the grade book, the
 * student's page and the CSV files all show it: the autograder's part (a teacher's hand-set value
 * wins over the last good run), plus the points of the rubric items applied as the Assignment has
 * them now, less the late penalty the grade recorded. Pure.
 */
import type { Assignment, Submission } from "./v1alpha1/index.ts";

export interface Score {
  /** Before the late penalty. */
  total: number;
  /** After it: what the grade book exports. */
  final: number;
  /** The autograder's tests' max_score plus the rubric's positive points; null when neither is known. */
  maxScore: number | null;
  autograder: number | null;
  rubric: number;
  latePenaltyPercent: number;
  /** The applied items as the Assignment has them now (ids it no longer has are left out). */
  items: { id: string; points: number; description: string }[];
}

/** Rounds away binary fractions (0.1 + 0.2) without hiding a real hundredth. */
const round = (n: number): number => Math.round(n * 100) / 100;

/** undefined: nothing to score yet (no autograder result, no review). */
export function scoreOf(a: Assignment, s: Submission): Score | undefined {
  const grade = s.status?.grade;
  const review = s.spec.review;
  const autograder = review?.autograderScore ?? grade?.score ?? null;
  const applied = new Set(review?.items ?? []);
  const items = (a.spec.rubric ?? []).filter((i) => applied.has(i.id));
  if (autograder === null && !review) return undefined;
  const rubric = items.reduce((sum, i) => sum + i.points, 0);
  const positive = (a.spec.rubric ?? []).reduce((sum, i) => sum + Math.max(0, i.points), 0);
  const testsMax = grade?.maxScore;
  const maxScore = testsMax === undefined && positive === 0 ? null : round((testsMax ?? 0) + positive);
  const penalty = grade?.latePenaltyPercent ?? 0;
  const total = round((autograder ?? 0) + rubric);
  return {
    total,
    final: round(total * (1 - penalty / 100)),
    maxScore,
    autograder,
    rubric: round(rubric),
    latePenaltyPercent: penalty,
    items: items.map((i) => ({ id: i.id, points: i.points, description: i.description })),
  };
}
