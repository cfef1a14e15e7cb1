/**
 * Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
 * - a candidate takes the Lease when it is free or its holder has not renewed it for
 *   leaseDuration, judged by when *this* replica last saw the record change (no clock comparison
 *   between machines);
 * - the leader renews every retryPeriod; if it cannot renew for renewDeadline it stops leading and
 *   campaigns again (an API server outage must not leave the operator dead until someone restarts it);
 * - on shutdown the leader releases the Lease so another replica takes over at once.
 * Writes are guarded by resourceVersion, so two candidates never both win.
 */
import { isAlreadyExists, isConflict, isNotFound, type KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import { apiVersionOf, resources } from "./resources.ts";

export interface LeaderElectionOptions {
  rest: KubeRest;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  log: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

interface LeaseJson {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

const microTime = (d: Date) => d.toISOString().replace("Z", "000Z");

export class LeaderElector {
  private readonly opts: LeaderElectionOptions;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The acquire/renew attempt under way, if any: stop() lets it finish before releasing. */
  private attempt: Promise<void> = Promise.resolve();
  private observed: { record: string; at: number } | undefined;
  private lastRenew = 0;
  private lease: LeaseJson | undefined;

  constructor(opts: LeaderElectionOptions) {
    this.opts = opts;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  private get path(): string {
    return resources.Lease.path(this.opts.namespace, this.opts.name);
  }

  start(): void {
    this.attempt = this.tick();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.attempt = this.tick();
    }, this.opts.retryPeriodMs);
  }

  private async tick(): Promise<void> {
    try {
      const ok = await this.tryAcquireOrRenew();
      if (ok) {
        this.lastRenew = Date.now();
        if (!this.leading) {
          this.leading = true;
          this.opts.log.info({ identity: this.opts.identity, lease: this.opts.name }, "became leader");
          this.opts.onStartedLeading();
        }
      }
    } catch (error) {
      this.opts.log.warn({ err: (error as Error).message }, "lease update failed");
    }
    if (this.leading && Date.now() - this.lastRenew > this.opts.renewDeadlineMs) {
      this.leading = false;
      this.opts.log.error(
        { identity: this.opts.identity },
        "could not renew the lease in time; leadership lost",
      );
      this.opts.onStoppedLeading();
    }
    this.schedule();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const { rest, identity, namespace, name } = this.opts;
    const spec = (transitions: number, acquireTime: string): LeaseJson["spec"] => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseDurationMs / 1000),
      acquireTime,
      renewTime: microTime(now),
      leaseTransitions: transitions,
    });
    let current: LeaseJson;
    try {
      current = await rest.get<LeaseJson>(this.path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const body = {
        apiVersion: apiVersionOf(resources.Lease),
        kind: "Lease",
        metadata: { name, namespace },
        spec: spec(0, microTime(now)),
      };
      try {
        this.lease = await rest.create<LeaseJson>(resources.Lease.path(namespace), body);
        return true;
      } catch (createError) {
        if (isAlreadyExists(createError)) return false;
        throw createError;
      }
    }
    const record = JSON.stringify([
      current.spec.holderIdentity,
      current.spec.renewTime,
      current.spec.leaseTransitions,
    ]);
    if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
    const holder = current.spec.holderIdentity ?? "";
    const durationMs = (current.spec.leaseDurationSeconds ?? 0) * 1000;
    const iHold = holder === identity;
    // Measured at `now`, the time the new record states: a Lease taken is never stamped with a time
    // before the old one expired (a slow GET cannot stretch the wait backwards).
    if (!iHold && holder !== "" && now.getTime() - this.observed.at < durationMs) return false;

    const transitions = (current.spec.leaseTransitions ?? 0) + (iHold ? 0 : 1);
    const acquireTime = iHold ? (current.spec.acquireTime ?? microTime(now)) : microTime(now);
    try {
      this.lease = await rest.replace<LeaseJson>(this.path, {
        ...current,
        spec: spec(transitions, acquireTime),
      });
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  /** Stops campaigning; a leader gives the Lease up so another replica can take it immediately. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // A renewal still in flight would change the Lease's resourceVersion under the release below,
    // which would then fail with 409 and leave the standby waiting for the Lease to expire.
    await this.attempt;
    if (!this.leading || !this.lease) return;
    this.leading = false;
    try {
      const current = await this.opts.rest.get<LeaseJson>(this.path);
      if (current.spec.holderIdentity !== this.opts.identity) return;
      await this.opts.rest.replace(this.path, {
        ...current,
        spec: {
          ...current.spec,
          holderIdentity: null,
          leaseDurationSeconds: 1,
          renewTime: microTime(new Date()),
        },
      });
      this.opts.log.info({ identity: this.opts.identity }, "released the lease");
    } catch (error) {
      this.opts.log.warn({ err: (error as Error).message }, "could not release the lease");
    }
  }
}
