/**
 * Spawns in progress: since when each Userland has been on its way to Ready (created, enabled
 * again, or back from Ready, Stopped or Failed), so that reaching Ready records how long its student
 * waited (`userland_operator_spawn_duration_seconds`) and the longest wait can be watched
 * (`userland_operator_spawn_oldest_seconds`, the stuck-starting alert).
 *
 * Kept in memory by the leader. A new Userland's start is its creationTimestamp (whole seconds),
 * which survives a leader change; any other spawn that a new leader finds under way has an unknown
 * start: it counts toward the longest wait from when this leader first saw it (a lower bound), and
 * its duration is not recorded rather than recorded wrong.
 */
import type { Userland, UserlandPhase } from "../api/v1alpha1/index.ts";
import { timeMs } from "./conditions.ts";

interface Spawn {
  /** Milliseconds since the epoch. */
  since: number;
  /** False when the spawn was under way before this leader saw it and its start is unknown. */
  exact: boolean;
  /** Ready was recorded; kept until the cache shows Ready too, so a sync from the stale cache does not record it twice. */
  recorded: boolean;
}

/** A finished spawn: how long it took, for which Template. */
export interface SpawnDone {
  template: string;
  seconds: number;
}

const key = (u: Userland) => `${u.metadata.namespace ?? ""}/${u.metadata.name ?? ""}`;

/** Phases of a Userland on its way to Ready. */
const isStarting = (phase: UserlandPhase | undefined) => phase === "Pending" || phase === "Starting";

export class Spawns {
  private readonly inProgress = new Map<string, Spawn>();

  /**
   * Follows one sync: `stored` is the phase in the cached status (undefined for a Userland never
   * reported), `next` the phase the sync found and wrote. Returns the finished spawn when the
   * Userland has just become Ready and its start is known.
   */
  observe(
    u: Userland,
    stored: UserlandPhase | undefined,
    next: UserlandPhase | undefined,
    now: number,
  ): SpawnDone | undefined {
    const k = key(u);
    const spawn = this.inProgress.get(k);
    if (isStarting(next)) {
      // Starting again after Ready was recorded (its pod went away): a new spawn.
      if (!spawn || spawn.recorded) this.inProgress.set(k, this.begin(u, stored, now));
      return undefined;
    }
    if (next !== "Ready" || stored === "Ready") {
      this.inProgress.delete(k);
      return undefined;
    }
    const started = spawn ?? (stored === undefined ? this.begin(u, stored, now) : undefined);
    if (!started || started.recorded) return undefined;
    this.inProgress.set(k, { ...started, recorded: true });
    if (!started.exact) return undefined;
    return { template: u.spec.templateName, seconds: Math.max(0, now - started.since) / 1000 };
  }

  /** A deleted Userland is no longer waited for. */
  forget(u: Userland): void {
    this.inProgress.delete(key(u));
  }

  /** Seconds the longest spawn in progress has waited; 0 when none is under way. */
  oldestSeconds(now: number): number {
    let oldest = now;
    for (const spawn of this.inProgress.values()) if (!spawn.recorded) oldest = Math.min(oldest, spawn.since);
    return (now - oldest) / 1000;
  }

  private begin(u: Userland, stored: UserlandPhase | undefined, now: number): Spawn {
    // Never reported: it has been starting since it was created. Reported Pending or Starting
    // before this leader saw it: when that began is not known here.
    if (stored === undefined) {
      const created = timeMs(u.metadata.creationTimestamp);
      if (Number.isFinite(created)) return { since: Math.min(created, now), exact: true, recorded: false };
    }
    return { since: now, exact: !isStarting(stored), recorded: false };
  }
}
