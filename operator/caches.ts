/**
 * What the operator reads: one informer per kind it works with, scoped to the namespaces it serves
 * (lib/namespaces.ts; owned children by the managed-by label), and the indexes its event handlers
 * and sync handlers look objects up by. Every key and index value carries the namespace, so
 * objects of the same name in two namespaces never meet.
 */
import type {
  V1ContainerStatus,
  V1ObjectMeta,
  V1Deployment,
  V1EndpointSlice,
  V1NetworkPolicy,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import { ANNOTATIONS, LABELS, MANAGED_BY } from "../api/naming.ts";
import {
  ExamMarks,
  type Archive,
  type Assignment,
  type ClassArchive,
  type Exam,
  type Submission,
  type Template,
  type Userland,
} from "../api/v1alpha1/index.ts";
import { Informer, namespacedKey, withoutManagedFields } from "../lib/informer.ts";
import type { k8s } from "../lib/kube.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { ServedNamespaces } from "../lib/namespaces.ts";
import { sessionRecordsInformer } from "../lib/sessionRecords.ts";
import type { SessionRecord } from "../api/sessions.ts";
import { resources, type Resource } from "./resources.ts";

export interface Caches {
  templates: Informer<Template>;
  userlands: Informer<Userland>;
  deployments: Informer<V1Deployment>;
  services: Informer<V1Service>;
  pvcs: Informer<V1PersistentVolumeClaim>;
  /** The EndpointSlices of the operator's Services: a Userland is Ready only once its Service routes. */
  endpointSlices: Informer<V1EndpointSlice>;
  /** Userlands' pods (they carry the Deployment's labels): where a start is and why it stalls. */
  pods: Informer<V1Pod>;
  assignments: Informer<Assignment>;
  submissions: Informer<Submission>;
  /** Downloads served once by archive pods (operator/coursework/syncArchive.ts). */
  archives: Informer<Archive>;
  /** Ends of terms (operator/coursework/syncClassArchive.ts). */
  classArchives: Informer<ClassArchive>;
  /** The operator's copy pods (operator/coursework/copyPods.ts), by their copy label. */
  copyPods: Informer<V1Pod>;
  /** Exams (operator/exams/). */
  exams: Informer<Exam>;
  /** Exams' NetworkPolicies (labelled with their exam): one deleted or edited is written again at once. */
  examPolicies: Informer<V1NetworkPolicy>;
  /** People's session records in the own namespace (api/sessions.ts): their groups, for who teaches. */
  sessionRecords: Informer<SessionRecord>;
}

/** Index.byExamMark values. */
export const examMarkKey = (namespacedExam: string) => `exam:${namespacedExam}`;
export const holdMarkKey = (holdValue: string) => `hold:${holdValue}`;

/** The label the EndpointSlice controller puts on every slice: the Service it belongs to. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** Index names; every index value is a "namespace/name" key (namespacedKey). */
export const Index = {
  /** On userlands: the Template each one uses. */
  byTemplate: "byTemplate",
  /** On userlands: spec.user alone (a student's Userlands in every served namespace). */
  byUser: "byUser",
  /**
   * On userlands: the exam marks, "exam:<namespace>/<exam>" for an exam environment and
   * "hold:<hold label value>" for a held one (operator/exams/).
   */
  byExamMark: "byExamMark",
  /** On deployments and services: the Userland that owns each one. */
  byUserland: "byUserland",
  /** On templates: the name alone, to find the same name in other namespaces. */
  byName: "byName",
  /** On endpointSlices: the Service each one belongs to. */
  byService: "byService",
  /** On pods: the Deployment (instance label) each one belongs to. */
  byInstance: "byInstance",
  /** On assignments: their Template. */
  assignmentsByTemplate: "assignmentsByTemplate",
  /** On submissions: their Assignment. */
  byAssignment: "byAssignment",
  /** On copyPods: the uid of the Assignment, Submission, Archive or ClassArchive that owns each one. */
  byOwnerUid: "byOwnerUid",
} as const;

/** The Userland a child belongs to: its name annotation, or the controller reference if a hand edit removed the annotation. */
export function owningUserland(child: k8s.KubernetesObject): string | undefined {
  return (
    child.metadata?.annotations?.[ANNOTATIONS.userlandName] ??
    child.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Userland")?.name
  );
}

const byOwningUserland = (child: k8s.KubernetesObject): string[] => {
  const owner = owningUserland(child);
  return owner ? [namespacedKey(child.metadata?.namespace, owner)] : [];
};

interface CacheOptions {
  rest: KubeRest;
  namespaces: ServedNamespaces;
  log: Logger;
  freeze?: boolean;
}

/**
 * Templates and Userlands are only read and patched, never sent back whole: kubectl's copy of the
 * last applied object (as large as the object) goes too.
 */
function withoutAppliedCopy<T extends k8s.KubernetesObject>(obj: T): T {
  const metadata = withoutManagedFields(obj).metadata;
  if (metadata?.annotations?.[LAST_APPLIED] === undefined) return obj;
  // A copy rather than `delete`, which makes V8 keep the object as a larger hash table.
  const { [LAST_APPLIED]: _, ...annotations } = metadata.annotations;
  metadata.annotations = annotations;
  return obj;
}
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** What a start's diagnosis reads of a container (operator/startDiagnosis.ts, coursework's copies). */
const containerSummary = (c: V1ContainerStatus): V1ContainerStatus => ({
  name: c.name,
  image: c.image,
  imageID: "",
  ready: c.ready,
  started: c.started,
  restartCount: c.restartCount,
  state: c.state,
  lastState: c.lastState,
});

