/**
 * The `npm start` teacher, appointed as the guides tell admins to (deploy/README.md, "Teachers"),
 * with every role a teacher's guide describes (issue 44 item 2): the class table and starting and
 * stopping (userland-teacher), assignments, grading, exams and the end of term
 * (userland-course-teacher), and opening a student's environment (userland-environment-visitor).
 * Both set-ups (the kwok demo and the real node) appoint it here, so the shipped teacher can teach.
 */
import { paths } from "../api/kubePaths.ts";
import type { KubeRest } from "../lib/kubeRest.ts";

/** Who signs in at the local identity provider as a teacher (the console); bound as userland:<name>. */
export const CONSOLE_TEACHER = "teacher";

/** The chart's ClusterRoles (their default names, charts/userland/values.yaml rbac.*RoleName). */
export const CONSOLE_TEACHER_ROLES = [
  "userland-teacher",
  "userland-course-teacher",
  "userland-environment-visitor",
] as const;

/** The RoleBinding that gives the console's teacher one of CONSOLE_TEACHER_ROLES. */
export const consoleTeacherBinding = (role: string): string => `console-${role}`;

/** One RoleBinding per role, to the console's session user (the user-manager's default prefix). */
export async function appointConsoleTeacher(rest: KubeRest, namespace: string): Promise<void> {
  for (const role of CONSOLE_TEACHER_ROLES)
    await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", namespace), {
      metadata: { name: consoleTeacherBinding(role) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [
        { kind: "User", name: `userland:${CONSOLE_TEACHER}`, apiGroup: "rbac.authorization.k8s.io" },
      ],
    });
}
