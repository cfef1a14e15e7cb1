/** Appointing course teachers in tests the way an admin does: the chart's ClusterRole, a RoleBinding. */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { renderChartRbac } from "../../cluster/chartRbac.ts";
import { SESSION_USER_PREFIX_DEFAULT } from "../../lib/sessionSubjects.ts";
import { paths } from "../../api/kubePaths.ts";
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";
import { testCluster } from "./cluster.ts";
import { LOCAL_PATH_STORAGE_CLASS, onRealNode } from "./realNode.ts";
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
 * `user` teaches the Templates of `ns`. Returns the RoleBinding's path (delete it to revoke).
 */
export async function appointTeacher(ns: string, role: string, user: string, name: string): Promise<string> {
  const rest = await adminRest();
  await rest.create(roleBindingsPath(ns), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: SESSION_USER_PREFIX_DEFAULT + user },
    ],
  });
  return roleBindingsPath(ns, name);
}

/** Where the real-node coursework tests' environments keep a student's work and see the collection. */
export const LAB_HOME = "/home/student";
export const LAB_COLLECTION = "/srv/collection";

const labClaim = {
  storageClassName: LOCAL_PATH_STORAGE_CLASS,
  accessModes: ["ReadWriteOnce"],
  resources: { requests: { storage: "64Mi" } },
};

/**
 * A Template with coursework for the real node: busybox's httpd from the node's tools image as the
 * "IDE", the student's user (distributed files must be theirs to edit), a home volume and a
 * collection, and a course folder at `courseMountPath` when given.
 */
export function realNodeLabTemplate(
  image: string,
  displayName: string,
  courseMountPath?: string,
): TemplateSpec {
  return {
    displayName,
    template: {
      spec: {
        ...onRealNode,
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        // busybox httpd as PID 1 ignores SIGTERM: stopping an environment must not take the 30 s grace period.
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "ide",
            image,
            imagePullPolicy: "Never",
            command: ["busybox", "httpd", "-f", "-p", "8080", "-h", "/srv"],
            ports: [{ containerPort: 8080, name: "http" }],
            volumeMounts: [{ name: "home", mountPath: LAB_HOME }],
          },
        ],
      },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    volumes: [{ name: "home", pvcSpec: labClaim }],
    coursework: {
      home: { volume: "home", mountPath: LAB_HOME },
      ...(courseMountPath
        ? { folders: [{ name: "course", mountPath: courseMountPath, pvcSpec: labClaim }] }
        : {}),
      collection: { mountPath: LAB_COLLECTION, pvcSpec: labClaim },
    },
  };
}
