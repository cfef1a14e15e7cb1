/** Appointing course teachers in tests the way an admin does: the chart's ClusterRole, a RoleBinding. */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { renderChartRbac } from "../../cluster/chartRbac.ts";
import { SESSION_GROUP_PREFIX_DEFAULT, SESSION_USER_PREFIX_DEFAULT } from "../../lib/sessionSubjects.ts";
import { paths } from "../../api/kubePaths.ts";
import { testCluster } from "./cluster.ts";
import { adminRest } from "./resources.ts";

const CLUSTER_ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const roleBindingsPath = (ns: string, name?: string) =>
  paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", ns, name);

/** The chart's course-teacher ClusterRole, rendered by helm, under a name of this test's own. */
export async function chartCourseTeacherRole(t: TestContext, ns: string): Promise<string> {
  const { info } = await testCluster();
  const name = `${ns}-course-teacher`;
  const objects = await renderChartRbac({
    helm: join(info.binDir, "helm"),
    namespace: ns,
    release: "ul",
    values: {
      rbac: {
        templateAdminRoleName: `${ns}-template-admin`,
        teacherRoleName: `${ns}-teacher`,
        courseTeacherRoleName: name,
      },
    },
  });
  const role = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === name);
  assert.ok(role, "the chart renders the course-teacher ClusterRole");
  const rest = await adminRest();
  await rest.create(CLUSTER_ROLES, role);
  t.after(() => rest.delete(`${CLUSTER_ROLES}/${name}`).catch(() => undefined));
  return name;
}

/**
 * deploy/README.md's `kubectl create rolebinding … --clusterrole=<role> --user=userland:<user>`:
 * `user` teaches the Templates of `ns` (with `kind` "Group", everyone in the identity provider's
 * group `user`: `--group=userland:group:<group>`). Returns the RoleBinding's path (delete it to
 * revoke).
 */
export async function appointTeacher(
  ns: string,
  role: string,
  user: string,
  name: string,
  kind: "User" | "Group" = "User",
): Promise<string> {
  const rest = await adminRest();
  await rest.create(roleBindingsPath(ns), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [
      {
        apiGroup: "rbac.authorization.k8s.io",
        kind,
        name: (kind === "User" ? SESSION_USER_PREFIX_DEFAULT : SESSION_GROUP_PREFIX_DEFAULT) + user,
      },
    ],
  });
  return roleBindingsPath(ns, name);
}

export { LAB_COLLECTION, LAB_HOME, realNodeLabTemplate } from "../../cluster/harness/labTemplate.ts";

/**
 * A folder's receipt hash recomputed with coreutils alone, in the current directory of a shell on
 * the node (the manifest rule of coursework/files/manifest.ts): prints the SHA-256 in hex.
 */
export const MANIFEST_SHA256_SCRIPT = `find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0r sha256sum | sha256sum | cut -d' ' -f1`;
