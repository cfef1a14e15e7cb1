/**
 * The proxy's requests to the user-manager on a student's behalf, with the proxy's own token:
 *
 * - start a stopped environment (the Start buttons, PROXY_START_ON_ACCESS), at most once a minute
 *   per Userland: a page reloading or many tabs must not flood it, and for that minute the
 *   environment counts as starting although its Userland still says stopped;
 * - stop one (the home page's Stop button); starts and stops together at most ten a minute per
 *   Userland, so flipping one back and forth cannot flood the user-manager;
 * - create one of a self-service Template (the home page), at most once a minute per student and
 *   Template: the new Userland reaches this replica's cache a moment later, and a second click in
 *   that moment must not ask again.
 *
 * Callers decide whose Userland it is (always the session's own); this file only talks.
 */
import { LRUCache } from "lru-cache";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { UserManagerClient } from "../../../lib/userManagerClient.ts";
import { userlandKey } from "../route/userlandIndex.ts";
import type { ProxyMetrics } from "../metrics.ts";

const START_INTERVAL_MS = 60_000;
/** Start and Stop requests one Userland may cause in a minute: flipping it back and forth is bounded. */
const ACTIONS_PER_MINUTE = 10;

export class Starter {
  private readonly userManager: UserManagerClient | undefined;
  private readonly metrics: ProxyMetrics;
  private readonly log: Logger;
  /** Userlands a start was sent for in the last minute (bounded: a replica sees every Userland). */
  private readonly requested = new LRUCache<string, true>({ max: 10_000, ttl: START_INTERVAL_MS });
  /** Start and Stop requests per Userland, counted from the first in the last minute. */
  private readonly actions = new LRUCache<string, number>({ max: 10_000, ttl: START_INTERVAL_MS });
  /** (user, Template) pairs a self-service create was sent for in the last minute. */
  private readonly created = new LRUCache<string, true>({ max: 10_000, ttl: START_INTERVAL_MS });

  constructor(userManager: UserManagerClient | undefined, metrics: ProxyMetrics, log: Logger) {
    this.userManager = userManager;
    this.metrics = metrics;
    this.log = log;
  }

  /** Whether Start, Stop and self-service buttons can work (the user-manager is configured). */
  get canStart(): boolean {
    return this.userManager !== undefined;
  }

  /** Counts a start or stop of `key`; false once the minute's budget is spent. */
  private allowed(key: string): boolean {
    const count = this.actions.get(key) ?? 0;
    if (count >= ACTIONS_PER_MINUTE) return false;
    this.actions.set(key, count + 1, { noUpdateTTL: true });
    return true;
  }

  recentlyRequested(userland: Userland): boolean {
    return this.requested.has(userlandKey(userland));
  }

  /** Asks for a start unless one was sent in the last minute; true when a start was sent or is pending. */
  async request(userland: Userland, user: string | undefined): Promise<boolean> {
    const key = userlandKey(userland);
    if (this.requested.has(key)) return true;
    if (!this.userManager || !this.allowed(key)) return false;
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

  /** Asks for a stop; true when the user-manager accepted it (false also past the minute's budget). */
  async stop(userland: Userland, user: string): Promise<boolean> {
    const key = userlandKey(userland);
    if (!this.userManager || !this.allowed(key)) return false;
    try {
      await this.userManager.stop(userland.metadata.name ?? "");
      // Stopped on purpose: no longer "starting" for the rest of the minute.
      this.requested.delete(key);
      this.metrics.homeActions.inc({ action: "stop", result: "success" });
      this.log.info({ user, userland: key }, "stop requested");
      return true;
    } catch (error) {
      this.metrics.homeActions.inc({ action: "stop", result: "error" });
      this.log.warn({ user, userland: key, err: (error as Error).message }, "stop request failed");
      return false;
    }
  }

  /** Whether a self-service create for (user, Template) was sent in the last minute. */
  createRequested(user: string, template: string): boolean {
    return this.created.has(`${template}\u0000${user}`);
  }

  /**
   * Asks for `user`'s Userland of a self-service Template, unless that was asked in the last minute.
   * "created" also when it was asked recently; "exists" when the user-manager refused because the
   * student already holds one (of this Template, or any, when it allows one per student).
   */
  async create(user: string, template: string): Promise<"created" | "exists" | "error"> {
    const key = `${template}\u0000${user}`;
    if (this.created.has(key)) return "created";
    if (!this.userManager) return "error";
    this.created.set(key, true);
    try {
      const result = await this.userManager.create(user, template);
      if (result === "exists") this.created.delete(key);
      this.metrics.homeActions.inc({ action: "create", result: result === "created" ? "success" : "exists" });
      this.log.info({ user, template, result }, "self-service environment requested");
      return result;
    } catch (error) {
      this.created.delete(key);
      this.metrics.homeActions.inc({ action: "create", result: "error" });
      this.log.warn({ user, template, err: (error as Error).message }, "self-service create failed");
      return "error";
    }
  }
}
