/**
 * The sealed grading pod (docs/decisions/0015-grading.md): Gradescope's layout, so an autograder
 * written for Gradescope runs unchanged, in a pod that can reach nothing and keep nothing. Three
 * steps, in order: `prepare` (the platform's image: the hand-in checked against its receipt,
 * /autograder laid out), `autograder` (the autograder's image: run_autograder, whatever it does),
 * `collect` (the platform's image: results.json read back into the collection). Building the pod
 * and reading its outcome are pure; syncGrading.ts creates and deletes them.
 *
 * Sealed: no ServiceAccount token, no Service links, no DNS (a resolver on the pod's own loopback,
 * where nothing listens), the copy pods' deny-all NetworkPolicy (it selects the copy label), non-root
 * without capabilities or privilege escalation, the runtime's default seccomp profile, a read-only
 * root file system, and memory-backed scratch volumes whose sizes are hard caps (writes fail with
 * ENOSPC at them) and whose bytes count against the memory limit. The autograder's step alone mounts
 * the hand-in (read-only); only `collect` writes the collection, and only its grades/.
 */
import type { V1OwnerReference, V1Pod, V1SecurityContext } from "@kubernetes/client-node";
import { LABELS, shortHash } from "../../api/naming.ts";
import type { Template } from "../../api/v1alpha1/index.ts";
import {
  copyOutcome,
  copySecurityContext,
  LOCKED_CONTAINER,
  templatePlacement,
  type CopyOutcome,
} from "../coursework/copyPods.ts";
import { kubeTime } from "../../api/times.ts";

/** The resources of the autograder's step (OPERATOR_AUTOGRADER_RESOURCES). */
export interface GradingResources {
  cpu: string;
  memory: string;
  /** The scratch volume's size: /autograder and /tmp together. */
  disk: string;
}

/** What the operator was told about grading (OPERATOR_AUTOGRADER_IMAGES, OPERATOR_AUTOGRADER_RESOURCES). */
export interface GradingConfig {
  /** Images an autograder may name besides the images of the namespace's Templates. */
  images: readonly string[];
  resources: GradingResources;
}

/** PrairieLearn's spirit: enough for a test suite, not for a denial of service. */
export const DEFAULT_GRADING_RESOURCES: GradingResources = { cpu: "1", memory: "2Gi", disk: "1Gi" };

/** What the platform's two steps may take on top of the autograder's timeout (start-up, hashing, copying). */
export const PLATFORM_STEPS_SECONDS = 120;

/** The label value grading pods carry under the copy label (so the deny-all policy selects them). */
export const GRADE_JOB = "grade";

export const WORK = "/autograder";
/** results/: results.json (read up to 1 MiB) and the captured stdout (its first MiB kept). */
const RESULTS_VOLUME = "64Mi";
const SUBMISSION_CHECKED = "/submission";
const SNAPSHOT = "/autograder-snapshot";
const GRADES = "/grades";

/**
 * The autograder's step, in the image's own /bin/sh: Gradescope's harness runs run_autograder in
 * /autograder with its output in results/stdout. Its exit code is kept for the teacher (a failing
 * autograder may still have written results). At the timeout a watchdog writes .timed_out and kills
 * every process of the container but the script, which is its PID 1 (`kill -1` reaches the whole
 * PID namespace, whatever a submission forked or detached; process groups would need job control,
 * which dash refuses without a terminal), so the output so far is kept and collect reports the
 * timeout. Outside a PID namespace of its own it kills the job alone. The pod's
 * activeDeadlineSeconds is the backstop if the watchdog itself is killed.
 */
export function runAutograderScript(timeoutSeconds: number, root = WORK): string {
  return [
    `cd ${root}`,
    `${root}/run_autograder > ${root}/results/stdout 2>&1 &`,
    "job=$!",
    `( sleep ${timeoutSeconds}; echo ${timeoutSeconds} > ${root}/.timed_out; if [ $$ -eq 1 ]; then kill -KILL -1; else kill -KILL $job; fi ) 2>/dev/null &`,
    "watchdog=$!",
    "wait $job",
    `echo $? > ${root}/.exit_code`,
    "kill -KILL $watchdog 2>/dev/null",
    "exit 0",
  ].join("\n");
}

