/**
 * A watch-backed cache of one kind of object (client-node's ListWatch), made to survive what
 * client-node's informer does not handle by itself: an error stops its watch for good (API server
 * restarted, connection refused, 5xx), and a failed first list rejects start(). Here every failure
 * re-lists and re-watches with exponential back-off (1 s doubling to 30 s, with jitter). 410 Gone
 * makes ListWatch re-list; its 30 s inactivity timeout re-watches a silently stalled connection.
 *
 * Like client-go's cache.Indexer it keeps indexes (addIndex/byIndex), so that "the Userlands of a
 * Template" is a lookup in the cache rather than a map every caller keeps beside it; and like
 * client-go's informer it hands update handlers the object it replaces.
 *
 * Like client-go's SetTransform it can strip what no reader needs from every object before it is
 * cached (managedFields, which are often half of an object): a cache of thousands of objects is
 * most of a controller's memory.
 *
 * Objects handed out are the cache's own: callers must not mutate them (clone first).
 */
import { k8s } from "./kube.ts";
import type { KubeRest } from "./kubeRest.ts";
import type { Logger } from "./logger.ts";

interface InformerOptions<T> {
  /**
   * Collection path, e.g. /apis/apps/v1/namespaces/ns/deployments; or several (one per namespace
   * served, lib/namespaces.ts), each listed and watched on its own into the one cache.
   */
  path: string | readonly string[];
  labelSelector?: string;
  log: Logger;
  /** Deep-freeze cached objects so that an accidental mutation throws (tests). */
  freeze?: boolean;
  /**
   * Applied to every listed and watched object before it is cached or handed to a handler. It gets
   * the freshly parsed object, which nothing else holds, and may change it in place.
   */
  transform?: (obj: T) => T;
}

/**
 * A transform that drops metadata.managedFields. Safe for objects that are later sent back whole
 * (a PUT built from a cached copy): a request without managedFields leaves the stored ones as they
 * are.
 */
export function withoutManagedFields<T extends k8s.KubernetesObject>(obj: T): T {
  if (obj.metadata) delete obj.metadata.managedFields;
  return obj;
}

/** client-node's Watch with a transform applied to each object it delivers. */
class TransformingWatch<T> extends k8s.Watch {
  private readonly transform: (obj: T) => T;
  constructor(kc: k8s.KubeConfig, transform: (obj: T) => T) {
    super(kc);
    this.transform = transform;
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      // ERROR events carry a Status, BOOKMARK events a stub: only objects are transformed.
      (phase, obj, watchObj) =>
        callback(phase, phase === "ERROR" || phase === "BOOKMARK" ? obj : this.transform(obj as T), watchObj),
      done,
    );
  }
}

/** The values an object is filed under in one index (client-go's IndexFunc); none leaves it out. */
type IndexFunc<T> = (obj: T) => readonly string[];

type Handler<T> = (obj: T) => void;
/** `old` is the object the update replaces; undefined only if the cache never held it. */
type UpdateHandler<T> = (obj: T, old: T | undefined) => void;

/** "namespace/name" (client-go's MetaNamespaceKeyFunc): the key of an object, and of index values that name one. */
export const namespacedKey = (namespace: string | undefined, name: string | undefined): string =>
  namespace ? `${namespace}/${name ?? ""}` : (name ?? "");

const keyOf = (obj: k8s.KubernetesObject) => namespacedKey(obj.metadata?.namespace, obj.metadata?.name);

/** One index: object keys by value, and each object's values to take it out again when it changes. */
class Index<T> {
  private readonly keysByValue = new Map<string, Set<string>>();
  private readonly valuesByKey = new Map<string, readonly string[]>();
  private readonly valuesOf: IndexFunc<T>;

  constructor(valuesOf: IndexFunc<T>) {
    this.valuesOf = valuesOf;
  }

  /** Files the object under its current values; undefined takes it out. */
  set(key: string, obj: T | undefined): void {
    for (const value of this.valuesByKey.get(key) ?? []) {
      const keys = this.keysByValue.get(value);
      keys?.delete(key);
      if (keys?.size === 0) this.keysByValue.delete(value);
    }
    const values = obj ? this.valuesOf(obj) : [];
    if (values.length === 0) {
      this.valuesByKey.delete(key);
      return;
    }
    this.valuesByKey.set(key, values);
    for (const value of values) {
      const keys = this.keysByValue.get(value) ?? new Set<string>();
      this.keysByValue.set(value, keys.add(key));
    }
  }

  keys(value: string): Iterable<string> {
    return this.keysByValue.get(value) ?? [];
  }
}

/** One collection's list and watch, retried on its own: a namespace whose watch fails leaves the others running. */
class Stream<T extends k8s.KubernetesObject> {
  readonly path: string;
  readonly listWatch: k8s.ListWatch<T>;
  synced = false;
  retryDelayMs = 0;
  retryTimer: NodeJS.Timeout | undefined;

  constructor(path: string, listWatch: k8s.ListWatch<T>) {
    this.path = path;
    this.listWatch = listWatch;
  }
}

export class Informer<T extends k8s.KubernetesObject> {
  private readonly streams: Stream<T>[];
  private readonly opts: InformerOptions<T>;
  /** The cached objects by key, kept beside ListWatch's cache to hand update handlers the old object. */
  private readonly objects = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();
  private readonly handlers = {
    add: [] as Handler<T>[],
    update: [] as UpdateHandler<T>[],
    delete: [] as Handler<T>[],
  };
  private stopped = true;
  private syncedResolve: (() => void) | undefined;
  private readonly syncedPromise: Promise<void>;
  private synced = false;
  /** Counts re-lists and re-watches after failures. */
  restarts = 0;

