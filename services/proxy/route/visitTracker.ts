/**
 * Teachers' visits to students' environments, as this replica sees them
 * (docs/decisions/0012-visits.md). The user-manager decides (RBAC) and keeps the record; this file
 * asks it and tells it how the visit goes:
 *
 * - a visitor's first request (or the first after a refusal or a quiet period) waits for a
 *   "begin" report: the user-manager's answer lets them in or not;
 * - every request, and every open WebSocket, keeps the visit going; every REPORT_MS a visit that
 *   was active is reported again ("continue"), which also asks RBAC again, so a revoked right
 *   stops a visit within that time (plus the user-manager's grant cache);
 * - a visit with no request and no open WebSocket for PROXY_VISIT_QUIET is reported "end"; one
 *   whose WebSockets have all closed (its IDE tab was closed) ends after CLOSED_TAB_MS without a
 *   request, so a student's home page does not say "now" for minutes after the teacher left.
 *
 * The visit cookie on the environment's own host holds the visitor's own session; it grants
 * nothing by itself (every replica asks before letting a visitor in).
 */
import type { Userland } from "../../../api/v1alpha1/index.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { UserManagerClient, VisitReportBody } from "../../../lib/userManagerClient.ts";

/**
 * The visitor's session on the environment's own host, the visit's origin (host-only, set by the
 * hand-over from the console's Open). Behind `__Host-` over https, so no page of a sibling host can
 * plant one with `Domain=`.
 */
export const visitCookieName = (secure: boolean): string =>
  secure ? "__Host-userland_visit" : "userland_visit";
export const VISIT_PATH = "/_userland/visit";
export const LEAVE_PATH = "/_userland/leave";
/** The student's Allow (their home page's form). */
export const ALLOW_PATH = "/_userland/allow-visit";

/** "waiting": RBAC allows it, and the Template asks the student's Allow first. */
export type Admission = "allowed" | "denied" | "waiting" | "unavailable";

interface OpenVisit {
  namespace: string;
  name: string;
  visitor: string;
  /** The visitor's latest session token: reports carry it for the user-manager to verify. */
  token: string;
  firstSeen: number;
  lastSeen: number;
  /** lastSeen as last reported. */
  reported: number;
  sockets: number;
  /** It had WebSockets and the last one closed (false while one is open, or none ever was). */
  socketsClosed: boolean;
  /** Until then, requests pass without asking again. */
  allowedUntil: number;
}

export interface VisitTrackerOptions {
  userManager: UserManagerClient | undefined;
  quietMs: number;
  log: Logger;
  now?: () => number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A visit that had WebSockets and has none left, with no request since, has ended after this long:
 * an IDE holds one while its tab is open, and a reload opens it again within seconds.
 */
export const CLOSED_TAB_MS = 20_000;

export class VisitTracker {
  private readonly opts: VisitTrackerOptions;
  private readonly visits = new Map<string, OpenVisit>();
  /** Admissions in flight, so a page's many first requests ask once. */
  private readonly asking = new Map<string, Promise<Admission>>();
  private timer: NodeJS.Timeout | undefined;
  /** How often active visits are reported (and the visitor's right asked again). */
  readonly reportMs: number;

  constructor(opts: VisitTrackerOptions) {
    this.opts = opts;
    this.reportMs = Math.max(250, Math.min(30_000, Math.floor(opts.quietMs / 4)));
  }

