/**
 * What a student may see of their grade (docs/decisions/0015-grading.md), decided here, in the
 * user-manager, so that nothing else reaches their page: Gradescope's visibility rules, with the
 * teacher's release as the gate. Pure.
 *
 * - Before spec.gradesReleased: nothing, or with spec.autograder.visibleTestsAfterHandIn the tests
 *   the autograder marks `visible` (no total: hidden tests would show in it).
 * - After: the score (api/scores.ts: autograder plus rubric, less the late penalty), the rubric
 *   items applied and the comment, and the tests marked `visible`, `after_published`, and
 *   `after_due_date` once the student's own closing time has passed. `hidden`: never.
 */
import { deadlineFor } from "../../api/deadlines.ts";
import { scoreOf } from "../../api/scores.ts";
import type { Assignment, Submission } from "../../api/v1alpha1/index.ts";

export interface StudentGrade {
  released: boolean;
  /** After the late penalty; null before the release. */
  score: number | null;
  maxScore: number | null;
  latePenaltyPercent: number;
  /** The rubric items applied, after the release. */
  rubric: { points: number; description: string }[];
  /** The teacher's comment, after the release. */
  comment: string | null;
  tests: { name: string; score: number | null; maxScore: number | null; passed: boolean | null }[];
}

export function studentGrade(a: Assignment, s: Submission, now: Date): StudentGrade | null {
  const grade = s.status?.grade;
  if (!grade && !s.spec.review) return null;
  const released = a.spec.gradesReleased === true;
  if (!released && !a.spec.autograder?.visibleTestsAfterHandIn) return null;
  const closesAt = deadlineFor(a, s.spec.user).closesAt;
  const closed = closesAt !== undefined && now.getTime() >= Date.parse(closesAt);
  const shown = (visibility: string | undefined): boolean => {
    const v = visibility ?? "visible";
    if (v === "visible") return true;
    if (!released) return false;
    return v === "after_published" || (v === "after_due_date" && closed);
  };
  const score = released ? scoreOf(a, s) : undefined;
  return {
    released,
    score: score ? score.final : null,
    maxScore: score ? score.maxScore : null,
    latePenaltyPercent: score ? score.latePenaltyPercent : 0,
    rubric: score ? score.items.map((i) => ({ points: i.points, description: i.description })) : [],
    comment: released ? (s.spec.review?.comment ?? null) : null,
    tests: (grade?.tests ?? [])
      .filter((t) => shown(t.visibility))
      .map((t) => ({
        name: t.name,
        score: t.score ?? null,
        maxScore: t.maxScore ?? null,
        passed: t.status === undefined ? null : t.status === "passed",
      })),
  };
}
