/**
 * What a Userland should own, computed from the Userland and its Template alone (pure functions:
 * no API calls, no clock), so the same inputs always give the same objects and the same hash.
 */
import type {
  V1Container,
  V1Deployment,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1PodSpec,
  V1Service,
  V1ServicePort,
} from "@kubernetes/client-node";
import { ANNOTATIONS, childNames, type ChildNames, LABELS, MANAGED_BY, shortHash } from "../api/naming.ts";
import { ExamMarks, SERVICE_EXTERNAL_FIELDS, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { desiredHash } from "./compare.ts";
import { controllerReference } from "./ownership.ts";
import { courseFolderMounts } from "./courseFolders.ts";

export interface DesiredChildren {
  names: ChildNames;
  deployment: V1Deployment;
  service: V1Service;
  pvcs: V1PersistentVolumeClaim[];
  /** The Service port the proxy should use. */
  proxyPort: number;
}

export class TemplateError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.name = "TemplateError";
    this.reason = reason;
  }
}

export function controllerRef(userland: Userland): V1OwnerReference {
  return controllerReference("Userland", userland, { blockOwnerDeletion: true });
}

export function userHash(user: string): string {
  return shortHash(user, 16);
}

/** Facts about a Userland that are not in it or its Template (the sync handler finds them out). */
export interface DesiredInputs {
  /** Its person teaches the Template (operator/teachers.ts): course folders are mounted read-write. */
  teacher?: boolean;
  /** The exam whose NetworkPolicy is in place for it (operator/exams/podLabel.ts): its pods carry the label. */
  exam?: string;
}

export function desiredChildren(
  userland: Userland,
  template: Template,
  inputs: DesiredInputs = {},
): DesiredChildren {
  const name = userland.metadata.name ?? "";
  const namespace = userland.metadata.namespace ?? "";
  const templateName = template.metadata.name ?? "";
  const names = childNames(templateName, name);
  const enabled = userland.spec.enabled !== false;
  const labels = {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.userland]: names.userlandLabel,
    [LABELS.template]: templateName,
    [LABELS.instance]: names.deployment,
  };
  const owner = [controllerRef(userland)];
  const meta = (objectName: string, extraLabels: Record<string, string> = {}, ownerReferences = owner) => ({
    name: objectName,
    namespace,
    labels: { ...labels, ...extraLabels },
    annotations: { [ANNOTATIONS.userlandName]: name },
    ownerReferences,
  });

  const volumes = template.spec.volumes ?? [];
  const podSpec = structuredClone<V1PodSpec>(template.spec.template.spec);
  podSpec.containers = podSpec.containers.map((c) => withDefaults(c, template, userland));
  if (podSpec.initContainers)
    podSpec.initContainers = podSpec.initContainers.map((c) => withDefaults(c, template, userland));
  const claimVolumes = volumes.map((v) => ({
    name: v.name,
    persistentVolumeClaim: { claimName: names.pvc(v.name) },
  }));
  podSpec.volumes = [
    ...(podSpec.volumes ?? []).filter((v) => !volumes.some((t) => t.name === v.name)),
    ...claimVolumes,
  ];
  addCourseFolders(podSpec, template, inputs.teacher === true);
  if (podSpec.volumes.length === 0) delete podSpec.volumes;
  // User containers are untrusted: no API credentials and no environment variables describing every
  // Service in the namespace, unless the Template asks for them.
  podSpec.automountServiceAccountToken ??= false;
  podSpec.enableServiceLinks ??= false;

  const templateMeta = template.spec.template.metadata ?? {};
  // In an exam (operator/exams/) the pods carry its label: its NetworkPolicy selects them and the
  // chart's environments policy leaves them out. A new pod, so nothing opened before the start lasts.
  // Only the operator's exam puts it there: a Template's own copy would take pods out of every policy.
  const podLabels = inputs.exam === undefined ? labels : { ...labels, [ExamMarks.examLabel]: inputs.exam };
  const { [ExamMarks.examLabel]: _templateExam, ...templateLabels } = templateMeta.labels ?? {};
  const deployment: V1Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(names.deployment),
    spec: {
      replicas: enabled ? 1 : 0,
      selector: { matchLabels: { [LABELS.instance]: names.deployment } },
      // One pod per user, often with a ReadWriteOnce volume: the old pod must stop before the new starts.
      strategy: { type: "Recreate" },
      revisionHistoryLimit: 3,
      template: {
        metadata: {
          labels: { ...templateLabels, ...podLabels },
          ...(templateMeta.annotations ? { annotations: { ...templateMeta.annotations } } : {}),
        },
        spec: podSpec,
      },
    },
  };

  // Always ClusterIP with no external address: students reach environments only through the proxy.
  // The CRD refuses these fields; a Template stored before that rule may still carry them.
  const ports = servicePorts(template, podSpec).map(({ nodePort: _nodePort, ...port }) => port);
  const serviceSpec = structuredClone(template.spec.service ?? {}) as Record<string, unknown>;
  for (const field of SERVICE_EXTERNAL_FIELDS) delete serviceSpec[field];
  const service: V1Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(names.service),
    spec: {
      ...serviceSpec,
      type: "ClusterIP",
      ports,
      selector: { [LABELS.instance]: names.deployment },
    },
  };

  const pvcs: V1PersistentVolumeClaim[] = volumes.map((v) => ({
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: meta(
      names.pvc(v.name),
      { [LABELS.volume]: v.name, [LABELS.userHash]: userHash(userland.spec.user) },
      // Retain (the default) keeps the claim when the Userland is deleted: no owner to collect it.
      (v.reclaimPolicy ?? "Retain") === "Delete" ? owner : [],
    ),
    spec: structuredClone(v.pvcSpec),
  }));

  for (const object of [deployment, service, ...pvcs]) {
    const metadata = object.metadata ?? {};
    metadata.annotations = {
      ...metadata.annotations,
      [ANNOTATIONS.desiredHash]: desiredHash({ metadata, spec: object.spec }),
    };
  }
  return { names, deployment, service, pvcs, proxyPort: proxyPort(template, ports) };
}

