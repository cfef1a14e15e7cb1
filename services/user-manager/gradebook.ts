/**
 * A class's grade book (docs/decisions/0015-grading.md): students × assignments, read from the
 * Assignments and Submissions alone (pure), and its CSV files in the shapes Canvas's and Moodle's
 * grade importers take as they are.
 *
 * A cell's score is api/scores.ts's: the autograder's part plus the rubric items applied, less the
 * late penalty; a cell with neither has no score (an empty cell in the CSV: "not graded", never a
 * zero).
 */
import { stringify } from "csv-stringify/sync";
import { deadlineFor } from "../../api/deadlines.ts";
import { versionsOf } from "../../api/handIns.ts";
import { scoreOf } from "../../api/scores.ts";
import type { Assignment, Submission } from "../../api/v1alpha1/index.ts";
import { handInState, type HandInState } from "../../api/handInState.ts";

export interface GradeBookColumn {
  name: string;
  title: string;
  /** The points the autograder's tests are worth (their max_score), when known. */
  points: number | null;
  deadline: string | null;
  /** Students see their grades (spec.gradesReleased). */
  released: boolean;
  /** Students with their own deadline (teachers only: notes included). */
  extensions: { user: string; deadline: string; lateUntil: string | null; note: string | null }[];
}

export interface GradeBookCell {
  state: HandInState;
  /** After the late penalty; null: no grade (yet). */
  score: number | null;
  /** The autograder's score before the penalty. */
  autograderScore: number | null;
  latePenaltyPercent: number;
  late: boolean;
  missing: boolean;
  extended: boolean;
  /** Hand-ins kept (versions). */
  versions: number;
  /** The version that counts; null: none handed in. */
  countedVersion: number | null;
  /** Test results in a line, for the feedback column. */
  summary: string;
  /** The autograder's score before a new autograder revision graded the hand-in again (null: none). */
  regradedFrom: number | null;
}

export interface GradeBookRow {
  user: string;
  cells: Record<string, GradeBookCell>;
}

export interface GradeBook {
  assignments: GradeBookColumn[];
  students: GradeBookRow[];
}

function cellOf(a: Assignment, user: string, s: Submission | undefined, now: Date): GradeBookCell {
  const state = handInState(a, s, now);
  const grade = s?.status?.grade;
  const score = s && scoreOf(a, s);
  const penalty = score?.latePenaltyPercent ?? 0;
  const tests = grade?.tests ?? [];
  const passed = tests.filter((t) => t.status === "passed").length;
  const parts = [
    grade
      ? `${grade.score}${grade.maxScore !== undefined ? `/${grade.maxScore}` : ""} by the autograder (${passed} of ${grade.testCount ?? tests.length} tests passed)`
      : "",
    s?.spec.review?.autograderScore !== undefined
      ? `autograder part set by hand to ${s.spec.review.autograderScore}`
      : "",
    ...(score?.items ?? []).map((i) => `${i.points >= 0 ? "+" : ""}${i.points} ${i.description}`),
    penalty ? `less ${penalty}% for lateness` : "",
  ].filter(Boolean);
  return {
    state,
    score: score ? score.final : null,
    autograderScore: score ? score.autograder : null,
    latePenaltyPercent: penalty,
    late: s?.status?.receipt?.late ?? false,
    missing: state === "missing",
    extended: deadlineFor(a, user).extended,
    versions: s ? versionsOf(s).length : 0,
    countedVersion: s?.status?.receipt?.version ?? null,
    summary: parts.join("; "),
    regradedFrom: grade?.previous && grade.previous.score !== grade.score ? grade.previous.score : null,
  };
}

/**
 * The book of `assignments` (in the order given) for every user who has a Submission of one of
 * them, sorted by user. `points` is the highest maxScore a grade of the assignment reports.
 */
