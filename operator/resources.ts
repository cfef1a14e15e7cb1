/**
 * The API resources the operator reads and writes, and their paths: the one place that spells out
 * a group, version and plural. Template and Userland take theirs from api/.
 */
import {
  ARCHIVES,
  ASSIGNMENTS,
  CLASS_ARCHIVES,
  EXAMS,
  GROUP,
  SUBMISSIONS,
  TEMPLATES,
  USERLANDS,
  VERSION,
} from "../api/v1alpha1/index.ts";
import { paths } from "../api/kubePaths.ts";

export interface Resource {
  group: string;
  version: string;
  plural: string;
  /** The collection path in `namespace`, or one object's path (and a subresource's). */
  path(namespace: string, name?: string, subresource?: string): string;
}

const resource = (group: string, version: string, plural: string): Resource => ({
  group,
  version,
  plural,
  path: (namespace, name, subresource) =>
    paths.namespaced(group, version, plural, namespace, name, subresource),
});

export const resources = {
  Template: resource(GROUP, VERSION, TEMPLATES),
  Userland: resource(GROUP, VERSION, USERLANDS),
  Assignment: resource(GROUP, VERSION, ASSIGNMENTS),
  Submission: resource(GROUP, VERSION, SUBMISSIONS),
  Archive: resource(GROUP, VERSION, ARCHIVES),
  ClassArchive: resource(GROUP, VERSION, CLASS_ARCHIVES),
  Exam: resource(GROUP, VERSION, EXAMS),
  NetworkPolicy: resource("networking.k8s.io", "v1", "networkpolicies"),
  Deployment: resource("apps", "v1", "deployments"),
  Service: resource("", "v1", "services"),
  PersistentVolumeClaim: resource("", "v1", "persistentvolumeclaims"),
  EndpointSlice: resource("discovery.k8s.io", "v1", "endpointslices"),
  Pod: resource("", "v1", "pods"),
  VolumeSnapshot: resource("snapshot.storage.k8s.io", "v1", "volumesnapshots"),
  Lease: resource("coordination.k8s.io", "v1", "leases"),
  Event: resource("", "v1", "events"),
  LocalSubjectAccessReview: resource("authorization.k8s.io", "v1", "localsubjectaccessreviews"),
} as const;

/** `apiVersion` of an object of `resource`. */
export const apiVersionOf = (r: Resource): string => (r.group ? `${r.group}/${r.version}` : r.version);
