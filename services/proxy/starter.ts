/**
 * Starts stopped environments through the user-manager (the Start button, PROXY_START_ON_ACCESS),
 * at most once a minute per Userland: a page reloading or many tabs must not flood it, and for
 * that minute the environment counts as starting although its Userland still says stopped.
 */
import { LRUCache } from "lru-cache";
import type { Userland } from "../../api/v1alpha1/index.ts";
import type { Logger } from "../../lib/logger.ts";
import type { UserManagerClient } from "../../lib/userManagerClient.ts";
import { userlandKey } from "./environment.ts";
import type { ProxyMetrics } from "./metrics.ts";

const START_INTERVAL_MS = 60_000;

export class Starter {
  private readonly userManager: UserManagerClient | undefined;
  private readonly metrics: ProxyMetrics;
  private readonly log: Logger;
  /** Userlands a start was sent for in the last minute (bounded: a replica sees every Userland). */
  private readonly requested = new LRUCache<string, true>({ max: 10_000, ttl: START_INTERVAL_MS });

  constructor(userManager: UserManagerClient | undefined, metrics: ProxyMetrics, log: Logger) {
    this.userManager = userManager;
    this.metrics = metrics;
    this.log = log;
  }

  /** Whether a Start button can work (the user-manager is configured). */
  get canStart(): boolean {
    return this.userManager !== undefined;
  }

  recentlyRequested(userland: Userland): boolean {
    return this.requested.has(userlandKey(userland));
  }

  /** Asks for a start unless one was sent in the last minute; true when a start was sent or is pending. */
  async request(userland: Userland, user: string | undefined): Promise<boolean> {
    const key = userlandKey(userland);
    if (this.requested.has(key)) return true;
    if (!this.userManager) return false;
    this.requested.set(key, true);
    try {
      await this.userManager.start(userland.metadata.name ?? "");
      this.metrics.starts.inc({ result: "success" });
      this.log.info({ user, userland: key }, "start requested");
      return true;
    } catch (error) {
      this.requested.delete(key);
      this.metrics.starts.inc({ result: "error" });
      this.log.warn({ user, userland: key, err: (error as Error).message }, "start request failed");
      return false;
    }
  }
}
