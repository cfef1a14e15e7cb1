/**
 * The Kubernetes rights the user-manager's own ServiceAccount needs, in one place: the chart's Role
 * and ClusterRole grant exactly these (test/permissions.test.ts renders the chart and compares), the
 * README's table lists them, and the service checks them at start-up (with SelfSubjectAccessReviews,
 * which every authenticated identity may ask) so a missing rule is a clear log line instead of a
 * puzzling 500 later.
 */
import type { KubeRest } from "../../lib/kubeRest.ts";
import {
  ARCHIVES,
  ASSIGNMENTS,
  CLASS_ARCHIVES,
  EXAMS,
  GROUP,
  SUBMISSIONS,
  TEMPLATES,
  USERLANDS,
} from "../../api/v1alpha1/index.ts";

export interface Permission {
  group: string;
  resource: string;
  verb: string;
  /** Namespaced: granted by a Role in the managed namespace; otherwise a ClusterRole. */
  namespaced: boolean;
  why: string;
}

export const REQUIRED_PERMISSIONS: readonly Permission[] = [
  {
    group: "authentication.k8s.io",
    resource: "tokenreviews",
    verb: "create",
    namespaced: false,
    why: "authenticate callers' bearer tokens",
  },
  {
    group: "authorization.k8s.io",
    resource: "localsubjectaccessreviews",
    verb: "create",
    namespaced: true,
    why: "ask RBAC what a caller may do",
  },
  ...(["get", "list", "create", "patch", "delete"] as const).map((verb) => ({
    group: GROUP,
    resource: USERLANDS,
    verb,
    namespaced: true,
    why: "manage Userlands",
  })),
  {
    group: GROUP,
    resource: USERLANDS,
    verb: "watch",
    namespaced: true,
    why: "know ended sessions (their marks on Userlands) without a list per console request",
  },
  {
    group: GROUP,
    resource: TEMPLATES,
    verb: "get",
    namespaced: true,
    why: "check that a Template exists",
  },
  ...(["get", "list", "create", "update"] as const).map((verb) => ({
    group: GROUP,
    resource: ASSIGNMENTS,
    verb,
    namespaced: true,
    why: "create assignments and raise their release for teachers RBAC allowed",
  })),
  ...(["get", "list", "patch"] as const).map((verb) => ({
    group: GROUP,
    resource: SUBMISSIONS,
    verb,
    namespaced: true,
    why: "show hand-ins and set a student's hand-in request",
  })),
  ...(["get", "create", "delete"] as const).map((verb) => ({
    group: GROUP,
    resource: ARCHIVES,
    verb,
    namespaced: true,
    why: "ask the operator for a download's archive pod, see where it listens, and remove it after",
  })),
  ...(["get", "list", "create", "patch"] as const).map((verb) => ({
    group: GROUP,
    resource: CLASS_ARCHIVES,
    verb,
    namespaced: true,
    why: "archive a class and end it (spec.end with the dry run's hash) for teachers RBAC allowed",
  })),
  ...(["get", "list", "create"] as const).map((verb) => ({
    group: GROUP,
    resource: EXAMS,
    verb,
    namespaced: true,
    why: "schedule and show exams for teachers RBAC allowed",
  })),
  {
    group: "",
    resource: "events",
    verb: "create",
    namespaced: true,
    why: "record teachers' visits as Events on the Userland",
  },
];

/** The required permissions this client lacks (empty when all is well). */
export async function missingPermissions(rest: KubeRest, namespace: string): Promise<Permission[]> {
  const missing: Permission[] = [];
  for (const p of REQUIRED_PERMISSIONS) {
    const review = await rest.create<{ status?: { allowed?: boolean } }>(
      "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: {
          resourceAttributes: {
            group: p.group,
            resource: p.resource,
            verb: p.verb,
            ...(p.namespaced ? { namespace } : {}),
          },
        },
      },
    );
    if (review.status?.allowed !== true) missing.push(p);
  }
  return missing;
}

export function describePermission(p: Permission, namespace: string): string {
  const where = !p.namespaced || namespace === "" ? " (cluster-wide)" : ` in namespace "${namespace}"`;
  return `${p.verb} ${p.resource}.${p.group}${where}: to ${p.why}`;
}
