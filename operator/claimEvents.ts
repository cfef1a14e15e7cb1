/**
 * Why a claim stays Pending is only in its Events (the provisioner's "ProvisioningFailed:
 * storageclass … not found"), and Events are not cached: caching every Event of every namespace
 * served would cost more than everything else the operator holds. So a claim Pending for longer
 * than PENDING_MS gets one Event list, filtered by the API server to that claim's Events, and
 * again with back-off while it stays Pending; nothing is asked for claims that bind.
 */
import type { CoreV1Event, V1PersistentVolumeClaim } from "@kubernetes/client-node";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import { timeMs } from "./conditions.ts";
import { resources } from "./resources.ts";

/** Most claims bind within this long; only then is the wait worth a look at the Events. */
export const PENDING_MS = 5_000;
/**
 * While a claim stays Pending its Events are listed again after this long, doubling up to
 * RECHECK_MAX_MS: a claim that waits for hours (no provisioner at all) costs a list every few
 * minutes, not every few seconds.
 */
export const RECHECK_MS = 10_000;
const RECHECK_MAX_MS = 300_000;
/**
 * At most this many lists a second for all claims together: a class whose thousand claims all wait
 * (no provisioner at all) is looked at over a minute and a half, not in one burst.
 */
const LISTS_PER_SECOND = 10;

interface Looked {
  at: number;
  message: string | undefined;
  intervalMs: number;
}

export interface ClaimLookup {
  /** The newest Event's message if it is a Warning. */
  message: string | undefined;
  /** Sync again after this long to look again (the claim is still Pending). */
  recheckAfterMs: number | undefined;
}

export class ClaimEvents {
  private readonly rest: KubeRest;
  private readonly log: Logger;
  /** By claim uid; only claims that are Pending now. */
  private readonly looked = new Map<string, Looked>();
  /** When the lists of the last second were sent. */
  private recent: number[] = [];

  constructor(rest: KubeRest, log: Logger) {
    this.rest = rest;
    this.log = log;
  }

  async lookup(claim: V1PersistentVolumeClaim | undefined, now: number): Promise<ClaimLookup> {
    const uid = claim?.metadata?.uid;
    if (!claim || !uid || claim.status?.phase !== "Pending") {
      if (uid) this.looked.delete(uid);
      return { message: undefined, recheckAfterMs: undefined };
    }
    const pendingMs = now - timeMs(claim.metadata?.creationTimestamp);
    if (!(pendingMs >= PENDING_MS))
      return { message: undefined, recheckAfterMs: PENDING_MS - (pendingMs || 0) };
    const last = this.looked.get(uid);
    if (last && now - last.at < last.intervalMs)
      return { message: last.message, recheckAfterMs: last.at + last.intervalMs - now };
    this.recent = this.recent.filter((at) => now - at < 1000);
    if (this.recent.length >= LISTS_PER_SECOND)
      return { message: last?.message, recheckAfterMs: 1000 + Math.floor(Math.random() * 1000) };
    this.recent.push(now);
    const message = await this.newestWarning(claim);
    const intervalMs = last ? Math.min(last.intervalMs * 2, RECHECK_MAX_MS) : RECHECK_MS;
    this.looked.set(uid, { at: now, message, intervalMs });
    return { message, recheckAfterMs: intervalMs };
  }

  /** A claim that is gone takes its entry with it. */
  forget(uid: string | undefined): void {
    if (uid) this.looked.delete(uid);
  }

  private async newestWarning(claim: V1PersistentVolumeClaim): Promise<string | undefined> {
    const namespace = claim.metadata?.namespace ?? "";
    try {
      const { items } = await this.rest.list<CoreV1Event>(resources.Event.path(namespace), {
        query: {
          fieldSelector: `involvedObject.kind=PersistentVolumeClaim,involvedObject.name=${claim.metadata?.name ?? ""},involvedObject.uid=${claim.metadata?.uid ?? ""}`,
        },
      });
      const time = (e: CoreV1Event) =>
        Math.max(timeMs(e.lastTimestamp), timeMs(e.eventTime), timeMs(e.metadata.creationTimestamp)) || 0;
      // The newest Event says where the claim is now: a Warning that a later Normal one
      // ("waiting for the external provisioner") follows is over.
      const newest = items.sort((a, b) => time(b) - time(a))[0];
      return newest?.type === "Warning" ? newest.message?.trim() || undefined : undefined;
    } catch (error) {
      // The status says less, but the start goes on: the claim is looked at again later.
      this.log.warn(
        { claim: claim.metadata?.name, namespace, err: (error as Error).message },
        "listing a claim's Events failed",
      );
      return undefined;
    }
  }
}
