/**
 * The controller, in sample-controller's shape: informers keep caches of Templates, Userlands and
 * the objects the operator owns; their events become keys in one rate-limited work queue; workers
 * take keys and run the sync handler for that key. Each step is separate:
 *   informer events → enqueue (here) → worker loop (here) → syncUserland / syncTemplate.
 */
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import { LABELS, MANAGED_BY } from "../api/naming.ts";
import { TemplateConditions, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { Informer } from "../lib/informer.ts";
import type { k8s } from "../lib/kube.ts";
import { paths, type KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { Caches, OperatorContext } from "./context.ts";
import { USERLAND_NAME_ANNOTATION } from "./desired.ts";
import { EventRecorder } from "./events.ts";
import type { OperatorMetrics } from "./metrics.ts";
import { syncTemplate } from "./syncTemplate.ts";
import { syncUserland } from "./syncUserland.ts";
import { WorkQueue } from "./workqueue.ts";

export interface ControllerOptions {
  kc: k8s.KubeConfig;
  rest: KubeRest;
  namespace: string;
  workers: number;
  resyncPeriodMs: number;
  log: Logger;
  metrics: OperatorMetrics;
  freezeCache?: boolean;
}

/** Keys: "U/<namespace>/<name>" for a Userland, "T/<namespace>/<name>" for a Template. */
const userlandKey = (namespace: string, name: string) => `U/${namespace}/${name}`;
const templateKey = (namespace: string, name: string) => `T/${namespace}/${name}`;

const RECOUNT_DELAY_MS = 1000;

/** After this many failed attempts in a row a key waits for the next change or resync. */
const MAX_RETRIES = 15;

export class Controller {
  readonly caches: Caches;
  readonly queue: WorkQueue;
  private readonly opts: ControllerOptions;
  private readonly log: Logger;
  private readonly context: OperatorContext;
  /** Userland names by "namespace/template". */
  private readonly byTemplate = new Map<string, Set<string>>();
  /** What Userlands depend on in each Template, to fan out only on changes that matter. */
  private readonly templateFingerprints = new Map<string, string>();
  /** Template name by "namespace/userland", to see a template switch. */
  private readonly templateOf = new Map<string, string>();
  /** Child names by kind and "namespace/userland". */
  private readonly children = {
    Deployment: new Map<string, Set<string>>(),
    Service: new Map<string, Set<string>>(),
  };
  private workers: Promise<void>[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.log = opts.log;
    const { kc, rest, namespace } = opts;
    const informer = <T extends k8s.KubernetesObject>(
      group: string,
      version: string,
      plural: string,
      labelSelector?: string,
    ) =>
      new Informer<T>(kc, rest, {
        path: paths.namespaced(group, version, plural, namespace),
        labelSelector,
        log: opts.log.child({ informer: plural }),
        freeze: opts.freezeCache,
      });
    const owned = `${LABELS.managedBy}=${MANAGED_BY}`;
    this.caches = {
      templates: informer<Template>("userland.dev", "v1alpha1", "templates"),
      userlands: informer<Userland>("userland.dev", "v1alpha1", "userlands"),
      deployments: informer<V1Deployment>("apps", "v1", "deployments", owned),
      services: informer<V1Service>("", "v1", "services", owned),
      pvcs: informer<V1PersistentVolumeClaim>("", "v1", "persistentvolumeclaims", owned),
    };
    this.queue = new WorkQueue(undefined, opts.metrics.queueMetrics());
    this.context = {
      namespace,
      rest,
      caches: this.caches,
      events: new EventRecorder(rest, "userland-operator", opts.log),
      metrics: opts.metrics,
      log: opts.log,
      userlandsOfTemplate: (ns, template) => [...(this.byTemplate.get(`${ns}/${template}`) ?? [])],
      childrenOf: <K extends "Deployment" | "Service">(kind: K, ns: string, userland: string) => {
        const names = this.children[kind].get(`${ns}/${userland}`) ?? new Set<string>();
        const cache = kind === "Deployment" ? this.caches.deployments : this.caches.services;
        return [...names]
          .map((n) => cache.get(n, ns))
          .filter((o) => o !== undefined) as (K extends "Deployment" ? V1Deployment : V1Service)[];
      },
      now: () => new Date(),
    };
    this.registerHandlers();
  }

  get ctx(): OperatorContext {
    return this.context;
  }

  private registerHandlers(): void {
    const { userlands, templates, deployments, services, pvcs } = this.caches;
    const onUserland = (u: Userland, removed = false) => {
      const ns = u.metadata.namespace ?? "";
      const name = u.metadata.name ?? "";
      const key = `${ns}/${name}`;
      const before = this.templateOf.get(key);
      const after = removed ? undefined : u.spec.templateName;
      if (before !== after) {
        // Keep the template index current and recount the Templates concerned.
        if (before !== undefined) {
          const set = this.byTemplate.get(`${ns}/${before}`);
          set?.delete(name);
          if (set?.size === 0) this.byTemplate.delete(`${ns}/${before}`);
          this.recount(ns, before);
        }
        if (after !== undefined) {
          const set = this.byTemplate.get(`${ns}/${after}`) ?? new Set<string>();
          this.byTemplate.set(`${ns}/${after}`, set.add(name));
          this.templateOf.set(key, after);
          this.recount(ns, after);
        } else {
          this.templateOf.delete(key);
        }
      }
      this.queue.add(userlandKey(ns, name));
    };
    userlands.on("add", (u) => onUserland(u));
    userlands.on("update", (u) => onUserland(u));
    userlands.on("delete", (u) => onUserland(u, true));

    const onTemplate = (t: Template, removed = false) => {
      const ns = t.metadata.namespace ?? "";
      const name = t.metadata.name ?? "";
      this.queue.add(templateKey(ns, name));
      // A change of the spec or of its validity reaches every Userland that uses it; a status
      // update that only recounts Userlands must not fan out to all of them.
      const valid = t.status?.conditions?.find((c) => c.type === TemplateConditions.PodTemplateValid);
      const fingerprint = removed
        ? ""
        : `${t.metadata.uid}/${t.metadata.generation}/${valid?.status}/${valid?.observedGeneration}`;
      if (this.templateFingerprints.get(`${ns}/${name}`) === fingerprint) return;
      if (removed) this.templateFingerprints.delete(`${ns}/${name}`);
      else this.templateFingerprints.set(`${ns}/${name}`, fingerprint);
      for (const u of this.byTemplate.get(`${ns}/${name}`) ?? []) this.queue.add(userlandKey(ns, u));
    };
    templates.on("add", (t) => onTemplate(t));
    templates.on("update", (t) => onTemplate(t));
    templates.on("delete", (t) => onTemplate(t, true));

    const onChild =
      (kind: "Deployment" | "Service" | undefined, removed: boolean) => (o: k8s.KubernetesObject) => {
        const ns = o.metadata?.namespace ?? "";
        // The name annotation, or the controller reference if a hand edit removed the annotation.
        const owner =
          o.metadata?.annotations?.[USERLAND_NAME_ANNOTATION] ??
          o.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Userland")?.name;
        if (!owner) return;
        if (kind) {
          const key = `${ns}/${owner}`;
          const set = this.children[kind].get(key) ?? new Set<string>();
          if (removed) set.delete(o.metadata?.name ?? "");
          else set.add(o.metadata?.name ?? "");
          if (set.size > 0) this.children[kind].set(key, set);
          else this.children[kind].delete(key);
        }
        this.queue.add(userlandKey(ns, owner));
      };
    for (const [informer, kind] of [
      [deployments, "Deployment"],
      [services, "Service"],
      [pvcs, undefined],
    ] as const) {
      const inf = informer as Informer<k8s.KubernetesObject>;
      inf.on("add", onChild(kind, false));
      inf.on("update", onChild(kind, false));
      inf.on("delete", onChild(kind, true));
    }
  }

  /** Template status carries a Userland count: batch recounts so 1,000 new Userlands cost a few writes, not 1,000. */
  private recount(namespace: string, template: string): void {
    this.queue.addAfter(templateKey(namespace, template), RECOUNT_DELAY_MS);
  }

  get synced(): boolean {
    return Object.values(this.caches).every((c: Informer<k8s.KubernetesObject>) => c.hasSynced);
  }

  /** Starts the informers, waits for their first lists, then starts the workers. */
  async start(): Promise<void> {
    await Promise.all(Object.values(this.caches).map((c: Informer<k8s.KubernetesObject>) => c.start()));
    this.log.info(
      { namespace: this.opts.namespace, workers: this.opts.workers },
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
  }

  /** Finishes the reconciles in progress, then stops the informers. */
  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await this.queue.shutDownWithDrain();
    await Promise.all(this.workers);
    await Promise.all(Object.values(this.caches).map((c: Informer<k8s.KubernetesObject>) => c.stop()));
  }

  private async runWorker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
      this.queue.done(key);
    }
  }

  private async process(key: string): Promise<void> {
    const [kindCode, namespace = "", name = ""] = key.split("/");
    const kind = kindCode === "T" ? "Template" : "Userland";
    const end = this.opts.metrics.reconcileDuration.startTimer({ kind });
    try {
      if (kind === "Template") await syncTemplate(this.context, namespace, name);
      else await syncUserland(this.context, namespace, name);
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
