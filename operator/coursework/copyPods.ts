/**
 * Copy pods (docs/decisions/0011-coursework.md): short-lived pods of the platform's own image that
 * run `node coursework/copy.ts …` on a student's claim or the Template's collection, and report
 * only through their container's termination message. Building one and reading its result are pure;
 * the sync handlers create, read and delete them.
 *
 * Least rights: no ServiceAccount token, no Service links, the deny-all NetworkPolicy below, the
 * Template pod's user and group (files a student gets are theirs), a read-only root file system,
 * no capabilities, no privilege escalation, CPU and memory limits and a deadline. Every claim is
 * mounted read-only unless the job writes it.
 */
import type {
  V1Affinity,
  V1NetworkPolicy,
  V1OwnerReference,
  V1Pod,
  V1PodSecurityContext,
  V1PodSpec,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from "@kubernetes/client-node";
import { LABELS, shortHash } from "../../api/naming.ts";
import type { Template } from "../../api/v1alpha1/index.ts";
import { kubeTime } from "../../api/times.ts";

export type CopyJob =
  | "publish"
  | "distribute"
  | "handin"
  | "feedback"
  | "report"
  | "archive"
  | "classarchive"
  | "verify"
  | "autograder"
  | "solution";

/** How long a copy may take, start-up and waiting for its node included; then Kubernetes stops it. */
export const COPY_DEADLINE_SECONDS = 900;

/** The user (and group) copies run as when the Template's pod names none: the usual first user. */
export const DEFAULT_COPY_USER = 1000;

/** The NetworkPolicy the operator keeps in each namespace it runs copy pods in. */
export const COPY_NETWORK_POLICY = "userland-copy-pods-deny-all";

/** Deterministic: after a restart the operator finds the pod it made for this job and reads it. */
export function copyPodName(job: CopyJob, ownerUid: string, generation: number | string): string {
  return `userland-${job}-${shortHash(`${ownerUid}/${job}/${generation}`, 16)}`;
}

/** A claim a copy pod mounts: read-only unless the job writes it; `subPath` limits it to one folder. */
export interface CopyMount {
  claim: string;
  mountPath: string;
  readOnly: boolean;
  subPath?: string;
}

export interface CopyPodInput {
  name: string;
  namespace: string;
  job: CopyJob;
  owner: V1OwnerReference;
  image: string;
  template: Template;
  /** `coursework/copy.ts` arguments after the program. */
  args: string[];
  mounts: CopyMount[];
  /** The node of the running environment whose ReadWriteOnce claim is mounted (it cannot move). */
  nodeName?: string;
  /** An archive pod's listening port (copy.ts serve-archive); copies listen on none. */
  port?: number;
  /** Seconds until Kubernetes stops it (default COPY_DEADLINE_SECONDS). */
  deadlineSeconds?: number;
  /** Its memory limit (default 1Gi): a class's zip keeps every entry until its central directory. */
  memoryLimit?: string;
  /** What the pod records of its inputs for whoever reads its result (e.g. a hand-in's frozenAt). */
  annotations?: Record<string, string>;
}

/** The Template pod's user, group and fsGroup: distributed files belong to the student's user. */
export function copySecurityContext(template: Template): V1PodSecurityContext {
  const pod = template.spec.template.spec.securityContext ?? {};
  const user = pod.runAsUser ?? DEFAULT_COPY_USER;
  return {
    runAsNonRoot: true,
    runAsUser: user === 0 ? DEFAULT_COPY_USER : user,
    runAsGroup: pod.runAsGroup ?? DEFAULT_COPY_USER,
    ...(pod.fsGroup !== undefined
      ? { fsGroup: pod.fsGroup, fsGroupChangePolicy: pod.fsGroupChangePolicy ?? "OnRootMismatch" }
      : {}),
    seccompProfile: { type: "RuntimeDefault" },
  };
}

/** Every container of the platform's short-lived pods: no privilege to gain, a read-only root, no capabilities. */
export const LOCKED_CONTAINER: V1SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

/**
 * Where the Template's environments may run, its short-lived pods may too (its node selector,
 * tolerations and affinity); `nodeName` pins one to a running environment's node instead.
 */
export function templatePlacement(
  template: Template,
  nodeName?: string,
): Pick<V1PodSpec, "nodeSelector" | "tolerations" | "affinity"> {
  const templatePod = template.spec.template.spec;
  return {
    ...(templatePod.nodeSelector ? { nodeSelector: { ...templatePod.nodeSelector } } : {}),
    ...(templatePod.tolerations ? { tolerations: structuredClone(templatePod.tolerations) } : {}),
    // Pinned by affinity, not nodeName: a pod with nodeName skips the scheduler, and only the
    // scheduler binds a WaitForFirstConsumer claim (local-path): a collection no pod had used yet
    // never bound and the copy waited for ever (found on the real node).
    ...(nodeName
      ? { affinity: onNode(nodeName) }
      : templatePod.affinity
        ? { affinity: structuredClone(templatePod.affinity) }
        : {}),
  };
}

/** Required to run on the node called `nodeName` (as DaemonSets pin their pods). */
export const onNode = (nodeName: string): V1Affinity => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [nodeName] }] }],
    },
  },
});

