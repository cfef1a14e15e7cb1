/**
 * Routing in two steps, neither of which can reach another student's environment:
 *
 * 1. the Host name picks a Template (PROXY_HOST_TEMPLATES, then <template>.<PROXY_BASE_DOMAIN>,
 *    then PROXY_DEFAULT_TEMPLATE), so every application is served at the root path, unmodified:
 *    this file, and back (the host a Template is served at);
 * 2. the verified session's user and that Template pick the Userland: userlandIndex.ts.
 */
import { isIP } from "node:net";
import { TEMPLATE_NAME_PATTERN } from "../../../api/v1alpha1/template.ts";
import { normaliseHost, stripPort } from "./hostNames.ts";

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
