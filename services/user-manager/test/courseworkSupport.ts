/**
 * Coursework in tests: a Template whose students get assignments, a course teacher's rules, and
 * the writes the operator's controllers would make (Submissions and their status), for tests that
 * run without the operator (`rest`: another API server's admin, e.g. the local platform's).
 */
import { submissionNameFor } from "../../../api/naming.ts";
import { API_VERSION, type TemplateSpec } from "../../../api/v1alpha1/index.ts";
import type { k8s } from "../../../lib/kube.ts";
import type { KubeRest } from "../../../lib/kubeRest.ts";
import { adminRest, simpleTemplateSpec } from "../../../test/support/resources.ts";
import { submissionsPath, type Submission } from "../../../api/v1alpha1/index.ts";
import { TEACHER_RULES } from "./consoleSupport.ts";

const claim = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };

/** A Template whose students get assignments: course folders `course` and `shared`, and a collection. */
export const courseworkTemplateSpec = (collection = true): TemplateSpec =>
  simpleTemplateSpec("registry.invalid/jupyter:1", {
    displayName: "Jupyter",
    volumes: [{ name: "home", pvcSpec: { ...claim, accessModes: ["ReadWriteOnce"] } }],
    coursework: {
      home: { volume: "home", mountPath: "/home/jovyan" },
      ...(collection ? { collection: { pvcSpec: claim, mountPath: "/srv/collection" } } : {}),
      folders: [
        { name: "course", mountPath: "/srv/course", pvcSpec: claim },
        { name: "shared", mountPath: "/srv/shared", pvcSpec: claim },
      ],
    },
  });

/** A course teacher of `templates`: assignments and submissions in the namespace, the Templates' coursework. */
export const courseTeacherRules = (templates: string[]): k8s.V1PolicyRule[] => [
  ...TEACHER_RULES,
  { apiGroups: ["userland.dev"], resources: ["assignments"], verbs: ["get", "list", "create", "update"] },
  { apiGroups: ["userland.dev"], resources: ["submissions"], verbs: ["get", "list"] },
  { apiGroups: ["userland.dev"], resources: ["submissions/review"], verbs: ["update"] },
  {
    apiGroups: ["userland.dev"],
    resources: ["templates/coursework"],
    verbs: ["update"],
    resourceNames: templates,
  },
];

/** Stands in for the operator's Assignment controller: one Submission per student. */
export async function createSubmission(
  ns: string,
  assignment: string,
  user: string,
  rest?: KubeRest,
): Promise<Submission> {
  return (rest ?? (await adminRest())).create<Submission>(submissionsPath(ns), {
    apiVersion: API_VERSION,
    kind: "Submission",
    metadata: { name: submissionNameFor(assignment, user) },
    spec: { assignment, user },
  });
}

/**
 * Stands in for the operator's Submission controller: the status it reports after a copy pod. A
 * receipt given alone is the only version, as the operator reports a first hand-in.
 */
export async function reportSubmission(
  ns: string,
  assignment: string,
  user: string,
  status: NonNullable<Submission["status"]>,
  rest?: KubeRest,
): Promise<void> {
  const versions = status.versions ?? (status.receipt ? [status.receipt] : undefined);
  await (rest ?? (await adminRest())).patch(
    `${submissionsPath(ns, submissionNameFor(assignment, user))}/status`,
    { status: { ...status, ...(versions ? { versions } : {}) } },
  );
}
