/**
 * Routing in two steps, neither of which can reach another student's environment:
 *
 * 1. the Host name picks a Template (PROXY_HOST_TEMPLATES, then <template>.<PROXY_BASE_DOMAIN>,
 *    then PROXY_DEFAULT_TEMPLATE), so every application is served at the root path, unmodified;
 * 2. the verified session's user and that Template pick the Userland, from an index kept up to
 *    date by the Userland informer's events (no API call per request).
 *
 * Identities are looked up exactly (api/naming.ts: names are never guessed from identities).
 */
import { isIP } from "node:net";
import type { Template, Userland } from "../../api/v1alpha1/index.ts";
import { TEMPLATE_NAME_PATTERN } from "../../api/v1alpha1/template.ts";
import { isOlder } from "../../lib/namespaces.ts";
import { normaliseHost, stripPort } from "./host.ts";

const templatePattern = new RegExp(TEMPLATE_NAME_PATTERN);

export interface HostRoutes {
  hostTemplates: ReadonlyMap<string, string>;
  baseDomain?: string | undefined;
  defaultTemplate?: string | undefined;
}

/** The Template a Host header selects, or undefined. Map entries may name a port; otherwise it is ignored. */
export function templateForHost(hostHeader: string | undefined, routes: HostRoutes): string | undefined {
  const lower = hostHeader ? hostHeader.trim().toLowerCase() : "";
  const withDot = stripPort(lower);
  const port = lower.slice(withDot.length);
  const host = normaliseHost(withDot);
  if (host) {
    const exact = routes.hostTemplates.get(host + port) ?? routes.hostTemplates.get(host);
    if (exact) return exact;
    if (routes.baseDomain && host.endsWith(`.${routes.baseDomain}`)) {
      const label = host.slice(0, -routes.baseDomain.length - 1);
      // One label only: "a.b.example.org" is not the Template "a.b".
      if (templatePattern.test(label)) return label;
    }
  }
  return routes.defaultTemplate;
}

/**
 * Whether `hostHeader` is the base domain itself and names no Template: the students' home
 * (PROXY_DEFAULT_TEMPLATE unset; with it set, the apex serves that Template).
 */
export function isHomeHost(hostHeader: string | undefined, routes: HostRoutes): boolean {
  if (!hostHeader || !routes.baseDomain || templateForHost(hostHeader, routes) !== undefined) return false;
  return normaliseHost(stripPort(hostHeader.trim().toLowerCase())) === routes.baseDomain;
}

/**
 * The host a Template is served at, as `templateForHost` reads it back: a PROXY_HOST_TEMPLATES
 * entry (with `port` unless the entry names one), else `<template>.<PROXY_BASE_DOMAIN><port>`, else
 * `currentHost` for the default Template; undefined when no host serves it.
 */
export function hostForTemplate(
  template: string,
  routes: HostRoutes,
  currentHost: string,
  port: string,
): string | undefined {
  for (const [host, name] of routes.hostTemplates)
    if (name === template) return /:\d+$/.test(host) ? host : `${host}${port}`;
  const sub = templateSubdomain(template, routes.baseDomain);
  if (sub) return `${sub}${port}`;
  return routes.defaultTemplate === template ? currentHost : undefined;
}

/**
 * `<template>.<baseDomain>`, or undefined when there is no such name: no base domain, or one that
 * is an IP address (the local platform's 127.0.0.1, whose Templates each have a port of their own).
 */
export function templateSubdomain(template: string, baseDomain: string | undefined): string | undefined {
  return baseDomain && isIP(baseDomain) === 0 ? `${template}.${baseDomain}` : undefined;
}

/** The one label of `hostHeader` under `baseDomain` ("x" for "x.example.org:8443"), or undefined. */
export function labelUnder(
  hostHeader: string | undefined,
  baseDomain: string | undefined,
): string | undefined {
  if (!hostHeader || !baseDomain) return undefined;
  const host = normaliseHost(stripPort(hostHeader.trim().toLowerCase()));
  if (!host.endsWith(`.${baseDomain}`)) return undefined;
  const label = host.slice(0, -baseDomain.length - 1);
  return label !== "" && !label.includes(".") ? label : undefined;
}

const key = (u: Userland) => `${u.metadata.namespace ?? ""}/${u.metadata.name ?? ""}`;
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
    const k = key(userland);
    const s = slot(userland.spec.user, userland.spec.templateName);
    const previous = this.slotOf.get(k);
    if (previous !== undefined && previous !== s) this.removeFromSlot(previous, k);
    this.slotOf.set(k, s);
    let entries = this.bySlot.get(s);
    if (!entries) this.bySlot.set(s, (entries = new Map<string, Userland>()));
    entries.set(k, userland);
  }

  remove(userland: Userland): void {
    const k = key(userland);
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
  /** Every Template (the home page's self-service ones); absent: none are offered. */
  templates?(): readonly Template[];
}
