/**
 * The operator's settings (environment variables), validated together at start-up so a broken
 * deployment gets one message naming every variable to fix.
 */
import { formatDuration } from "../api/duration.ts";
import { loadConfig, parse, type ConfigOf, type Settings } from "../lib/config.ts";
import { cidrList } from "../lib/cidrs.ts";
import { watchNamespacesSetting } from "../lib/namespaces.ts";
import {
  SESSION_GROUP_PREFIX_DEFAULT,
  SESSION_USER_PREFIX_DEFAULT,
  subjectPrefix,
} from "../lib/sessionSubjects.ts";
import type { ArchiveClients } from "./coursework/copyPods.ts";
import { DEFAULT_GRADING_RESOURCES, type GradingResources } from "./grading/gradePods.ts";

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** `<namespace>:<label>=<value>[,…]`: the pods allowed to fetch from archive pods. */
function parseArchiveClients(raw: string): ArchiveClients {
  const usage =
    "expected <namespace>:<label>=<value>[,<label>=<value>…], e.g. userland:app.kubernetes.io/component=user-manager";
  const [namespace, selector, ...rest] = raw.split(":");
  if (!namespace || !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace) || !selector || rest.length > 0)
    throw new Error(`${usage}, got ${JSON.stringify(raw)}`);
  const labels: Record<string, string> = {};
  for (const pair of selector.split(",")) {
    const [key = "", value, ...more] = pair.split("=");
    if (value === undefined || more.length > 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value))
      throw new Error(`${usage}: ${JSON.stringify(pair)} is not <label>=<value>`);
    labels[key] = value;
  }
  return { namespace, labels };
}

/** An image reference as Kubernetes takes it: no spaces, no scheme; a tag or digest is the admin's choice. */
function parseImage(raw: string): string {
  if (!/^[a-z0-9][a-z0-9._\-/:@]*$/i.test(raw) || raw.includes("://"))
    throw new Error(
      `expected an image reference such as registry.example.org/userland:1.2.3, got ${JSON.stringify(raw)}`,
    );
  return raw;
}

/** Kubernetes' resource quantities as they are usually written (2, 500m, 2Gi, 1.5G). */
const QUANTITY = /^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;

/** `cpu=1,memory=2Gi,disk=1Gi`: each key at most once, the ones left out keep their defaults. */
function parseGradingResources(raw: string): GradingResources {
  const resources: GradingResources = { ...DEFAULT_GRADING_RESOURCES };
  const seen = new Set<string>();
  for (const pair of raw.split(",")) {
    const [key = "", value = "", ...more] = pair.trim().split("=");
    if (!(key in resources) || seen.has(key) || more.length > 0 || !QUANTITY.test(value))
      throw new Error(
        `expected cpu=<cores>,memory=<bytes>,disk=<bytes> (e.g. cpu=1,memory=2Gi,disk=1Gi), got ${JSON.stringify(pair)}`,
      );
    seen.add(key);
    resources[key as keyof GradingResources] = value;
  }
  return resources;
}