/** What every summary keeps of an object's metadata: who it is, its version, its labels. */
const identityOf = (m: V1ObjectMeta): V1ObjectMeta => ({
  name: m.name,
  namespace: m.namespace,
  uid: m.uid,
  resourceVersion: m.resourceVersion,
  labels: m.labels,
});

/**
 * A pod is only read, never sent back: the cache keeps what a start's progress and problems are
 * read from (labels, times, status) and drops the spec, most of a pod's size.
 */
function podSummary(pod: V1Pod): V1Pod {
  const m = pod.metadata ?? {};
  const s = pod.status ?? {};
  return {
    metadata: {
      ...identityOf(m),
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      // A copy pod's owner: the Assignment or Submission it reports to.
      ownerReferences: m.ownerReferences,
    },
    // Where it runs: a copy into a running environment's claim goes to the same node.
    spec: { nodeName: pod.spec?.nodeName, containers: [] },
    status: {
      phase: s.phase,
      // Where an archive pod listens (operator/coursework/syncArchive.ts).
      podIP: s.podIP,
      conditions: s.conditions,
      containerStatuses: s.containerStatuses?.map(containerSummary),
      initContainerStatuses: s.initContainerStatuses?.map(containerSummary),
      reason: s.reason,
      message: s.message,
    },
  };
}

/** A copy pod as a pod, with its annotations: what it read (a hand-in's frozen-at). Copy pods are few. */
function copyPodSummary(pod: V1Pod): V1Pod {
  const summary = podSummary(pod);
  return { ...summary, metadata: { ...summary.metadata, annotations: pod.metadata?.annotations } };
}

/**
 * A slice is only read (does its Service route: operator/serviceRoutes.ts, and which Service it
 * belongs to): the cache keeps its ports and its endpoints' addresses and readiness, and drops
 * what else the EndpointSlice controller writes (target references, nodes, zones, hints).
 */
function sliceSummary(slice: V1EndpointSlice): V1EndpointSlice {
  const m = slice.metadata ?? {};
  return {
    addressType: slice.addressType,
    metadata: identityOf(m),
    ports: slice.ports?.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol })),
    endpoints: (slice.endpoints ?? []).map((e) => ({
      addresses: e.addresses,
      conditions: { ready: e.conditions?.ready },
    })),
  };
}

