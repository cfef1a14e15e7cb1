/**
 * The controller, in sample-controller's shape: informers keep caches (and indexes) of Templates,
 * Userlands and the objects the operator owns; their events become keys in one rate-limited work
 * queue; workers take keys and run the sync handler for that key. Each step is separate:
 *   informer events → enqueue (here) → worker loop (here) → the sync handler of the key's kind
 *   (one table, `syncs`; the keys: queueKeys.ts).
 */
import type { V1Pod } from "@kubernetes/client-node";
import { ANNOTATIONS, LABELS } from "../api/naming.ts";
import { TemplateConditions, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { namespacedKey, type Informer } from "../lib/informer.ts";
import type { k8s } from "../lib/kube.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { ServedNamespaces } from "../lib/namespaces.ts";
import {
  allInformers,
  createCaches,
  Index,
  owningUserland,
  SERVICE_NAME_LABEL,
  type Caches,
} from "./caches.ts";
import type { OperatorContext } from "./context.ts";
import { ClaimEvents } from "./claimEvents.ts";
import { EventRecorder } from "../lib/events.ts";
import type { OperatorMetrics } from "./metrics.ts";
import { Spawns } from "./spawns.ts";
import { Teachers } from "./teachers.ts";
import { recordGroups } from "../api/sessions.ts";
import { recordIn } from "../lib/sessionRecords.ts";
import { syncTemplate } from "./syncTemplate.ts";
import { syncUserland } from "./syncUserland.ts";
import { ExponentialFailureRateLimiter, WorkQueue } from "./workqueue.ts";
import { syncAssignment } from "./coursework/syncAssignment.ts";
import { syncSubmission } from "./coursework/syncSubmission.ts";
import {
  archiveKey,
  assignmentKey,
  classArchiveKey,
  registerCourseworkHandlers,
  submissionKey,
} from "./coursework/wiring.ts";
import { FAILED_COPY_RETRY_MS } from "./coursework/copyRuns.ts";
import type { ArchiveClients } from "./coursework/copyPods.ts";
import { DEFAULT_GRADING_RESOURCES, type GradingConfig } from "./grading/gradePods.ts";
import { syncArchive } from "./coursework/syncArchive.ts";
import { syncClassArchive } from "./coursework/syncClassArchive.ts";
import { syncExam } from "./exams/syncExam.ts";
import type { ProxyPods } from "./exams/policy.ts";
import { examKey, registerExamHandlers } from "./exams/wiring.ts";
import { PolicyRangeCheck } from "./policyRanges.ts";
import { parseQueueKey, queueKey, type QueueKind } from "./queueKeys.ts";

export interface ControllerOptions {
  rest: KubeRest;
  namespaces: ServedNamespaces;
  workers: number;
  resyncPeriodMs: number;
  log: Logger;
  metrics: OperatorMetrics;
  freezeCache?: boolean;
  /**
   * The session user and group prefixes and how long RBAC's answers on teachers are used
   * (operator/teachers.ts).
   */
  teachers: { userPrefix: string; groupPrefix: string; ttlMs: number };
  /** The image copy pods run (operator/coursework/); empty: Assignments say it is unset. */
  copyImage?: string;
  /** Who may fetch from archive pods (OPERATOR_ARCHIVE_CLIENTS); unset: Archives fail. */
  archiveClients?: ArchiveClients;
  /** A failed copy's first wait before it runs again (doubling per failure in a row). */
  copyRetryMs?: number;
  /** The VolumeSnapshotClass hand-ins are frozen with (OPERATOR_HANDIN_SNAPSHOT_CLASS); unset: none. */
  handInSnapshotClass?: string;
  /** The proxy's pods, the only ones an exam lets in (OPERATOR_PROXY_PODS); unset: exams do not start. */
  proxyPods?: ProxyPods;
  /** Images autograders may name and their pods' limits (default: none beyond Templates' images, DEFAULT_GRADING_RESOURCES). */
  grading?: Partial<GradingConfig>;
  /** The pod ranges the chart's NetworkPolicies were rendered with (OPERATOR_POLICY_POD_CIDRS); none: unchecked. */
  policyPodCidrs?: readonly string[];
}

const userlandKey = (namespace: string, name: string) => queueKey("Userland", namespace, name);
const templateKey = (namespace: string, name: string) => queueKey("Template", namespace, name);

const RECOUNT_DELAY_MS = 1000;

/**
 * What one sync asks of the queue: `retry`, blocked by an object outside the caches (again soon,
 * backing off); `againAfterMs`, a time it must look again at (a closing time, a copy's retry).
 */
interface SyncOutcome {
  retry?: boolean;
  againAfterMs?: number;
}

/** After this many failed attempts in a row a key waits for the next change or resync. */
const MAX_RETRIES = 15;

/**
 * A Userland blocked by an object that holds a child's name is synced again after 0.5 s, doubling
 * to at most 10 s for as long as it stays blocked: the object is outside the caches (it is not the
 * operator's), so its removal sends no event, and the Userland must recover within seconds, not at
 * the next resync. One blocked Userland costs at most a create (409) and a get every 10 s.
 */
const BLOCKED_RETRY_BASE_MS = 500;
const BLOCKED_RETRY_MAX_MS = 10_000;

/**
 * What Userlands depend on in a Template: its spec (generation), whether it is valid and whether
 * its course folders' claims are its own. A status update that only recounts Userlands leaves it
 * unchanged.
 */
function templateFingerprint(t: Template): string {
  const valid = t.status?.conditions?.find((c) => c.type === TemplateConditions.PodTemplateValid);
  const folders = t.status?.conditions?.find((c) => c.type === TemplateConditions.CourseFoldersReady);
  return `${t.metadata.uid}/${t.metadata.generation}/${valid?.status}/${valid?.observedGeneration}/${folders?.status}`;
}

export class Controller {
  readonly caches: Caches;
  readonly queue: WorkQueue;
  private readonly opts: ControllerOptions;
  private readonly log: Logger;
  private readonly context: OperatorContext;
  private readonly blockedRetry = new ExponentialFailureRateLimiter(
    BLOCKED_RETRY_BASE_MS,
    BLOCKED_RETRY_MAX_MS,
  );
  private workers: Promise<void>[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.log = opts.log;
    const { rest, namespaces } = opts;
    this.caches = createCaches({ rest, namespaces, log: opts.log, freeze: opts.freezeCache });
    this.queue = new WorkQueue(undefined, opts.metrics.queueMetrics());
    this.context = {
      rest,
      caches: this.caches,
      events: new EventRecorder(rest, "userland-operator", opts.log),
      metrics: opts.metrics,
      spawns: new Spawns(),
      teachers: new Teachers({
        rest,
        log: opts.log,
        ...opts.teachers,
        groupsOf: (user) => recordGroups(recordIn(this.caches.sessionRecords, namespaces.own, user)),
      }),
      claimEvents: new ClaimEvents(rest, opts.log),
      computed: new Map(),
      coursework: {
        image: opts.copyImage ?? "",
        retryMs: opts.copyRetryMs ?? FAILED_COPY_RETRY_MS,
        snapshotClass: opts.handInSnapshotClass ?? "",
        policies: new Set(),
        archiveClients: opts.archiveClients,
        grading: {
          images: opts.grading?.images ?? [],
          resources: opts.grading?.resources ?? DEFAULT_GRADING_RESOURCES,
        },
      },
      log: opts.log,
      now: () => new Date(),
    };
    this.registerHandlers();
  }

  get ctx(): OperatorContext {
    return this.context;
  }

  private registerHandlers(): void {
    const { userlands, templates, deployments, services, pvcs, endpointSlices, pods } = this.caches;
    const coursework = registerCourseworkHandlers(this.caches, this.queue);
    registerExamHandlers(this.caches, this.queue, (namespace, name) =>
      this.queue.add(userlandKey(namespace, name)),
    );
    const enqueueUserland = (u: Userland) =>
      this.queue.add(userlandKey(u.metadata.namespace ?? "", u.metadata.name ?? ""));
    // Template status counts its Userlands: a Userland that comes, goes or switches Template
    // changes the count of the Templates concerned.
    const recountTemplateOf = (u: Userland) => this.recount(u.metadata.namespace ?? "", u.spec.templateName);
    userlands.on("add", (u) => {
      recountTemplateOf(u);
      enqueueUserland(u);
    });
    userlands.on("update", (u, old) => {
      if (old?.spec.templateName !== u.spec.templateName) {
        if (old) recountTemplateOf(old);
        recountTemplateOf(u);
      }
      enqueueUserland(u);
    });
    userlands.on("delete", (u) => {
      this.context.spawns.forget(u);
      this.context.computed.delete(namespacedKey(u.metadata.namespace, u.metadata.name));
      recountTemplateOf(u);
      enqueueUserland(u);
    });

    // A change of the spec or of its validity reaches every Userland that uses the Template; a
    // status update that only recounts Userlands must not fan out to all of them.
    const onTemplate = (t: Template, fanOut: boolean) => {
      const namespace = t.metadata.namespace ?? "";
      const name = t.metadata.name ?? "";
      this.queue.add(templateKey(namespace, name));
      if (!fanOut) return;
      coursework.onTemplate(namespace, name);
      for (const u of userlands.byIndex(Index.byTemplate, namespacedKey(namespace, name))) enqueueUserland(u);
    };
    // A Template that comes or goes may shadow, or stop shadowing, one of its name elsewhere.
    const sameName = (t: Template) => {
      for (const other of templates.byIndex(Index.byName, t.metadata.name ?? ""))
        if (other.metadata.namespace !== t.metadata.namespace)
          this.queue.add(templateKey(other.metadata.namespace ?? "", other.metadata.name ?? ""));
    };
    templates.on("add", (t) => (onTemplate(t, true), sameName(t)));
    templates.on("update", (t, old) =>
      onTemplate(t, !old || templateFingerprint(old) !== templateFingerprint(t)),
    );
    templates.on("delete", (t) => (onTemplate(t, true), sameName(t)));

    const onChild = (child: k8s.KubernetesObject) => {
      const owner = owningUserland(child);
      if (owner) this.queue.add(userlandKey(child.metadata?.namespace ?? "", owner));
    };
    const enqueueOwnerOf = <T extends k8s.KubernetesObject>(informer: Informer<T>) => {
      informer.on("add", onChild);
      informer.on("update", onChild);
      informer.on("delete", onChild);
    };
    enqueueOwnerOf(deployments);
    enqueueOwnerOf(services);
    enqueueOwnerOf(pvcs);
    // A course folder's claim changed or went: its Template makes it again (operator/courseFolders.ts).
    const onCourseClaim = (claim: k8s.KubernetesObject) => {
      if (claim.metadata?.labels?.[LABELS.courseFolder] === undefined) return;
      // Named by annotation: a Retain folder's claim has no owner (operator/courseFolders.ts).
      const template = claim.metadata.annotations?.[ANNOTATIONS.courseTemplate];
      if (template) this.queue.add(templateKey(claim.metadata.namespace ?? "", template));
    };
    pvcs.on("update", onCourseClaim);
    pvcs.on("delete", onCourseClaim);
    // A slice names its Service (not the Userland): the cached Service names the owner.
    const onSlice = (slice: k8s.KubernetesObject) => {
      const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
      const owner = service && services.get(service, slice.metadata?.namespace);
      if (owner) onChild(owner);
    };
    endpointSlices.on("add", onSlice);
    endpointSlices.on("update", onSlice);
    endpointSlices.on("delete", onSlice);
    // A pod names its Deployment by the instance label: the cached Deployment names the owner.
    const ranges = new PolicyRangeCheck(this.opts.policyPodCidrs ?? [], this.context.events, this.log);
    const onPod = (pod: V1Pod) => {
      const instance = pod.metadata?.labels?.[LABELS.instance];
      const owner = instance && deployments.get(instance, pod.metadata?.namespace);
      if (!owner) return;
      onChild(owner);
      ranges.observe(pod.status?.podIP, () => {
        const userland = owningUserland(owner);
        return userland ? this.caches.userlands.get(userland, pod.metadata?.namespace) : undefined;
      });
    };
    pods.on("add", onPod);
    pods.on("update", onPod);
    pods.on("delete", onPod);
    pvcs.on("delete", (claim) => this.context.claimEvents.forget(claim.metadata?.uid));
  }

  /** Template status carries a Userland count: batch recounts so 1,000 new Userlands cost a few writes, not 1,000. */
  private recount(namespace: string, template: string): void {
    this.queue.addAfter(templateKey(namespace, template), RECOUNT_DELAY_MS);
  }

  get synced(): boolean {
    return allInformers(this.caches).every((c) => c.hasSynced);
  }

  /** Starts the informers, waits for their first lists, then starts the workers. */
  async start(): Promise<void> {
    this.opts.metrics.readFrom({
      userlands: () => this.caches.userlands.list(),
      spawns: this.context.spawns,
    });
    await Promise.all(allInformers(this.caches).map((c) => c.start()));
    this.log.info(
      { namespaces: this.opts.namespaces.toString(), workers: this.opts.workers },
      "caches synced; starting workers",
    );
    this.workers = Array.from({ length: this.opts.workers }, () => this.runWorker());
    if (this.opts.resyncPeriodMs > 0) {
      this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncPeriodMs);
      this.resyncTimer.unref();
    }
  }

  /** Re-queues every Template and Userland: a level-triggered safety net that costs no writes when all is in order. */
  resync(): void {
    for (const t of this.caches.templates.list())
      this.queue.add(templateKey(t.metadata.namespace ?? "", t.metadata.name ?? ""));
    for (const u of this.caches.userlands.list())
      this.queue.add(userlandKey(u.metadata.namespace ?? "", u.metadata.name ?? ""));
    for (const a of this.caches.assignments.list())
      this.queue.add(assignmentKey(a.metadata.namespace ?? "", a.metadata.name ?? ""));
    for (const s of this.caches.submissions.list())
      this.queue.add(submissionKey(s.metadata.namespace ?? "", s.metadata.name ?? ""));
    for (const r of this.caches.archives.list())
      this.queue.add(archiveKey(r.metadata.namespace ?? "", r.metadata.name ?? ""));
    for (const c of this.caches.classArchives.list())
      this.queue.add(classArchiveKey(c.metadata.namespace ?? "", c.metadata.name ?? ""));
    for (const e of this.caches.exams.list())
      this.queue.add(examKey(e.metadata.namespace ?? "", e.metadata.name ?? ""));
  }

  /** Finishes the reconciles in progress, then stops the informers. */
  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await this.queue.shutDownWithDrain();
    await Promise.all(this.workers);
    await Promise.all(allInformers(this.caches).map((c) => c.stop()));
    this.opts.metrics.readFrom(undefined);
  }

  private async runWorker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
      this.queue.done(key);
    }
  }

  /** Each kind's sync handler: one row per kind of queue key (queueKeys.ts). */
  private readonly syncs: Record<QueueKind, (namespace: string, name: string) => Promise<SyncOutcome>> = {
    Template: (namespace, name) => syncTemplate(this.context, namespace, name),
    Userland: (namespace, name) => syncUserland(this.context, namespace, name),
    Assignment: (namespace, name) => syncAssignment(this.context, namespace, name),
    Submission: (namespace, name) => syncSubmission(this.context, namespace, name),
    Archive: (namespace, name) => syncArchive(this.context, namespace, name),
    ClassArchive: (namespace, name) => syncClassArchive(this.context, namespace, name),
    Exam: (namespace, name) => syncExam(this.context, { proxyPods: this.opts.proxyPods }, namespace, name),
  };

  private async process(key: string): Promise<void> {
    const parsed = parseQueueKey(key);
    if (!parsed) {
      this.log.error({ key }, "a queue key of no kind the operator syncs; dropped");
      this.queue.forget(key);
      return;
    }
    const { kind, namespace, name } = parsed;
    const end = this.opts.metrics.reconcileDuration.startTimer({ kind });
    try {
      const { retry, againAfterMs } = await this.syncs[kind](namespace, name);
      if (retry) this.queue.addAfter(key, this.blockedRetry.when(key));
      else this.blockedRetry.forget(key);
      if (againAfterMs !== undefined) this.queue.addAfter(key, againAfterMs);
      this.queue.forget(key);
      this.opts.metrics.reconciles.inc({ kind, result: "success" });
    } catch (error) {
      this.opts.metrics.reconciles.inc({ kind, result: "error" });
      const retries = this.queue.numRequeues(key);
      if (retries < MAX_RETRIES) {
        this.log.warn(
          { key, err: (error as Error).message, retries },
          "reconcile failed; retrying with back-off",
        );
        this.queue.addRateLimited(key);
      } else {
        this.log.error(
          { key, err: (error as Error).message },
          "reconcile keeps failing; waiting for a change or resync",
        );
        this.queue.forget(key);
      }
    } finally {
      end();
    }
  }
}
