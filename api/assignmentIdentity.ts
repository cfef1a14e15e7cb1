/**
 * An Assignment is its uid, not its name (issue 41 item 6): a teacher may delete one and create
 * another of the same name, and nothing of the first (its Submissions, hand-ins, feedback, grades)
 * may count for the second. Both the operator and the user-manager decide it here. Pure.
 */
import type { Assignment, AssignmentStatus, Submission } from "./v1alpha1/index.ts";

/** The characters of the uid in a new Assignment's folder: 2^32 Assignments of one name before a clash is likely. */
const UID_CHARACTERS = 8;

/** Path segments are at most 255 bytes; names may be 253 characters (the uid's part is kept whole). */
const SEGMENT_MAX = 255;

/**
 * The folder a new Assignment gets in its Template's collection (published/, handins/, feedback/,
 * grades/, autograders/): its name and the start of its uid, so a later Assignment of the same
 * name never finds the first one's files.
 */
export function newCollectionFolder(a: Assignment): string {
  const uid = (a.metadata.uid ?? "").replaceAll("-", "").slice(0, UID_CHARACTERS);
  const name = (a.metadata.name ?? "").slice(0, SEGMENT_MAX - UID_CHARACTERS - 1);
  return `${name}-${uid}`;
}

/**
 * The folder the operator chose at the Assignment's first sync (status.collectionFolder). One
 * synced before folders were bound to uids has conditions but no folder: it keeps its name.
 * undefined: not synced yet, nothing of it is in the collection. `status`: the one a sync is
 * writing, when it is not the object's yet.
 */
export function collectionFolderOf(
  a: Assignment,
  status: AssignmentStatus | undefined = a.status,
): string | undefined {
  if (status?.collectionFolder) return status.collectionFolder;
  return (status?.conditions?.length ?? 0) > 0 ? (a.metadata.name ?? "") : undefined;
}

/** The Assignment a Submission is owned by: its uid. undefined for a hand-made one not adopted yet. */
export const owningAssignmentUid = (s: Submission): string | undefined =>
  s.metadata.ownerReferences?.find((r) => r.kind === "Assignment")?.uid;

/**
 * Whether the Submission is of this Assignment, not of an earlier one of the same name that is
 * being deleted: the uid of its owner decides. A hand-made one (kubectl) has none until the
 * operator adopts it, as a ReplicaSet adopts pods; it goes with the Assignment that adopted it.
 */
export function submissionIsOf(s: Submission, a: Assignment): boolean {
  if (s.spec.assignment !== a.metadata.name || s.metadata.namespace !== a.metadata.namespace) return false;
  const owner = owningAssignmentUid(s);
  return owner === undefined || owner === a.metadata.uid;
}
