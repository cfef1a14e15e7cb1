/**
 * The coursework Template the real-node tests and the coursework benchmark's real-node run share:
 * busybox's httpd as the "IDE", a home volume, a course folder and a collection on local-path claims.
 */
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";
import { LOCAL_PATH_STORAGE_CLASS, onRealNode } from "../node/addons.ts";

/** Where the real-node coursework Template's environments keep a student's work and see the collection. */
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