export function createCaches(opts: CacheOptions): Caches {
  const informer = <T extends k8s.KubernetesObject>(
    resource: Resource,
    transform: (obj: T) => T,
    labelSelector?: string,
  ) =>
    new Informer<T>(opts.rest, {
      path: opts.namespaces.collections(resource.group, resource.version, resource.plural),
      labelSelector,
      log: opts.log.child({ informer: resource.plural }),
      freeze: opts.freeze,
      transform,
    });
  const owned = `${LABELS.managedBy}=${MANAGED_BY}`;
  // Children keep everything but managedFields: a repair is a PUT built from the cached copy, and
  // what it leaves out (an annotation someone added) would be removed.
  const caches: Caches = {
    templates: informer<Template>(resources.Template, withoutAppliedCopy),
    userlands: informer<Userland>(resources.Userland, withoutAppliedCopy),
    deployments: informer<V1Deployment>(resources.Deployment, withoutManagedFields, owned),
    services: informer<V1Service>(resources.Service, withoutManagedFields, owned),
    pvcs: informer<V1PersistentVolumeClaim>(resources.PersistentVolumeClaim, withoutManagedFields, owned),
    // The EndpointSlice controller copies a Service's labels onto its slices, so the same selector
    // caches the slices of the operator's Services and no others.
    endpointSlices: informer<V1EndpointSlice>(resources.EndpointSlice, sliceSummary, owned),
    pods: informer<V1Pod>(resources.Pod, podSummary, owned),
    assignments: informer<Assignment>(resources.Assignment, withoutAppliedCopy),
    submissions: informer<Submission>(resources.Submission, withoutAppliedCopy),
    archives: informer<Archive>(resources.Archive, withoutAppliedCopy),
    classArchives: informer<ClassArchive>(resources.ClassArchive, withoutAppliedCopy),
    copyPods: informer<V1Pod>(resources.Pod, copyPodSummary, LABELS.copy),
    exams: informer<Exam>(resources.Exam, withoutAppliedCopy),
    examPolicies: informer<V1NetworkPolicy>(
      resources.NetworkPolicy,
      withoutManagedFields,
      ExamMarks.examLabel,
    ),
    sessionRecords: sessionRecordsInformer(
      opts.rest,
      opts.namespaces.own,
      opts.log.child({ informer: "sessionrecords" }),
    ),
  };
  caches.assignments.addIndex(Index.assignmentsByTemplate, (a) => [
    namespacedKey(a.metadata.namespace, a.spec.templateName),
  ]);
  caches.submissions.addIndex(Index.byAssignment, (s) => [
    namespacedKey(s.metadata.namespace, s.spec.assignment),
  ]);
  caches.copyPods.addIndex(Index.byOwnerUid, (pod) =>
    (pod.metadata?.ownerReferences ?? []).filter((r) => r.controller).map((r) => r.uid),
  );
  caches.userlands.addIndex(Index.byTemplate, (u) => [
    namespacedKey(u.metadata.namespace, u.spec.templateName),
  ]);
  caches.userlands.addIndex(Index.byUser, (u) => [u.spec.user]);
  caches.userlands.addIndex(Index.byExamMark, (u) => {
    const exam = u.metadata.labels?.[ExamMarks.examLabel];
    const hold = u.metadata.labels?.[ExamMarks.holdLabel];
    return [
      ...(exam === undefined ? [] : [examMarkKey(namespacedKey(u.metadata.namespace, exam))]),
      ...(hold === undefined ? [] : [holdMarkKey(hold)]),
    ];
  });
  caches.templates.addIndex(Index.byName, (t) => [t.metadata.name ?? ""]);
  caches.deployments.addIndex(Index.byUserland, byOwningUserland);
  caches.services.addIndex(Index.byUserland, byOwningUserland);
  caches.endpointSlices.addIndex(Index.byService, (slice) => {
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    return service ? [namespacedKey(slice.metadata?.namespace, service)] : [];
  });
  caches.pods.addIndex(Index.byInstance, (pod) => {
    const instance = pod.metadata?.labels?.[LABELS.instance];
    return instance ? [namespacedKey(pod.metadata?.namespace, instance)] : [];
  });
  return caches;
}

/** Every informer, for starting, stopping and readiness. */
export const allInformers = (caches: Caches): Informer<k8s.KubernetesObject>[] =>
  Object.values(caches) as Informer<k8s.KubernetesObject>[];
