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
  /**
   * Where it is granted: "served", by a Role in each managed namespace; "own", by a Role in the
   * service's own namespace (session records); "cluster", by a ClusterRole.
   */
  scope: "served" | "own" | "cluster";
  why: string;
}

export const REQUIRED_PERMISSIONS: readonly Permission[] = [
  {
    group: "authentication.k8s.io",
    resource: "tokenreviews",
    verb: "create",
    scope: "cluster",
    why: "authenticate callers' bearer tokens",
  },
  {
    group: "authorization.k8s.io",
    resource: "localsubjectaccessreviews",
    verb: "create",
    scope: "served",
    why: "ask RBAC what a caller may do",
  },
  ...(["get", "list", "create", "patch", "delete"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: USERLANDS,
    verb,
    scope: "served",
    why: "manage Userlands",
  })),
  ...(["get", "list", "watch", "create", "patch"] as const).map((verb): Permission => ({
    group: "",
    resource: "configmaps",
    verb,
    scope: "own",
    why: "write session records (ended sessions, api/sessions.ts) in its own namespace, and know them from a watch",
  })),
  {
    group: GROUP,
    resource: TEMPLATES,
    verb: "get",
    scope: "served",
    why: "check that a Template exists",
  },
  ...(["get", "list", "create", "update"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: ASSIGNMENTS,
    verb,
    scope: "served",
    why: "create assignments and raise their release for teachers RBAC allowed",
  })),
  ...(["get", "list", "patch"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: SUBMISSIONS,
    verb,
    scope: "served",
    why: "show hand-ins and set a student's hand-in request",
  })),
  ...(["get", "create", "delete"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: ARCHIVES,
    verb,
    scope: "served",
    why: "ask the operator for a download's archive pod, see where it listens, and remove it after",
  })),
  ...(["get", "list", "create", "patch"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: CLASS_ARCHIVES,
    verb,
    scope: "served",
    why: "archive a class and end it (spec.end with the dry run's hash) for teachers RBAC allowed",
  })),
  ...(["get", "list", "create", "patch"] as const).map((verb): Permission => ({
    group: GROUP,
    resource: EXAMS,
    verb,
    scope: "served",
    why: "schedule and show exams, and move their end (end early, extend), for teachers RBAC allowed",
  })),
  {
    group: "",
    resource: "events",
    verb: "create",
    scope: "served",
    why: "record teachers' visits as Events on the Userland",
  },
];

/**
 * The required permissions of `scope` this client lacks in `namespace` (empty when all is well):
 * "served" asks for those of a managed namespace and the cluster-wide ones, "own" for those of the
 * service's own namespace.
 */
export async function missingPermissions(
  rest: KubeRest,
  namespace: string,
  scope: "served" | "own" = "served",
): Promise<Permission[]> {
  const missing: Permission[] = [];
  const asked = REQUIRED_PERMISSIONS.filter(
    (p) => p.scope === scope || (scope === "served" && p.scope === "cluster"),
  );
  for (const p of asked) {
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
            ...(p.scope !== "cluster" ? { namespace } : {}),
          },
        },
      },
    );
    if (review.status?.allowed !== true) missing.push(p);
  }
  return missing;
}

export function describePermission(p: Permission, namespace: string): string {
  const where =
    p.scope === "cluster" || namespace === "" ? " (cluster-wide)" : ` in namespace "${namespace}"`;
  return `${p.verb} ${p.resource}.${p.group}${where}: to ${p.why}`;
}
