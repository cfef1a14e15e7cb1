/**
 * The second step of routing (the first, Host → Template, is templateHosts.ts): the verified
 * session's user and the Template pick the Userland, from an index kept up to date by the Userland
 * informer's events (no API call per request). Neither step can reach another student's environment.
 *
 * Identities are looked up exactly (api/naming.ts: names are never guessed from identities).
 */
import type { SessionRef } from "../../../api/sessions.ts";
import type { Template, Userland } from "../../../api/v1alpha1/index.ts";
import { isOlder } from "../../../lib/namespaces.ts";

/** "<namespace>/<name>": how the index, logs, activity, the starter and the visit cookie name a Userland. */
export function userlandKey(userland: Userland): string {
  return `${userland.metadata.namespace ?? ""}/${userland.metadata.name ?? ""}`;
}
const slot = (user: string, template: string) => `${template}\u0000${user}`;

/**
 * Userlands by (spec.user, spec.templateName). Fed by informer add/update/delete events; a
 * Userland whose templateName changes moves to its new slot. Two Userlands for the same user and
 * Template (an admin's mistake) resolve to the oldest, so the choice is stable.
 */
export class UserlandIndex {
  private readonly bySlot = new Map<string, Map<string, Userland>>();
  private readonly slotOf = new Map<string, string>();

  upsert(userland: Userland): void {
    const k = userlandKey(userland);
    const s = slot(userland.spec.user, userland.spec.templateName);
    const previous = this.slotOf.get(k);
    if (previous !== undefined && previous !== s) this.removeFromSlot(previous, k);
    this.slotOf.set(k, s);
    let entries = this.bySlot.get(s);
    if (!entries) this.bySlot.set(s, (entries = new Map<string, Userland>()));
    entries.set(k, userland);
  }

  remove(userland: Userland): void {
    const k = userlandKey(userland);
    const s = this.slotOf.get(k);
    if (s === undefined) return;
    this.slotOf.delete(k);
    this.removeFromSlot(s, k);
  }

  private removeFromSlot(s: string, k: string): void {
    const entries = this.bySlot.get(s);
    entries?.delete(k);
    if (entries?.size === 0) this.bySlot.delete(s);
  }

  /** The user's Userland for a Template (in `namespace`, the served Template's, when given), or undefined. */
  find(user: string, templateName: string, namespace?: string): Userland | undefined {
    const entries = this.bySlot.get(slot(user, templateName));
    if (!entries) return undefined;
    // Of duplicates the oldest, so every replica picks the same one (no copy: every request asks).
    let best: Userland | undefined;
    for (const u of entries.values())
      if ((namespace === undefined || u.metadata.namespace === namespace) && (!best || isOlder(u, best)))
        best = u;
    return best;
  }

  get size(): number {
    return this.slotOf.size;
  }
}

/** What the proxy needs from the cluster: the index, the Templates and whether caches are synced. */
export interface ClusterView {
  namespace: string;
  findUserland(user: string, templateName: string): Userland | undefined;
  getTemplate(name: string): Template | undefined;
  synced(): boolean;
  /** A Userland by name (per-user hosts name it); absent: no per-user hosts are served. */
  getUserland?(name: string): Userland | undefined;
  /** Every Template's name (the hosts sign-out clears); absent: only PROXY_HOST_TEMPLATES' hosts. */
  templateNames?(): string[];
  /** Every Userland of `user`, any Template (the home page); absent: the home lists none. */
  userlandsOf?(user: string): readonly Userland[];
  /**
   * Whether the session was ended before its expiry (sign-out, sign out everywhere, a teacher):
   * its user's session record in this replica's cache (api/sessions.ts). Absent: only expiry ends one.
   */
  sessionEnded?(session: SessionRef & { user: string }): boolean;
  /** Every Template (the home page's self-service ones); absent: none are offered. */
  templates?(): readonly Template[];
  /**
   * Whether the exam's NetworkPolicy is in this replica's cache in `namespace` (route/exam.ts): an
   * exam's environment is served only while it is. Absent: never (an exam fails closed).
   */
  examIsolated?(namespace: string, exam: string): boolean;
  /**
   * The API server's answer for a Userland this replica's cache does not hold (yet): one created a
   * moment ago (at sign-in, by a roster import) reaches the cache after its student may (issue 43
   * item 1). Absent: the cache's answer is final.
   */
  fetchUserland?(namespace: string, name: string): Promise<Userland | undefined>;
}