/** A grading run's inputs: the same inputs are the same run (one pod, one key). */
export interface GradeInputs {
  receiptSha256: string;
  autograderRevision: string;
  image: string;
  timeoutSeconds: number;
}

export const gradeKey = (i: GradeInputs): string =>
  shortHash(`${i.receiptSha256}/${i.autograderRevision}/${i.image}/${i.timeoutSeconds}`, 20).toLowerCase();

/** Deterministic per Submission and key: a restarted operator finds the run it started. */
export const gradePodName = (submissionUid: string, key: string): string =>
  `userland-grade-${shortHash(`${submissionUid}/${key}`, 16)}`;

export interface GradePodInput {
  name: string;
  namespace: string;
  owner: V1OwnerReference;
  template: Template;
  platformImage: string;
  autograderImage: string;
  timeoutSeconds: number;
  resources: GradingResources;
  /** The Template's collection claim and the paths in it. */
  collectionClaim: string;
  handIn: string;
  autograder: string;
  /** Where the run's results go, inside the collection's grades/ (collectionPaths.grade without it). */
  out: string;
  receiptSha256: string;
  /** Gradescope's submission_metadata.json. */
  metadata: Record<string, unknown>;
}

/** The copy pods' lock, with the runtime's seccomp profile named on each container too. */
const LOCKED: V1SecurityContext = { ...LOCKED_CONTAINER, seccompProfile: { type: "RuntimeDefault" } };

const PLATFORM_RESOURCES = {
  requests: { cpu: "100m", memory: "128Mi" },
  limits: { cpu: "1", memory: "512Mi" },
};

export function gradePod(input: GradePodInput): V1Pod {
  const platform = (args: string[]) => ["node", "coursework/grade.ts", ...args];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABELS.copy]: GRADE_JOB },
      ownerReferences: [input.owner],
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // No resolver: DNS is a way out even where a NetworkPolicy is not enforced.
      dnsPolicy: "None",
      dnsConfig: { nameservers: ["127.0.0.1"] },
      hostname: "autograder",
      activeDeadlineSeconds: input.timeoutSeconds + PLATFORM_STEPS_SECONDS,
      terminationGracePeriodSeconds: 1,
      securityContext: copySecurityContext(input.template),
      ...templatePlacement(input.template),
      volumes: [
        { name: "work", emptyDir: { medium: "Memory", sizeLimit: input.resources.disk } },
        // Apart from the scratch volume: a submission that fills it leaves room for the results.
        { name: "results", emptyDir: { medium: "Memory", sizeLimit: RESULTS_VOLUME } },
        { name: "collection", persistentVolumeClaim: { claimName: input.collectionClaim } },
      ],
      initContainers: [
        {
          name: "prepare",
          image: input.platformImage,
          command: platform([
            "prepare",
            "--submission",
            SUBMISSION_CHECKED,
            "--receipt-sha256",
            input.receiptSha256,
            "--autograder",
            SNAPSHOT,
            "--work",
            WORK,
          ]),
          env: [{ name: "GRADING_METADATA", value: JSON.stringify(input.metadata) }],
          terminationMessagePolicy: "File",
          securityContext: LOCKED,
          resources: PLATFORM_RESOURCES,
          volumeMounts: [
            { name: "work", mountPath: WORK },
            { name: "collection", mountPath: SUBMISSION_CHECKED, subPath: input.handIn, readOnly: true },
            { name: "collection", mountPath: SNAPSHOT, subPath: input.autograder, readOnly: true },
          ],
        },
        {
          name: "autograder",
          image: input.autograderImage,
          command: ["/bin/sh", "-c", runAutograderScript(input.timeoutSeconds)],
          workingDir: WORK,
          env: [
            { name: "HOME", value: "/tmp" },
            { name: "TMPDIR", value: "/tmp" },
          ],
          securityContext: LOCKED,
          resources: {
            requests: { cpu: "100m", memory: "256Mi" },
            limits: { cpu: input.resources.cpu, memory: input.resources.memory },
          },
          volumeMounts: [
            { name: "work", mountPath: WORK },
            { name: "work", mountPath: "/tmp", subPath: "tmp" },
            { name: "results", mountPath: `${WORK}/results` },
            // The same bytes prepare checked: a read-only mount, never the student's volume.
            { name: "collection", mountPath: `${WORK}/submission`, subPath: input.handIn, readOnly: true },
          ],
        },
      ],
      containers: [
        {
          name: "collect",
          image: input.platformImage,
          command: platform(["collect", "--work", WORK, "--out", `${GRADES}/${input.out}`]),
          terminationMessagePolicy: "File",
          securityContext: LOCKED,
          resources: PLATFORM_RESOURCES,
          volumeMounts: [
            { name: "work", mountPath: WORK, readOnly: true },
            { name: "results", mountPath: `${WORK}/results`, readOnly: true },
            { name: "collection", mountPath: GRADES, subPath: "grades" },
          ],
        },
      ],
    },
  };
}

