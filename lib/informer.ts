/**
 * A watch-backed cache of one kind of object (client-node's ListWatch), made to survive what
 * client-node's informer does not handle by itself: an error stops its watch for good (API server
 * restarted, connection refused, 5xx), and a failed first list rejects start(). Here every failure
 * re-lists and re-watches with exponential back-off (1 s doubling to 30 s, with jitter). 410 Gone
 * makes ListWatch re-list; its 30 s inactivity timeout re-watches a silently stalled connection.
 *
 * Objects handed out are the cache's own: callers must not mutate them (clone first).
 */
import { k8s } from "./kube.ts";
import type { KubeRest } from "./kubeRest.ts";
import type { Logger } from "./logger.ts";

export interface InformerOptions {
  /** Collection path, e.g. /apis/apps/v1/namespaces/ns/deployments. */
  path: string;
  labelSelector?: string;
  log: Logger;
  /** Deep-freeze cached objects so that an accidental mutation throws (tests). */
  freeze?: boolean;
}

type Handler<T> = (obj: T) => void;

export class Informer<T extends k8s.KubernetesObject> {
  private readonly listWatch: k8s.ListWatch<T>;
  private readonly opts: InformerOptions;
  private stopped = true;
  private retryDelayMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private syncedResolve: (() => void) | undefined;
  private readonly syncedPromise: Promise<void>;
  private synced = false;
  /** Counts re-lists and re-watches after failures, for metrics and tests. */
  restarts = 0;

  constructor(kc: k8s.KubeConfig, rest: KubeRest, opts: InformerOptions) {
    this.opts = opts;
    const list = async (): Promise<k8s.KubernetesListObject<T>> => {
      const result = await rest.list<T>(opts.path, { query: { labelSelector: opts.labelSelector } });
      // ListWatch fills its cache right after this promise settles, within the same macrotask.
      setImmediate(() => this.markSynced());
      return result;
    };
    this.listWatch = new k8s.ListWatch<T>(opts.path, new k8s.Watch(kc), list, false, opts.labelSelector);
    this.syncedPromise = new Promise((resolve) => (this.syncedResolve = resolve));
    if (opts.freeze) {
      const freeze = (obj: T) => void deepFreeze(obj);
      this.listWatch.on("add", freeze);
      this.listWatch.on("update", freeze);
    }
    this.listWatch.on("error", (error: unknown) => this.retry(error));
  }

  on(event: "add" | "update" | "delete", handler: Handler<T>): void {
    this.listWatch.on(event, handler);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.listWatch.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.listWatch.list(namespace);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** Starts listing and watching; resolves once the first list is in the cache. */
  start(): Promise<void> {
    this.stopped = false;
    void this.run();
    return this.syncedPromise;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.listWatch.stop();
  }

  private async run(): Promise<void> {
    try {
      // ListWatch reports list and watch failures through its "error" event, handled by retry().
      await this.listWatch.start();
    } catch (error) {
      this.retry(error);
    }
  }

  private markSynced(): void {
    this.retryDelayMs = 0;
    if (this.synced) return;
    this.synced = true;
    this.syncedResolve?.();
  }

  private retry(error: unknown): void {
    if (this.stopped || this.retryTimer) return;
    this.retryDelayMs = Math.min(this.retryDelayMs ? this.retryDelayMs * 2 : 1000, 30_000);
    const delay = this.retryDelayMs * (0.8 + Math.random() * 0.4);
    this.opts.log.warn(
      { path: this.opts.path, err: (error as Error)?.message ?? String(error), retryInMs: Math.round(delay) },
      "watch failed; re-listing",
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.restarts++;
      void this.run();
    }, delay);
    this.retryTimer.unref();
  }
}

function deepFreeze(value: unknown): unknown {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