  constructor(kc: k8s.KubeConfig, rest: KubeRest, opts: InformerOptions<T>) {
    this.opts = opts;
    this.syncedPromise = new Promise((resolve) => (this.syncedResolve = resolve));
    const watch = opts.transform ? new TransformingWatch(kc, opts.transform) : new k8s.Watch(kc);
    this.streams = (typeof opts.path === "string" ? [opts.path] : opts.path).map((path) =>
      this.stream(rest, watch, path),
    );
  }

  private stream(rest: KubeRest, watch: k8s.Watch, path: string): Stream<T> {
    const { transform, labelSelector } = this.opts;
    const list = async (): Promise<k8s.KubernetesListObject<T>> => {
      const result = await rest.list<T>(path, { query: { labelSelector } });
      if (transform) result.items = result.items.map(transform);
      // ListWatch fills its cache right after this promise settles, within the same macrotask.
      setImmediate(() => this.markSynced(stream));
      return result;
    };
    const listWatch = new k8s.ListWatch<T>(path, watch, list, false, labelSelector);
    const stream = new Stream(path, listWatch);
    // The indexes are current before any handler runs, so a handler may look up the object it got.
    listWatch.on("add", (obj) => {
      this.store(obj);
      for (const handler of this.handlers.add) handler(obj);
    });
    listWatch.on("update", (obj) => {
      const old = this.objects.get(keyOf(obj));
      this.store(obj);
      for (const handler of this.handlers.update) handler(obj, old);
    });
    listWatch.on("delete", (obj) => {
      const key = keyOf(obj);
      this.objects.delete(key);
      for (const index of this.indexes.values()) index.set(key, undefined);
      for (const handler of this.handlers.delete) handler(obj);
    });
    listWatch.on("error", (error: unknown) => this.retry(stream, error));
    return stream;
  }

  on(event: "add" | "delete", handler: Handler<T>): void;
  on(event: "update", handler: UpdateHandler<T>): void;
  on(event: "add" | "update" | "delete", handler: Handler<T> | UpdateHandler<T>): void {
    (this.handlers[event] as (Handler<T> | UpdateHandler<T>)[]).push(handler);
  }

  /** Adds an index; objects already cached are filed at once, later ones as they arrive. */
  addIndex(name: string, valuesOf: IndexFunc<T>): void {
    if (this.indexes.has(name)) throw new Error(`index ${name} exists already`);
    const index = new Index(valuesOf);
    for (const [key, obj] of this.objects) index.set(key, obj);
    this.indexes.set(name, index);
  }

  /** The cached objects filed under `value` in the index `name`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index ${name}`);
    const objects: T[] = [];
    for (const key of index.keys(value)) {
      const obj = this.objects.get(key);
      if (obj) objects.push(obj);
    }
    return objects;
  }

  get(name: string, namespace?: string): T | undefined {
    const [only, ...more] = this.streams;
    if (only && more.length === 0) return only.listWatch.get(name, namespace);
    // Several collections: the handlers' copy of all of them, one lookup instead of one per stream.
    return this.objects.get(namespacedKey(namespace, name));
  }

  list(namespace?: string): readonly T[] {
    const [only, ...more] = this.streams;
    if (only && more.length === 0) return only.listWatch.list(namespace);
    return this.streams.flatMap((s) => s.listWatch.list(namespace));
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** Starts listing and watching; resolves once the first list is in the cache. */
  start(): Promise<void> {
    this.stopped = false;
    for (const stream of this.streams) void this.run(stream);
    return this.syncedPromise;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const stream of this.streams) clearTimeout(stream.retryTimer);
    await Promise.all(this.streams.map((s) => s.listWatch.stop()));
  }

  private store(obj: T): void {
    if (this.opts.freeze) deepFreeze(obj);
    const key = keyOf(obj);
    this.objects.set(key, obj);
    for (const index of this.indexes.values()) index.set(key, obj);
  }

  private async run(stream: Stream<T>): Promise<void> {
    try {
      // ListWatch reports list and watch failures through its "error" event, handled by retry().
      await stream.listWatch.start();
    } catch (error) {
      this.retry(stream, error);
    }
  }

  /** Synced once every collection has had its first list. */
  private markSynced(stream: Stream<T>): void {
    stream.retryDelayMs = 0;
    stream.synced = true;
    if (this.synced || !this.streams.every((s) => s.synced)) return;
    this.synced = true;
    this.syncedResolve?.();
  }

  private retry(stream: Stream<T>, error: unknown): void {
    if (this.stopped || stream.retryTimer) return;
    stream.retryDelayMs = Math.min(stream.retryDelayMs ? stream.retryDelayMs * 2 : 1000, 30_000);
    const delay = stream.retryDelayMs * (0.8 + Math.random() * 0.4);
    this.opts.log.warn(
      { path: stream.path, err: (error as Error)?.message ?? String(error), retryInMs: Math.round(delay) },
      "watch failed; re-listing",
    );
    stream.retryTimer = setTimeout(() => {
      stream.retryTimer = undefined;
      this.restarts++;
      void this.run(stream);
    }, delay);
    stream.retryTimer.unref();
  }
}

function deepFreeze(value: unknown): unknown {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
