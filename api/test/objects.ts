/** Assignments and Submissions as tests of the pure rules need them: the required fields, then theirs. */
import type { Assignment, Submission } from "../v1alpha1/index.ts";

/** An Assignment "calc" of Template "lab" with `spec` on top. */
export const assignmentOf = (spec: Partial<Assignment["spec"]> = {}): Assignment => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name: "calc" },
  spec: { templateName: "lab", title: "Calculator", source: { folder: "course", path: "calc" }, ...spec },
});

/** ann's Submission of "calc" with `spec` on top, and `status` when given. */
export const submissionOf = (
  spec: Partial<Submission["spec"]> = {},
  status?: Submission["status"],
): Submission => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Submission",
  metadata: { name: "calc-ann" },
  spec: { assignment: "calc", user: "ann", ...spec },
  ...(status ? { status } : {}),
});
