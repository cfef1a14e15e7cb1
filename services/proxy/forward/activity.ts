/**
 * Activity for idle culling. Every proxied request and WebSocket frame marks its Userland as used
 * (a Map write, nothing more); every PROXY_ACTIVITY_FLUSH the marks are written as the
 * userland.dev/last-activity annotation that the operator's culler reads, at most one merge-patch
 * per Userland per flush. Replicas write independently: a patch is skipped when the cached object
 * already shows the same or later activity (another replica got there first).
 */
import pLimit from "p-limit";
import {
  activityStamp,
  type Userland,
  UserlandAnnotations,
  userlandsPath,
} from "../../../api/v1alpha1/index.ts";
import { isNotFound, type KubeRest } from "../../../lib/kubeRest.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { ProxyMetrics } from "../metrics.ts";

interface ActivityOptions {
  rest: KubeRest;
  log: Logger;
  metrics: ProxyMetrics;
  flushMs: number;
  /** The cached Userland, to skip writes that would not move the annotation forward. */
  cached?: (namespace: string, name: string) => Userland | undefined;
  /** Patches in flight at once. */
  concurrency?: number;
}

export class ActivityRecorder {
  private readonly opts: ActivityOptions;
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(opts: ActivityOptions) {
    this.opts = opts;
  }

  touch(namespace: string, name: string, now = Date.now()): void {
    this.pending.set(`${namespace}/${name}`, now);
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.opts.flushMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is pending, so a rolling update loses no activity. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Writes pending activity; concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending = new Map();
    const limit = pLimit(this.opts.concurrency ?? 8);
    await Promise.all(batch.map(([key, ms]) => limit(() => this.write(key, ms))));
  }

  private async write(key: string, ms: number): Promise<void> {
    const [namespace = "", name = ""] = key.split("/");
    const stamp = activityStamp(ms);
    const current = this.opts.cached?.(namespace, name)?.metadata.annotations?.[
      UserlandAnnotations.lastActivity
    ];
    if (current && Date.parse(current) >= Date.parse(stamp)) return;
    try {
      await this.opts.rest.patch(
        userlandsPath(namespace, name),
        { metadata: { annotations: { [UserlandAnnotations.lastActivity]: stamp } } },
        "merge",
      );
      this.opts.metrics.activityPatches.inc({ result: "success" });
    } catch (error) {
      if (isNotFound(error)) {
        this.opts.metrics.activityPatches.inc({ result: "gone" });
        return;
      }
      this.opts.metrics.activityPatches.inc({ result: "error" });
      this.opts.log.warn(
        { userland: key, err: (error as Error).message },
        "could not record activity; retrying at the next flush",
      );
      // Newer activity recorded meanwhile wins.
      if (!this.pending.has(key)) this.pending.set(key, ms);
    }
  }
}
