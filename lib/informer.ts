/**
 * A watch-backed cache of one kind of object, in client-go's shape: list, then watch from the
 * list's resourceVersion, through KubeRest's pooled connections. Every failure (API server
 * restarted, connection refused, 5xx) lists and watches again with exponential back-off (1 s
 * doubling to 30 s, with jitter), 410 Gone at once; objects missing from the new list are reported
 * deleted. A watch the API server ends, or that receives nothing for 30 s (a silently stalled
 * connection), is started again from the last resourceVersion seen. (client-node's ListWatch did
 * this before, wrapped for resilience; dropping it keeps client-node's generated API out of the
 * operator: docs/decisions/0002-operator.md.) Several collections (one per namespace served) fill
 * one cache, each listed, watched and retried on its own.
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
import type { KubernetesObject } from "@kubernetes/client-node";
import { KubeError, type KubeRest, type WatchEvent } from "./kubeRest.ts";
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
  /**
   * The first back-off after a failure, doubled for each further one up to 30 s (default 1 s,
   * client-go's). Only tests set it, so that a test of the retries does not wait out real seconds.
   */
  retryBaseMs?: number;
  /** Objects one list request asks for (default LIST_PAGE); only tests set it. */
  listPageSize?: number;
}

/**
 * A transform that drops metadata.managedFields. Safe for objects that are later sent back whole
 * (a PUT built from a cached copy): a request without managedFields leaves the stored ones as they
 * are.
 */
export function withoutManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields === undefined) return obj;
  // A copy without them rather than `delete`: V8 turns an object that loses a property into a
  // hash table ("dictionary mode"), larger than the object it was; with thousands cached, that is
  // megabytes.
  const { managedFields: _, ...metadata } = obj.metadata;
  obj.metadata = metadata;
  return obj;
}

/** The values an object is filed under in one index (client-go's IndexFunc); none leaves it out. */
type IndexFunc<T> = (obj: T) => readonly string[];

type Handler<T> = (obj: T) => void;
/** `old` is the object the update replaces; undefined only if the cache never held it. */
type UpdateHandler<T> = (obj: T, old: T | undefined) => void;

/** "namespace/name" (client-go's MetaNamespaceKeyFunc): the key of an object, and of index values that name one. */
export const namespacedKey = (namespace: string | undefined, name: string | undefined): string =>
  namespace ? `${namespace}/${name ?? ""}` : (name ?? "");

const keyOf = (obj: KubernetesObject) => namespacedKey(obj.metadata?.namespace, obj.metadata?.name);

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

/** A watch that receives nothing for this long is ended and started again. */
const WATCH_IDLE_MS = 30_000;
/** Objects one list request asks for (client-go's pager's default). */
const LIST_PAGE = 500;
/** Listing thousands of objects from a busy API server takes a while. */
const LIST_TIMEOUT_MS = 120_000;
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 30_000;

/**
 * One collection's list and watch, retried on its own: a namespace whose watch fails leaves the
 * others running, and its re-list reports deleted only what it had listed itself.
 */
class Stream {
  readonly path: string;
  /** Where the next watch starts; empty: list first. */
  resourceVersion = "";
  abort: AbortController | undefined;
  running: Promise<void> | undefined;
  retryDelayMs = 0;
  synced = false;
  /** The cached objects this collection brought. */
  readonly keys = new Set<string>();

  constructor(path: string) {
    this.path = path;
  }
}

export class Informer<T extends KubernetesObject> {
  private readonly rest: KubeRest;
  private readonly opts: InformerOptions<T>;
  /** The cached objects by key. */
  private readonly objects = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();
  private readonly handlers = {
    add: [] as Handler<T>[],
    update: [] as UpdateHandler<T>[],
    delete: [] as Handler<T>[],
  };
  private readonly streams: Stream[];
  private stopped = true;
  private syncedResolve: (() => void) | undefined;
  private readonly syncedPromise: Promise<void>;
  private synced = false;
  /** Counts re-lists and re-watches after failures. */
  restarts = 0;

  constructor(rest: KubeRest, opts: InformerOptions<T>) {
    this.rest = rest;
    this.opts = opts;
    this.syncedPromise = new Promise((resolve) => (this.syncedResolve = resolve));
    this.streams = (typeof opts.path === "string" ? [opts.path] : opts.path).map((p) => new Stream(p));
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
    return this.objects.get(namespacedKey(namespace, name));
  }

  list(namespace?: string): readonly T[] {
    const all = [...this.objects.values()];
    return namespace ? all.filter((obj) => obj.metadata?.namespace === namespace) : all;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** Starts listing and watching; resolves once the first list is in the cache. */
  start(): Promise<void> {
    if (this.stopped) {
      this.stopped = false;
      for (const stream of this.streams) stream.running = this.run(stream);
    }
    return this.syncedPromise;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const stream of this.streams) stream.abort?.abort();
    for (const stream of this.streams) await stream.running;
  }

