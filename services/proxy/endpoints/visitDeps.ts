/**
 * What the visit endpoints (visitEndpoints.ts on the platform's hosts, visitHost.ts on a visit's
 * own host) work with: their dependencies, the visit cookie as it is set, and which origins are the
 * platform's own pages.
 */
import type { ProxyConfig } from "../config.ts";
import type { RequestSessions } from "../../../lib/requestSessions.ts";
import type { UserManagerClient } from "../../../lib/userManagerClient.ts";
import type { HomeConfig } from "../pages/homeView.ts";
import { isHomeHost, labelUnder, templateForHost } from "../route/templateHosts.ts";
import type { ClusterView } from "../route/userlandIndex.ts";
import { visitCookieName, type VisitTracker } from "../route/visitTracker.ts";

/** Names the visitor to the environment; the owner stays in X-User. Clients' copies are stripped (x-userland-*). */
export const VISITOR_HEADER = "x-userland-visitor";

export interface VisitEndpointDeps {
  cluster: ClusterView;
  visits: VisitTracker;
  config: VisitConfig;
  allowedOrigins: readonly string[];
  userManager: UserManagerClient | undefined;
  sessions: RequestSessions;
}

export type VisitConfig = HomeConfig & Pick<ProxyConfig, "visitDomain">;

export const visitCookie = (secure: boolean, value: string, maxAge?: number) =>
  `${visitCookieName(secure)}=${value}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}${maxAge === undefined ? "" : `; Max-Age=${maxAge}`}`;

/**
 * Whether `origin` is a host of the platform's own pages (a Template's host, the home, the
 * console's allowed origins), never an environment's own host, where student code runs.
 */
export function platformOrigin(origin: string | undefined, deps: VisitEndpointDeps): boolean {
  if (origin === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return false;
  if (deps.allowedOrigins.includes(url.origin)) return true;
  for (const domain of [deps.config.baseDomain, deps.config.visitDomain]) {
    const label = labelUnder(url.host, domain);
    if (label?.includes("--") && deps.cluster.getTemplate(label) === undefined) return false;
  }
  return templateForHost(url.host, deps.config) !== undefined || isHomeHost(url.host, deps.config);
}
