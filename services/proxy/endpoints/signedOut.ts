/**
 * `GET /_userland/signed-out?rd=<auth service URL>`: one hop of the chain the auth service sends a
 * browser through when a student signs out or starts signing in. Each hop answers on one Template
 * host with `Clear-Site-Data: "cache", "cookies", "storage"` (the browser drops that origin's
 * cached answers, service workers, storage and every cookie of the site, also ones an
 * environment's script planted with another path; the cache: issue 29 item 1, forward/sharedCache.ts) and moves on to the next Template host, and after the last back to `rd`, which
 * must be on the auth service's origin (never an open redirect). No session is needed: the auth
 * service has cleared its cookie before the first hop.
 *
 * A meta refresh, not a redirect, moves on: browsers follow at most 20 redirects in a row, and
 * there may be more Template hosts than that.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { html, pageDocument } from "../../../lib/html.ts";
import { pageSecurityHeaders } from "../../../lib/pageHeaders.ts";
import type { ProxyConfig } from "../config.ts";
import type { ClientInfo } from "../forward/headers.ts";
import { normaliseHost, stripPort } from "../route/hostNames.ts";
import { templateSubdomain } from "../route/templateHosts.ts";
import type { ClusterView } from "../route/userlandIndex.ts";

export const SIGNED_OUT_PATH = "/_userland/signed-out";

export type SignedOutConfig = Pick<ProxyConfig, "hostTemplates" | "baseDomain" | "loginUrl">;

/** Every Template host, sorted, each with the request's port unless its entry names one. */
export function templateHosts(config: SignedOutConfig, cluster: ClusterView, port: string): string[] {
  const hosts = new Set<string>();
  for (const host of config.hostTemplates.keys()) hosts.add(/:\d+$/.test(host) ? host : `${host}${port}`);
  for (const name of cluster.templateNames?.() ?? []) {
    const sub = name ? templateSubdomain(name, config.baseDomain) : undefined;
    if (sub) hosts.add(`${sub}${port}`);
  }
  return [...hosts].sort();
}

/** Where the chain ends: `rd` when it is on the auth service's origin, else that origin's root. */
function chainEnd(rd: string | null, loginUrl: URL): string {
  try {
    const url = new URL(rd ?? "");
    if (url.origin === loginUrl.origin) return url.href;
  } catch {
    // not a URL: the auth service's root
  }
  return new URL("/", loginUrl).href;
}

/** The next hop after `host`: the next Template host, or the end of the chain. */
export function nextHop(
  config: SignedOutConfig,
  cluster: ClusterView,
  client: ClientInfo,
  rd: string | null,
): string {
  const current = normaliseHost(client.host);
  const port = current.slice(stripPort(current).length);
  const hosts = templateHosts(config, cluster, port);
  const end = chainEnd(rd, config.loginUrl);
  const at = hosts.indexOf(current);
  // A host outside the list (a per-user or a default-Template host) starts the walk at the first.
  const next = hosts[at + 1];
  if (next === undefined) return end;
  const hop = new URL(`${client.proto}://${next}${SIGNED_OUT_PATH}`);
  hop.searchParams.set("rd", end);
  return hop.href;
}

/**
 * Another site must not sign students out: only same-site pages and the auth service's redirects
 * start a hop, and only as a top-level navigation (issue 29 item 6): an `<img>` or `fetch` on a
 * sibling host (any student's environment) would otherwise sign a student out and wipe their
 * storage without a page ever showing. Browsers without fetch metadata send none of these.
 */
function fromOwnSite(req: IncomingMessage): boolean {
  const { "sec-fetch-site": site, "sec-fetch-mode": mode, "sec-fetch-dest": dest } = req.headers;
  if (mode !== undefined && mode !== "navigate") return false;
  if (dest !== undefined && dest !== "document") return false;
  return site === undefined || site === "same-origin" || site === "same-site" || site === "none";
}

export function serveSignedOut(
  config: SignedOutConfig,
  cluster: ClusterView,
  req: IncomingMessage,
  res: ServerResponse,
  client: ClientInfo,
  query: URLSearchParams,
): void {
  if ((req.method !== "GET" && req.method !== "HEAD") || !fromOwnSite(req)) {
    const body = "Not allowed: signing out starts at the sign-in service.";
    res.writeHead(403, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    res.end(body);
    return;
  }
  const next = nextHop(config, cluster, client, query.get("rd"));
  const body = pageDocument({
    title: "Signing out",
    style: "body{font:16px system-ui,sans-serif;margin:2rem}",
    heading: "Signing out…",
    head: html`<meta http-equiv="refresh" content="0;url=${next}" />`,
    body: html`<p>Clearing this browser's data for this address. <a href="${next}">Continue</a></p>`,
  });
  res.writeHead(200, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    ...pageSecurityHeaders({ referrer: "no-referrer" }),
    "clear-site-data": '"cache", "cookies", "storage"',
    "content-length": Buffer.byteLength(body),
  });
  res.end(req.method === "HEAD" ? undefined : body);
}