export function copyPod(input: CopyPodInput): V1Pod {
  // One pod volume per claim; each mount of it says its own mode.
  const claims = [...new Set(input.mounts.map((m) => m.claim))];
  const volumes: V1Volume[] = claims.map((claim, i) => ({
    name: `claim-${i}`,
    persistentVolumeClaim: {
      claimName: claim,
      ...(input.mounts.every((m) => m.claim !== claim || m.readOnly) ? { readOnly: true } : {}),
    },
  }));
  const volumeMounts: V1VolumeMount[] = input.mounts.map((m) => ({
    name: `claim-${claims.indexOf(m.claim)}`,
    mountPath: m.mountPath,
    ...(m.subPath ? { subPath: m.subPath } : {}),
    ...(m.readOnly ? { readOnly: true } : {}),
  }));
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABELS.copy]: input.job },
      ...(input.annotations ? { annotations: input.annotations } : {}),
      ownerReferences: [input.owner],
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      activeDeadlineSeconds: input.deadlineSeconds ?? COPY_DEADLINE_SECONDS,
      terminationGracePeriodSeconds: 5,
      securityContext: copySecurityContext(input.template),
      ...templatePlacement(input.template, input.nodeName),
      containers: [
        {
          name: "copy",
          image: input.image,
          command: ["node", "coursework/copy.ts", ...input.args],
          terminationMessagePolicy: "File",
          ...(input.port
            ? {
                ports: [{ name: "archive", containerPort: input.port, protocol: "TCP" }],
                // Ready once the program listens: the Archive says Serving only then, so whoever
                // dials at Serving is answered (a running container is not yet a listening one).
                // A TCP check opens and closes a connection; the program serves only a request.
                readinessProbe: { tcpSocket: { port: input.port }, periodSeconds: 1, failureThreshold: 1 },
              }
            : {}),
          securityContext: LOCKED_CONTAINER,
          resources: {
            requests: { cpu: "100m", memory: "128Mi" },
            limits: { cpu: "1", memory: input.memoryLimit ?? "1Gi" },
          },
          volumeMounts,
        },
      ],
      volumes,
    },
  };
}

/** Denies copy pods all traffic: they read and write volumes only. */
export function copyNetworkPolicy(namespace: string): V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: COPY_NETWORK_POLICY, namespace },
    spec: {
      podSelector: { matchExpressions: [{ key: LABELS.copy, operator: "Exists" }] },
      policyTypes: ["Ingress", "Egress"],
    },
  };
}

/** The policy beside the deny-all one that lets the user-manager's pods fetch from archive pods. */
export const ARCHIVE_NETWORK_POLICY = "userland-archive-pods-ingress";

/** Who may dial archive pods: the user-manager's pods (OPERATOR_ARCHIVE_CLIENTS). */
export interface ArchiveClients {
  namespace: string;
  labels: Record<string, string>;
}

/**
 * Admits the archive clients to archive pods on `port`, and nothing else: the deny-all policy still
 * selects archive pods (they carry the copy label), and policies add up, so no egress is allowed
 * and no other pod gets in.
 */
export function archiveNetworkPolicy(
  namespace: string,
  clients: ArchiveClients,
  port: number,
): Omit<V1NetworkPolicy, "spec"> & { spec: Record<string, unknown> } {
  // As the API server spells it: @kubernetes/client-node's type calls `from` `_from`.
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: ARCHIVE_NETWORK_POLICY, namespace },
    spec: {
      podSelector: { matchLabels: { [LABELS.copy]: "archive" } },
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": clients.namespace } },
              podSelector: { matchLabels: { ...clients.labels } },
            },
          ],
          ports: [{ protocol: "TCP", port }],
        },
      ],
    },
  };
}

/** What copy.ts reported, read from a finished pod (undefined while it runs). */
export type CopyOutcome =
  | { state: "done"; ok: true; result: Record<string, unknown>; finishedAt: string }
  | {
      state: "done";
      ok: false;
      /** copy.ts's kind (limit, refused, failed, usage) or the pod's reason (DeadlineExceeded…). */
      kind: string;
      message: string;
      finishedAt: string;
    };

const EXIT_KINDS: Record<number, string> = { 1: "failed", 2: "usage", 3: "limit", 4: "refused" };

/** `container`: the one that runs the program (a grading pod's is `collect`). */
export function copyOutcome(pod: V1Pod, now: Date, container = "copy"): CopyOutcome | undefined {
  const phase = pod.status?.phase;
  if (phase !== "Succeeded" && phase !== "Failed") return undefined;
  const terminated = pod.status?.containerStatuses?.find((c) => c.name === container)?.state?.terminated;
  const finishedAt = kubeTime(new Date(terminated?.finishedAt ?? now));
  let parsed: Record<string, unknown> | undefined;
  try {
    const value: unknown = JSON.parse(terminated?.message ?? "");
    if (value && typeof value === "object" && !Array.isArray(value))
      parsed = value as Record<string, unknown>;
  } catch {
    parsed = undefined;
  }
  if (terminated?.exitCode === 0 && parsed && !("error" in parsed))
    return { state: "done", ok: true, result: parsed, finishedAt };
  const error = parsed?.error as { kind?: unknown; message?: unknown } | undefined;
  if (typeof error?.message === "string")
    return {
      state: "done",
      ok: false,
      kind: typeof error.kind === "string" ? error.kind : "failed",
      message: error.message,
      finishedAt,
    };
  // No message of copy.ts's: the pod never ran it to the end (deadline, eviction, a missing claim).
  const exit = terminated?.exitCode;
  return {
    state: "done",
    ok: false,
    kind: pod.status?.reason ?? (exit !== undefined ? (EXIT_KINDS[exit] ?? "failed") : "failed"),
    message:
      pod.status?.message ??
      (exit !== undefined
        ? `the copy exited with code ${exit}${terminated?.reason ? ` (${terminated.reason})` : ""}`
        : "the copy pod failed before its copy ran"),
    finishedAt,
  };
}

/** A list's length plus what fitJson cut from it (coursework/files/report.ts). */
export function countOf(result: Record<string, unknown>, key: string): number {
  const list = result[key];
  const omitted = (result.omitted as Record<string, number> | undefined)?.[key] ?? 0;
  return (Array.isArray(list) ? list.length : 0) + omitted;
}
