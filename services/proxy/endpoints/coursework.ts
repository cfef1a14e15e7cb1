/**
 * A student's assignments on their home page and the Hand in button (docs/decisions/0011-
 * coursework.md), through the user-manager with the proxy's own token, as Start is: the proxy
 * asks only for the session's own user, and the user-manager's access review on
 * submissions/handin decides that the proxy may ask at all.
 *
 * The home page (and its script, every 2–15 s) reads a student's assignments; the answer is kept
 * for ASSIGNMENTS_TTL_MS per student, so a class on its home pages costs the user-manager a few
 * requests a second, not one per poll. A hand-in forgets the student's answer at once.
 */
import { LRUCache } from "lru-cache";
import type { Logger } from "../../../lib/logger.ts";
import type {
  Download,
  HandInResult,
  StudentAssignment,
  UserManagerClient,
} from "../../../lib/userManagerClient.ts";
import type { ProxyMetrics } from "../metrics.ts";

const ASSIGNMENTS_TTL_MS = 10_000;

export class Coursework {
  private readonly userManager: UserManagerClient | undefined;
  private readonly metrics: ProxyMetrics;
  private readonly log: Logger;
  private readonly cache = new LRUCache<string, Promise<StudentAssignment[]>>({
    max: 10_000,
    ttl: ASSIGNMENTS_TTL_MS,
  });

  /** Students with a download under way: one at a time each (every one is an archive pod). */
  private readonly downloading = new Set<string>();

  constructor(userManager: UserManagerClient | undefined, metrics: ProxyMetrics, log: Logger) {
    this.userManager = userManager;
    this.metrics = metrics;
    this.log = log;
  }

  /** `user`'s assignments; undefined when the user-manager is not configured or did not answer. */
  async of(user: string): Promise<StudentAssignment[] | undefined> {
    if (!this.userManager) return undefined;
    let pending = this.cache.get(user);
    if (!pending) {
      pending = this.userManager.assignments(user);
      this.cache.set(user, pending);
    }
    try {
      return await pending;
    } catch (error) {
      if (this.cache.get(user) === pending) this.cache.delete(user);
      this.log.warn({ user, err: (error as Error).message }, "assignments could not be read");
      return undefined;
    }
  }

  /** Hands in `user`'s own work; "error" when the user-manager could not be asked. */
  async handIn(user: string, template: string, name: string): Promise<HandInResult | { result: "error" }> {
    if (!this.userManager) return { result: "error" };
    this.cache.delete(user);
    try {
      const result = await this.userManager.handIn(template, name, user);
      this.metrics.homeActions.inc({
        action: "handin",
        result: result.result === "handed-in" ? "success" : "refused",
      });
      this.log.info({ user, template, assignment: name, result: result.result }, "hand-in requested");
      return result;
    } catch (error) {
      this.metrics.homeActions.inc({ action: "handin", result: "error" });
      this.log.warn({ user, template, assignment: name, err: (error as Error).message }, "hand-in failed");
      return { result: "error" };
    } finally {
      this.cache.delete(user);
    }
  }

  /**
   * `user`'s home volume of `template` as a zip; "busy" while their previous download runs, "error"
   * when the user-manager could not make it (with its status: 413 over the limits). `done` must be
   * called when the transfer ends.
   */
  async download(
    user: string,
    template: string,
  ): Promise<{ download: Download; done: () => void } | "busy" | { error: number }> {
    if (!this.userManager?.downloadHome) return { error: 0 };
    if (this.downloading.has(user)) return "busy";
    this.downloading.add(user);
    const done = () => this.downloading.delete(user);
    try {
      const download = await this.userManager.downloadHome(user, template);
      this.metrics.homeActions.inc({ action: "download", result: "success" });
      this.log.info({ user, template }, "download started");
      return { download, done };
    } catch (error) {
      done();
      const status = (error as { status?: number }).status ?? 0;
      this.metrics.homeActions.inc({ action: "download", result: status === 413 ? "refused" : "error" });
      this.log.warn({ user, template, err: (error as Error).message }, "download failed");
      return { error: status };
    }
  }
}