export const operatorSettings = {
  namespace: {
    env: "USERLAND_NAMESPACE",
    description:
      "The operator's own namespace: its leader Lease, and the Templates and Userlands it manages unless USERLAND_WATCH_NAMESPACES says otherwise",
    parse: parse.string,
    default: "",
    show: () => "its own namespace",
  },
  watchNamespaces: watchNamespacesSetting("Templates and Userlands this operator manages"),
  workers: {
    env: "OPERATOR_WORKERS",
    description: "Concurrent reconciles",
    parse: parse.integer(1, 64),
    default: 48,
  },
  resyncPeriod: {
    env: "OPERATOR_RESYNC_PERIOD",
    description: "How often every object is reconciled again even without changes",
    parse: parse.duration,
    show: formatDuration,
    default: 10 * 60_000,
  },
  cullInterval: {
    env: "OPERATOR_CULL_INTERVAL",
    description: "How often idle Userlands are looked for",
    parse: parse.duration,
    show: formatDuration,
    default: 60_000,
  },
  sessionUserPrefix: {
    env: "OPERATOR_SESSION_USER_PREFIX",
    description:
      "Prefix that makes a Userland's spec.user the Kubernetes user RBAC is asked about (whether they teach its Template): the user-manager's USER_MANAGER_SESSION_USER_PREFIX",
    parse: subjectPrefix,
    default: SESSION_USER_PREFIX_DEFAULT,
  },
  sessionGroupPrefix: {
    env: "OPERATOR_SESSION_GROUP_PREFIX",
    description:
      "Prefix that makes each group of a person's latest session (their session record) a Kubernetes group RBAC is asked about: the user-manager's USER_MANAGER_SESSION_GROUP_PREFIX",
    parse: subjectPrefix,
    default: SESSION_GROUP_PREFIX_DEFAULT,
  },
  teacherCacheTtl: {
    env: "OPERATOR_TEACHER_CACHE_TTL",
    description:
      "How long RBAC's answer to whether a person teaches a Template (course folders read-write) is used, denials too; a Userland of a Template with course folders is checked again after it",
    parse: parse.duration,
    show: formatDuration,
    default: 60_000,
  },
  copyImage: {
    env: "OPERATOR_COPY_IMAGE",
    description:
      "The image of the pods that copy coursework (node coursework/copy.ts: publish, distribute, hand-in, feedback): the platform's own; unset, Assignments report CopyImageUnset and nothing is copied",
    parse: parseImage,
    default: "",
    show: () => "unset",
  },
  autograderImages: {
    env: "OPERATOR_AUTOGRADER_IMAGES",
    description:
      "Images an Assignment's autograder may name besides the images of its namespace's Templates, comma-separated (docs/decisions/0015-grading.md)",
    parse: (raw: string): string[] => parse.list(raw).map((image) => parseImage(image)),
    default: [],
    show: (images: string[]) => (images.length ? images.join(",") : "none"),
  },
  autograderResources: {
    env: "OPERATOR_AUTOGRADER_RESOURCES",
    description:
      "What an autograder may use per hand-in, as cpu=<cores>,memory=<bytes>,disk=<bytes> (disk: /autograder and /tmp together, memory-backed, so it counts against memory too)",
    parse: parseGradingResources,
    default: DEFAULT_GRADING_RESOURCES,
    show: (r: GradingResources) => `cpu=${r.cpu},memory=${r.memory},disk=${r.disk}`,
  },
  archiveClients: {
    env: "OPERATOR_ARCHIVE_CLIENTS",
    description:
      "The pods that may fetch downloads from archive pods, as <namespace>:<label>=<value>[,<label>=<value>…]: the user-manager's (the chart sets it); unset, Archives fail with ArchiveClientsUnset",
    parse: parseArchiveClients,
    default: undefined,
  },
  proxyPods: {
    env: "OPERATOR_PROXY_PODS",
    description:
      "The proxy's pods, the only ones an exam lets into its students' environments, as <namespace>:<label>=<value>[,<label>=<value>…] (the chart sets it); unset, exams do not start (NetworkClosed=False, ProxyPodsUnset)",
    parse: parseArchiveClients,
    default: undefined,
  },
  policyPodCidrs: {
    env: "OPERATOR_POLICY_POD_CIDRS",
    description:
      "The pod ranges the chart's NetworkPolicies were rendered with (networkPolicy.podCIDRs; the chart sets it): the first environment's pod outside them is logged as an error and a Warning Event (PodOutsideNetworkPolicyRanges); unset, unchecked",
    parse: cidrList,
    default: [] as string[],
    show: (cidrs: string[]) => cidrs.join(",") || "unset",
  },
  copyRetry: {
    env: "OPERATOR_COPY_RETRY",
    description:
      "How long after a failed copy (over a limit, refused, failed) it is tried again; the wait doubles with each failure in a row, up to 10m",
    parse: parse.duration,
    show: formatDuration,
    default: 60_000,
  },
  handInSnapshotClass: {
    env: "OPERATOR_HANDIN_SNAPSHOT_CLASS",
    description:
      "A VolumeSnapshotClass of the students' home volumes' CSI driver: each hand-in's volume is snapshotted at its moment and the copy reads the snapshot, so the files are exactly as they were then (docs/decisions/0015-grading.md); unset, the copy reads the live volume and names the files written after the moment",
    parse: parse.string,
    default: "",
    show: (name: string) => name || "unset",
  },
  httpAddress: {
    env: "OPERATOR_HTTP_ADDRESS",
    description: "Address for /healthz, /readyz and /metrics",
    parse: parse.string,
    default: "0.0.0.0",
  },
  httpPort: {
    env: "OPERATOR_HTTP_PORT",
    description: "Port for /healthz, /readyz and /metrics",
    parse: parse.port,
    default: 8080,
  },
  leaderElection: {
    env: "OPERATOR_LEADER_ELECTION",
    description: "Take a coordination.k8s.io Lease before reconciling (needed for more than one replica)",
    parse: parse.boolean,
    default: true,
  },
  leaseName: {
    env: "OPERATOR_LEASE_NAME",
    description: "Name of the leader Lease",
    parse: parse.string,
    default: "userland-operator",
  },
  leaseDuration: {
    env: "OPERATOR_LEASE_DURATION",
    description: "How long a leader's Lease is valid without renewal",
    parse: parse.duration,
    show: formatDuration,
    default: 15_000,
  },
  renewDeadline: {
    env: "OPERATOR_RENEW_DEADLINE",
    description: "How long the leader keeps trying to renew before it gives up",
    parse: parse.duration,
    show: formatDuration,
    default: 10_000,
  },
  retryPeriod: {
    env: "OPERATOR_RETRY_PERIOD",
    description: "How often Lease acquisition and renewal are tried",
    parse: parse.duration,
    show: formatDuration,
    default: 2_000,
  },
  identity: {
    env: "POD_NAME",
    description: "This replica's identity in the Lease",
    parse: parse.string,
    default: "",
    show: () => "host name and process id",
  },
  freezeCache: {
    env: "OPERATOR_FREEZE_CACHE",
    description: "Deep-freeze cached objects so an accidental mutation throws (for tests)",
    parse: parse.boolean,
    default: false,
  },
} satisfies Settings;

export type OperatorConfig = ConfigOf<typeof operatorSettings>;

/** Throws ConfigError listing every problem. */
export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  return loadConfig("userland-operator", operatorSettings, env);
}