  /** Visits work only with the user-manager, which decides and records them. */
  get enabled(): boolean {
    return this.opts.userManager?.visit !== undefined;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  static key(namespace: string, name: string, visitor: string): string {
    return `${namespace}/${name}\u0000${visitor}`;
  }

  /** Whether `visitor` may be in `userland` now; asks the user-manager when this replica does not know. */
  async admit(userland: Userland, visitor: string, token: string | undefined): Promise<Admission> {
    const { namespace = "", name = "" } = userland.metadata;
    const key = VisitTracker.key(namespace, name, visitor);
    const open = this.visits.get(key);
    const now = this.now();
    if (open && now < open.allowedUntil) {
      if (token) open.token = token;
      open.lastSeen = now;
      return "allowed";
    }
    if (!token || !this.enabled) return "unavailable";
    let pending = this.asking.get(key);
    if (!pending) {
      pending = this.begin(namespace, name, visitor, token, open).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    return pending;
  }

  private async begin(
    namespace: string,
    name: string,
    visitor: string,
    token: string,
    open: OpenVisit | undefined,
  ): Promise<Admission> {
    const now = this.now();
    const visit: OpenVisit = open ?? {
      namespace,
      name,
      visitor,
      token,
      firstSeen: now,
      lastSeen: now,
      reported: 0,
      sockets: 0,
      socketsClosed: false,
      allowedUntil: 0,
    };
    visit.token = token;
    visit.lastSeen = now;
    const answer = await this.report(visit, open ? "continue" : "begin");
    const key = VisitTracker.key(namespace, name, visitor);
    if (answer !== "allowed") {
      this.visits.delete(key);
      return answer;
    }
    this.visits.set(key, visit);
    this.schedule();
    return "allowed";
  }

  /** The visitor left (Leave): the visit is reported ended now, not after the quiet period. */
  async leave(namespace: string, name: string, visitor: string): Promise<void> {
    const key = VisitTracker.key(namespace, name, visitor);
    const visit = this.visits.get(key);
    if (!visit) return;
    this.visits.delete(key);
    visit.lastSeen = this.now();
    await this.report(visit, "end");
  }

  /** A request of an admitted visit. */
  touch(namespace: string, name: string, visitor: string): void {
    const visit = this.visits.get(VisitTracker.key(namespace, name, visitor));
    if (visit) visit.lastSeen = Math.max(visit.lastSeen, this.now());
  }

  /** A WebSocket of an admitted visit opened; the returned function is called when it closes. */
  socketOpened(namespace: string, name: string, visitor: string): () => void {
    const visit = this.visits.get(VisitTracker.key(namespace, name, visitor));
    if (!visit) return () => undefined;
    visit.sockets++;
    visit.socketsClosed = false;
    return () => {
      visit.sockets--;
      visit.lastSeen = Math.max(visit.lastSeen, this.now());
      visit.socketsClosed = visit.sockets === 0;
    };
  }

  private async report(visit: OpenVisit, phase: VisitReportBody["phase"]): Promise<Admission> {
    const userManager = this.opts.userManager;
    if (!userManager?.visit) return "unavailable";
    const lastSeen = visit.lastSeen;
    try {
      const answer = await userManager.visit(visit.name, {
        session: visit.token,
        phase,
        firstSeen: iso(visit.firstSeen),
        lastSeen: iso(lastSeen),
        quietSeconds: Math.ceil(this.opts.quietMs / 1000),
      });
      const fields = { visitor: visit.visitor, userland: `${visit.namespace}/${visit.name}`, phase };
      if (answer === "forbidden") {
        this.opts.log.info(fields, "visit refused");
        return "denied";
      }
      if (answer === "consent") return "waiting";
      visit.reported = lastSeen;
      visit.allowedUntil = this.now() + this.reportMs;
      if (phase !== "continue")
        this.opts.log.info(
          { ...fields, owner: answer.owner, seconds: Math.round((lastSeen - visit.firstSeen) / 1000) },
          phase === "begin" ? "visit began" : "visit ended",
        );
      return "allowed";
    } catch (error) {
      this.opts.log.warn(
        {
          visitor: visit.visitor,
          userland: `${visit.namespace}/${visit.name}`,
          phase,
          err: (error as Error).message,
        },
        "could not report a visit",
      );
      return "unavailable";
    }
  }

  private schedule(): void {
    if (this.timer || this.visits.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick().finally(() => this.schedule());
    }, this.reportMs);
    this.timer.unref();
  }

  /** Reports what changed since the last tick: visits still going on, and those that went quiet. */
  async tick(): Promise<void> {
    const now = this.now();
    const reports: Promise<unknown>[] = [];
    for (const [key, visit] of this.visits) {
      if (visit.sockets > 0) visit.lastSeen = now;
      const tabClosed = visit.socketsClosed && now - visit.lastSeen >= CLOSED_TAB_MS;
      if (tabClosed || now - visit.lastSeen >= this.opts.quietMs) {
        this.visits.delete(key);
        reports.push(this.report(visit, "end"));
      } else if (visit.lastSeen > visit.reported) {
        reports.push(
          this.report(visit, "continue").then((answer) => {
            if (answer === "denied" && this.visits.get(key) === visit) this.visits.delete(key);
          }),
        );
      }
    }
    await Promise.all(reports);
  }

  /** Shutdown: stops reporting (another replica, or the stale rule, ends what is open). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