/** Every container sees every course folder; a pod volume of the same name is the Template's mistake. */
function addCourseFolders(podSpec: V1PodSpec, template: Template, teacher: boolean): void {
  // Named as a teacher would get them, so a student's probe (the Template's validation) finds a
  // clash with the collection's volume too.
  const { volumes: names } = courseFolderMounts(template, true);
  const { volumes, mounts } = courseFolderMounts(template, teacher);
  if (names.length === 0) return;
  const taken = names.find((v) => podSpec.volumes?.some((p) => p.name === v.name));
  if (taken) {
    throw new TemplateError(
      "CourseFolderVolumeName",
      `the pod template has a volume named ${taken.name}, the name of a course folder's volume: rename it`,
    );
  }
  if (volumes.length === 0) return;
  podSpec.volumes = [...(podSpec.volumes ?? []), ...volumes];
  podSpec.containers = podSpec.containers.map((c) => ({
    ...c,
    volumeMounts: [...(c.volumeMounts ?? []), ...mounts.map((m) => ({ ...m }))],
  }));
}

function withDefaults(container: V1Container, template: Template, userland: Userland): V1Container {
  const c = { ...container };
  // A crashed container's last output goes into the pod's status, where the operator reads it to
  // tell the student and the teacher why (no log API needed).
  c.terminationMessagePolicy ??= "FallbackToLogsOnError";
  const defaults = template.spec.defaultResources;
  if (defaults && !c.resources) c.resources = structuredClone(defaults);
  // The environment can tell whose it is without trusting a request header.
  const env = (c.env ?? []).filter((e) => e.name !== "USERLAND_USER" && e.name !== "USERLAND_NAME");
  c.env = [
    ...env,
    { name: "USERLAND_USER", value: userland.spec.user },
    { name: "USERLAND_NAME", value: userland.metadata.name ?? "" },
  ];
  return c;
}

function servicePorts(template: Template, podSpec: V1PodSpec): V1ServicePort[] {
  const declared = template.spec.service?.ports;
  if (declared && declared.length > 0) return structuredClone(declared);
  // No Service ports in the Template: expose the containers' declared ports.
  const fromContainers = podSpec.containers.flatMap((c) =>
    (c.ports ?? []).map((p) => ({
      name: p.name ?? `port-${p.containerPort}`,
      port: p.containerPort,
      targetPort: p.containerPort,
      protocol: p.protocol ?? "TCP",
    })),
  );
  if (fromContainers.length === 0) {
    throw new TemplateError(
      "NoPorts",
      "the Template declares no Service ports (spec.service.ports) and no container ports: the proxy has nowhere to send users",
    );
  }
  return fromContainers;
}

function proxyPort(template: Template, ports: V1ServicePort[]): number {
  const wanted = template.spec.proxyPort;
  if (wanted === undefined) return (ports[0] as V1ServicePort).port;
  const match = ports.find((p) => p.port === wanted || (p.name !== undefined && p.name === wanted));
  if (!match) {
    throw new TemplateError(
      "ProxyPortNotFound",
      `spec.proxyPort ${JSON.stringify(wanted)} matches no Service port (${ports.map((p) => p.name ?? p.port).join(", ")})`,
    );
  }
  return match.port;
}