  private async run(stream: Stream): Promise<void> {
    while (!this.stopped) {
      const abort = (stream.abort = new AbortController());
      try {
        if (!stream.resourceVersion) await this.relist(stream, abort.signal);
        await this.rest.watch<T>(stream.path, (event) => this.onWatchEvent(stream, event), {
          query: {
            labelSelector: this.opts.labelSelector,
            resourceVersion: stream.resourceVersion,
            // Bookmarks keep resourceVersion current on quiet collections: a re-watch after a
            // failure then rarely finds it expired (410) and needs no new list.
            allowWatchBookmarks: true,
          },
          signal: abort.signal,
          idleMs: WATCH_IDLE_MS,
        });
      } catch (error) {
        if (this.stopped) return;
        // After 410 Gone, and after any failure (client-go's reflector does the same), the next
        // round lists anew: what changed while the watch was down is then certain to be seen.
        const gone = error instanceof KubeError && error.code === 410;
        stream.resourceVersion = "";
        if (!gone) await this.retryAfterFailure(stream, error, abort.signal);
      }
    }
  }

  /** Lists anew: what changed is reported as added or updated, what is gone as deleted. */
  private async relist(stream: Stream, signal: AbortSignal): Promise<void> {
    const transform = this.opts.transform;
    const seen = new Set<string>();
    const timeout = AbortSignal.any([signal, AbortSignal.timeout(LIST_TIMEOUT_MS)]);
    let cont: string | undefined;
    let resourceVersion = "";
    // Page by page (client-go's pager, 500 a page), each transformed before the next is asked:
    // one answer of 10,000 pods was a 50 MB string and its whole parse at once, most of the
    // operator's peak memory. The pages are one snapshot; an expired continue token is a 410,
    // after which the run lists again from the start.
    do {
      const page = await this.rest.list<T>(stream.path, {
        query: {
          labelSelector: this.opts.labelSelector,
          limit: this.opts.listPageSize ?? LIST_PAGE,
          continue: cont,
        },
        signal: timeout,
      });
      for (const item of page.items) {
        const obj = transform ? transform(item) : item;
        seen.add(keyOf(obj));
        this.upsert(stream, obj);
      }
      resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont);
    for (const key of stream.keys) {
      const obj = this.objects.get(key);
      if (obj && !seen.has(key)) this.remove(stream, obj);
    }
    stream.resourceVersion = resourceVersion;
    stream.retryDelayMs = 0;
    stream.synced = true;
    // Synced once every collection has had its first list.
    if (!this.synced && this.streams.every((s) => s.synced)) {
      this.synced = true;
      this.syncedResolve?.();
    }
  }

  private onWatchEvent(stream: Stream, event: WatchEvent<T>): void {
    if (event.type === "ERROR") {
      const status = event.object as { code?: number; reason?: string; message?: string };
      throw new KubeError(
        status.code ?? 500,
        status.reason ?? "WatchError",
        `WATCH ${stream.path}: ${status.message ?? "error"}`,
        status,
      );
    }
    // Events arrive: the connection works, so the next failure starts its back-off from the bottom.
    stream.retryDelayMs = 0;
    if (event.type === "BOOKMARK") {
      stream.resourceVersion = event.object.metadata?.resourceVersion ?? stream.resourceVersion;
      return;
    }
    const obj = this.opts.transform ? this.opts.transform(event.object) : event.object;
    if (event.type === "DELETED") this.remove(stream, obj);
    else this.upsert(stream, obj);
    stream.resourceVersion = obj.metadata?.resourceVersion ?? stream.resourceVersion;
  }

  /** Caches the object; handlers hear of it unless the cache holds this very version already. */
  private upsert(stream: Stream, obj: T): void {
    const key = keyOf(obj);
    stream.keys.add(key);
    const old = this.objects.get(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    // The indexes are current before any handler runs, so a handler may look up the object it got.
    if (this.opts.freeze) deepFreeze(obj);
    this.objects.set(key, obj);
    for (const index of this.indexes.values()) index.set(key, obj);
    if (old) for (const handler of this.handlers.update) handler(obj, old);
    else for (const handler of this.handlers.add) handler(obj);
  }

  private remove(stream: Stream, obj: T): void {
    const key = keyOf(obj);
    stream.keys.delete(key);
    if (!this.objects.delete(key)) return;
    for (const index of this.indexes.values()) index.set(key, undefined);
    for (const handler of this.handlers.delete) handler(obj);
  }

  private async retryAfterFailure(stream: Stream, error: unknown, signal: AbortSignal): Promise<void> {
    stream.retryDelayMs = Math.min(
      stream.retryDelayMs ? stream.retryDelayMs * 2 : (this.opts.retryBaseMs ?? RETRY_BASE_MS),
      RETRY_MAX_MS,
    );
    const delay = stream.retryDelayMs * (0.8 + Math.random() * 0.4);
    this.opts.log.warn(
      { path: stream.path, err: (error as Error)?.message ?? String(error), retryInMs: Math.round(delay) },
      "watch failed; re-listing",
    );
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.restarts++;
  }
}

function deepFreeze(value: unknown): unknown {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
