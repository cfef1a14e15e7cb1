/**
 * What a student may see of their grade (docs/decisions/0015-grading.md), decided here alone: the
 * user-manager answers their page with it and the operator writes it into their feedback folder,
 * so nothing else reaches them. Gradescope's visibility rules, with the teacher's release as the
 * gate. Pure.
 *
 * - Before spec.gradesReleased: nothing, or with spec.autograder.visibleTestsAfterHandIn the tests
 *   the autograder marks `visible` (no total: hidden tests would show in it).
 * - After: the score (api/scores.ts: autograder plus rubric, less the late penalty), the rubric
 *   items applied and the comment, and the tests marked `visible`, `after_published`, and
 *   `after_due_date` once the student's own closing time has passed. `hidden`: never.
 */
import { deadlineFor } from "./deadlines.ts";
import { scoreOf } from "./scores.ts";
import type { Assignment, Submission } from "./v1alpha1/index.ts";

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

/**
 * The released grade as the file the student finds in assignments/<name>/feedback/grade.md: what
 * studentGrade lets them see, in words; undefined until the grades are released.
 */
export function gradeReport(a: Assignment, s: Submission, now: Date): string | undefined {
  const grade = studentGrade(a, s, now);
  if (!grade?.released) return undefined;
  const points = (n: number | null) => (n === null ? "" : String(n));
  const lines = [`# ${a.spec.title}: your grade`, ""];
  if (grade.score !== null)
    lines.push(
      `Score: ${grade.score}${grade.maxScore !== null ? ` of ${grade.maxScore}` : ""}` +
        (grade.latePenaltyPercent ? ` (less ${grade.latePenaltyPercent}% for lateness)` : ""),
      "",
    );
  else lines.push("No score: the autograder gave no result for your hand-in.", "");
  if (grade.rubric.length > 0)
    lines.push(
      "Rubric:",
      ...grade.rubric.map((r) => `- ${r.points >= 0 ? `+${r.points}` : r.points} ${r.description}`),
      "",
    );
  if (grade.comment)
    lines.push("Your teacher's comment:", "", ...grade.comment.split("\n").map((l) => `> ${l}`), "");
  if (grade.tests.length > 0)
    lines.push(
      "Tests:",
      ...grade.tests.map(
        (t) =>
          `- ${t.passed === null ? "ran" : t.passed ? "passed" : "failed"} ${t.name}` +
          (t.maxScore !== null ? ` (${points(t.score ?? 0)} of ${t.maxScore})` : ""),
      ),
      "",
    );
  const receipt = s.status?.receipt;
  if (receipt)
    lines.push(
      `Graded: your hand-in ${receipt.version > 1 ? `version ${receipt.version} ` : ""}of ${receipt.requestedAt}, SHA-256 ${receipt.sha256}.`,
    );
  return `${lines.join("\n").trimEnd()}\n`;
}