export function gradeBook(
  assignments: readonly Assignment[],
  submissions: readonly Submission[],
  now: Date,
): GradeBook {
  const byAssignment = new Map<string, Map<string, Submission>>();
  const users = new Set<string>();
  for (const s of submissions) {
    const of = byAssignment.get(s.spec.assignment) ?? new Map<string, Submission>();
    of.set(s.spec.user, s);
    byAssignment.set(s.spec.assignment, of);
    if (assignments.some((a) => a.metadata.name === s.spec.assignment)) users.add(s.spec.user);
  }
  const columns = assignments.map((a) => {
    const maxima = [...(byAssignment.get(a.metadata.name ?? "")?.values() ?? [])]
      .map((s) => scoreOf(a, s)?.maxScore)
      .filter((m): m is number => m !== null && m !== undefined);
    return {
      name: a.metadata.name ?? "",
      title: a.spec.title,
      points: maxima.length > 0 ? Math.max(...maxima) : null,
      deadline: a.spec.deadline ?? null,
      released: a.spec.gradesReleased === true,
      extensions: (a.spec.extensions ?? []).map((e) => ({
        user: e.user,
        deadline: e.deadline,
        lateUntil: e.lateUntil ?? null,
        note: e.note ?? null,
      })),
    };
  });
  const students = [...users].sort().map((user) => ({
    user,
    cells: Object.fromEntries(
      assignments.map((a) => [
        a.metadata.name ?? "",
        cellOf(a, user, byAssignment.get(a.metadata.name ?? "")?.get(user), now),
      ]),
    ),
  }));
  return { assignments: columns, students };
}

const scoreText = (cell: GradeBookCell | undefined): string =>
  cell?.score === null || cell?.score === undefined ? "" : String(cell.score);

/**
 * Canvas's gradebook import: `Student, ID, SIS User ID, SIS Login ID, Section`, then one
 * `Title (id)` column per assignment, and a second row `Points Possible` with each assignment's
 * points. Canvas matches a row by its ID, SIS User ID or SIS Login ID; the platform knows the
 * sign-in identity alone, so it goes in SIS Login ID (where a university's Canvas logins are its
 * single sign-on names, as they usually are) and the Canvas-only columns stay empty. A column whose
 * id Canvas does not know becomes a new assignment there.
 */
export function canvasCsv(book: GradeBook): string {
  const header = [
    "Student",
    "ID",
    "SIS User ID",
    "SIS Login ID",
    "Section",
    ...book.assignments.map((a) => `${a.title} (${a.name})`),
  ];
  const points = [
    "Points Possible",
    "",
    "",
    "",
    "",
    ...book.assignments.map((a) => (a.points === null ? "" : String(a.points))),
  ];
  const rows = book.students.map((s) => [
    s.user,
    "",
    "",
    s.user,
    "",
    ...book.assignments.map((a) => scoreText(s.cells[a.name])),
  ]);
  return stringify([header, points, ...rows]);
}

/**
 * Moodle's grade import (Grades → Import → CSV file): one row per student, mapped by `Email address`
 * (or `ID number`), and per assignment a grade column and a feedback column the teacher maps to the
 * grade item and its feedback. The identity fills Email address when it is one, and ID number always.
 */
export function moodleCsv(book: GradeBook): string {
  const header = [
    "Email address",
    "ID number",
    ...book.assignments.flatMap((a) => [a.title, `${a.title} (feedback)`]),
  ];
  const rows = book.students.map((s) => [
    s.user.includes("@") ? s.user : "",
    s.user,
    ...book.assignments.flatMap((a) => [scoreText(s.cells[a.name]), s.cells[a.name]?.summary ?? ""]),
  ]);
  return stringify([header, ...rows]);
}

/** The CSV file of the book for `format`, with the name a download saves it under. */
export function gradeBookCsv(
  book: GradeBook,
  template: string,
  format: "canvas" | "moodle",
): { filename: string; text: string } {
  return {
    filename: `${template}-grades-${format}.csv`,
    text: format === "canvas" ? canvasCsv(book) : moodleCsv(book),
  };
}
