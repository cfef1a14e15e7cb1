/**
 * A student's hand-ins as versions (docs/decisions/0015-grading.md): until their closing time a
 * student may hand in again, up to the Assignment's maxVersions; each version is kept with its
 * receipt, and the last counts unless a teacher picks another (spec.review.countedVersion). The
 * operator collects by these rules, the user-manager answers students and teachers by them. Pure.
 */
import type { Assignment, Receipt, Submission } from "./v1alpha1/index.ts";

/** spec.maxVersions's default: the CRD's, for objects read before the API server applied it. */
export const DEFAULT_MAX_VERSIONS = 5;

export const maxVersionsOf = (a: Assignment): number => a.spec.maxVersions ?? DEFAULT_MAX_VERSIONS;

/** Every version collected so far, oldest first. */
export const versionsOf = (s: Submission): Receipt[] => s.status?.versions ?? [];

/**
 * The hand-in asked for and neither collected nor refused yet: its version and moment. A refused
 * request (status.refusedHandIn: over the limits, nothing to copy) stays refused: only a newer
 * request is pending (issue 41 item 5).
 */
export function pendingHandIn(s: Submission): { version: number; moment: string } | undefined {
  const moment = s.spec.handInRequestedAt;
  if (moment === undefined) return undefined;
  const versions = versionsOf(s);
  const last = versions.at(-1);
  if (last && Date.parse(last.requestedAt) >= Date.parse(moment)) return undefined;
  const refused = s.status?.refusedHandIn;
  if (refused && Date.parse(refused.requestedAt) >= Date.parse(moment)) return undefined;
  return { version: (last?.version ?? 0) + 1, moment };
}

/** The refused hand-in still unanswered by a newer version: what the student is told. */
export function refusedHandIn(s: Submission): NonNullable<Submission["status"]>["refusedHandIn"] {
  const refused = s.status?.refusedHandIn;
  const last = versionsOf(s).at(-1);
  if (!refused || (last && Date.parse(last.requestedAt) > Date.parse(refused.requestedAt))) return undefined;
  return refused;
}

/** The version that counts: the teacher's pick when it exists, else the last. */
export function countedReceipt(s: Submission): Receipt | undefined {
  const versions = versionsOf(s);
  const picked = s.spec.review?.countedVersion;
  return (picked !== undefined ? versions.find((v) => v.version === picked) : undefined) ?? versions.at(-1);
}

/**
 * Whether the student may hand in (again) now, or why not: a collection at the closing time is
 * final, a request being collected comes first, and the versions are bounded.
 */
export function handInRefusal(a: Assignment, s: Submission): string | undefined {
  if (s.spec.handInRequestedBy === "deadline") {
    const refused = refusedHandIn(s);
    return refused
      ? `the collection at the closing time was refused: ${refused.message}`
      : "the work was collected at the closing time";
  }
  if (pendingHandIn(s)) return "the last hand-in is still being collected";
  const max = maxVersionsOf(a);
  if (versionsOf(s).length >= max)
    return max === 1 ? "a hand-in is final for this assignment" : `all ${max} hand-ins are used`;
  return undefined;
}
