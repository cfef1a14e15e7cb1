/**
 * Which namespaces a component serves (docs/decisions/0010-namespaces.md): its own (the default),
 * a list, or all of them. One setting, USERLAND_WATCH_NAMESPACES, read the same way by the
 * operator, the proxy and the user-manager, so the three never disagree on what a value means.
 */
import { paths } from "../api/kubePaths.ts";
import type { Setting } from "./config.ts";

export const WATCH_NAMESPACES_ENV = "USERLAND_WATCH_NAMESPACES";
export const ALL_NAMESPACES = "*";

/** What USERLAND_WATCH_NAMESPACES says: every namespace, or these (at least one, no repeats). */
export type WatchNamespaces = { all: true } | { all: false; names: readonly string[] };

/** A namespace name is a DNS label (RFC 1123), as the API server requires. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const EXPECTED = `expected "${ALL_NAMESPACES}" (every namespace) or a comma-separated list of namespace names (lowercase letters, digits and '-', at most 63 characters), e.g. "course-a,course-b"; unset: the component's own namespace`;

export function parseWatchNamespaces(raw: string): WatchNamespaces {
  const items = raw.split(",").map((s) => s.trim());
  if (items.some((s) => s === "")) throw new Error(`an empty name; ${EXPECTED}`);
  if (items.includes(ALL_NAMESPACES)) {
    if (items.length > 1) throw new Error(`"${ALL_NAMESPACES}" cannot be combined with names; ${EXPECTED}`);
    return { all: true };
  }
  const bad = items.filter((s) => s.length > 63 || !DNS_LABEL.test(s));
  if (bad.length > 0)
    throw new Error(`not a namespace name: ${bad.map((s) => `"${s}"`).join(", ")}; ${EXPECTED}`);
  return { all: false, names: [...new Set(items)] };
}

/** The settings-table entry every component declares; `what` is what it serves there. */
export function watchNamespacesSetting(what: string): Setting<WatchNamespaces | undefined> {
  return {
    env: WATCH_NAMESPACES_ENV,
    description: `Namespaces whose ${what}: a comma-separated list, or "${ALL_NAMESPACES}" for every namespace; unset: its own namespace alone`,
    parse: parseWatchNamespaces,
    default: undefined,
  };
}

/** The namespaces a running component serves, resolved against its own. */
export class ServedNamespaces {
  /** Every namespace: cluster-wide lists and watches. */
  readonly all: boolean;
  /** The namespaces listed (the own one when none are): empty when `all`. */
  readonly names: readonly string[];
  /** The component's own namespace (its Lease, its Events about itself). */
  readonly own: string;

  constructor(watch: WatchNamespaces | undefined, own: string) {
    this.own = own;
    this.all = watch?.all === true;
    this.names = watch === undefined ? [own] : watch.all ? [] : watch.names;
  }

  /** Whether objects in `namespace` are served. */
  serves(namespace: string | undefined): boolean {
    return this.all || (namespace !== undefined && this.names.includes(namespace));
  }

  /** Just one namespace, as before this setting existed: the paths and checks of that namespace alone. */
  get single(): string | undefined {
    return !this.all && this.names.length === 1 ? this.names[0] : undefined;
  }

  /** The collection paths to list and watch: one per namespace, or the cluster-wide one. */
  collections(group: string, version: string, plural: string): string[] {
    if (this.all) return [paths.allNamespaces(group, version, plural)];
    return this.names.map((ns) => paths.namespaced(group, version, plural, ns));
  }

  /** For messages: `namespace "a"`, `namespaces "a", "b"` or `any namespace`. */
  describe(): string {
    if (this.all) return "any namespace";
    const quoted = this.names.map((n) => `"${n}"`).join(", ");
    return this.names.length === 1 ? `namespace ${quoted}` : `namespaces ${quoted}`;
  }

  /** For logs. */
  toString(): string {
    return this.all ? ALL_NAMESPACES : this.names.join(",");
  }
}

interface Dated {
  metadata?: { creationTimestamp?: unknown; namespace?: string | undefined; name?: string | undefined };
}

/**
 * Of several objects that claim one place, the one that counts: the oldest, then by namespace,
 * then by name. A Template named twice in different namespaces, or a user's two Userlands of one
 * Template: every replica of every component picks the same one, and a newer copy never takes
 * over what students already use.
 */
export function oldest<T extends Dated>(objects: Iterable<T>): T | undefined {
  let best: T | undefined;
  for (const o of objects) if (!best || isOlder(o, best)) best = o;
  return best;
}

/** Whether `a` comes before `b` in oldest()'s order (for loops that pick without a copy). */
export function isOlder(a: Dated, b: Dated): boolean {
  // Plain JSON from the API server: a string, whatever V1ObjectMeta's Date type says.
  const ta = Date.parse(String(a.metadata?.creationTimestamp)) || 0;
  const tb = Date.parse(String(b.metadata?.creationTimestamp)) || 0;
  if (ta !== tb) return ta < tb;
  const [na, nb] = [a.metadata?.namespace ?? "", b.metadata?.namespace ?? ""];
  if (na !== nb) return na < nb;
  return (a.metadata?.name ?? "") < (b.metadata?.name ?? "");
}