/** A number the collect step's summary holds (anything else is left out). */
export const finiteNumber = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) ? v : undefined;

/** A finished grading run: the collect step's summary, or why there is none (a result too). */
export type GradeOutcome =
  | { ok: true; summary: Record<string, unknown>; finishedAt: string }
  | { ok: false; reason: string; message: string; finishedAt: string };

const errorOf = (message: string | undefined): { kind?: string; message?: string } | undefined => {
  try {
    const value = JSON.parse(message ?? "") as { error?: { kind?: unknown; message?: unknown } };
    const e = value.error;
    return e && typeof e.message === "string"
      ? { kind: typeof e.kind === "string" ? e.kind : undefined, message: e.message }
      : undefined;
  } catch {
    return undefined;
  }
};

/** Reads a finished grading pod (undefined while it runs). */
export function gradeOutcome(pod: V1Pod, timeoutSeconds: number, now: Date): GradeOutcome | undefined {
  const phase = pod.status?.phase;
  if (phase !== "Succeeded" && phase !== "Failed") return undefined;
  const inits = pod.status?.initContainerStatuses ?? [];
  const prepare = inits.find((c) => c.name === "prepare")?.state;
  const autograder = inits.find((c) => c.name === "autograder")?.state;
  // A Date in the client's types, a string as the API server sends it.
  const ended = (at: Date | string | undefined) => kubeTime(at instanceof Date ? at : new Date(at ?? now));
  const finishedAt = ended(autograder?.terminated?.finishedAt ?? prepare?.terminated?.finishedAt);
  const failed = (reason: string, message: string): GradeOutcome => ({
    ok: false,
    reason,
    message,
    finishedAt,
  });
  if (pod.status?.reason === "DeadlineExceeded") {
    const waiting = autograder?.waiting?.reason;
    if (waiting && /Image|Pull/.test(waiting))
      return failed("ImageUnavailable", `the autograder's image could not be started (${waiting})`);
    return failed("TimedOut", `timed out after ${timeoutSeconds} s: the autograder was stopped`);
  }
  if (prepare?.terminated && prepare.terminated.exitCode !== 0) {
    const error = errorOf(prepare.terminated.message);
    return failed(
      error?.kind === "HandInChanged" || error?.kind === "NoRunAutograder" ? error.kind : "PrepareFailed",
      error?.message ?? `the grading pod's first step exited with code ${prepare.terminated.exitCode}`,
    );
  }
  if (autograder?.terminated && autograder.terminated.exitCode !== 0) {
    const why = autograder.terminated.reason;
    return failed(
      why === "OOMKilled" ? "OutOfMemory" : "AutograderStopped",
      why === "OOMKilled"
        ? "the autograder used more memory than its limit and was stopped"
        : `the autograder was stopped (exit code ${autograder.terminated.exitCode}${why ? `, ${why}` : ""})`,
    );
  }
  if (pod.status?.reason === "Evicted")
    return failed("Evicted", pod.status.message ?? "the grading pod was evicted from its node");
  const collected: CopyOutcome | undefined = copyOutcome(pod, now, "collect");
  if (!collected) return failed("GradingFailed", "the grading pod ended without a result");
  if (collected.ok) return { ok: true, summary: collected.result, finishedAt: collected.finishedAt };
  return failed(
    /^(Results(Missing|Invalid|TooLarge)|TimedOut)$/.test(collected.kind) ? collected.kind : "GradingFailed",
    collected.message,
  );
}
