/**
 * The two endpoints of a teacher's visit (docs/decisions/0012-visits.md), on every host:
 *
 * - `GET /_userland/visit?namespace=<ns>&userland=<name>` (the console's Open): sends the visitor
 *   to the environment's own address. With shared origins that is the Template's host, where this
 *   endpoint asks whether the visitor may enter (RBAC, through the user-manager) and then sets the
 *   host-only visit cookie naming the environment and sends the browser to `/`; with per-user
 *   origins it is the environment's own host, which names it (no cookie).
 * - `GET /_userland/leave`: drops the visit cookie and goes to the visitor's home.
 *
 * The cookie grants nothing: every request with it is checked (router.ts, visits.ts). A page of
 * the same origin (another student's environment the teacher opened) must not switch the teacher
 * into a third environment without their click, so a visit is begun only by a navigation that
 * did not come from this origin (`Sec-Fetch-Site`).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { cookieValues } from "../../lib/requestSessions.ts";
import { HOME_PATH, type HomeConfig } from "./home.ts";
import { userlandLabel } from "./origins.ts";
import { simplePage, type Page } from "./pages.ts";
import type { RequestRecord } from "./requestLog.ts";
import { sendPage } from "./respond.ts";
import type { OwnEndpointRoute } from "./router.ts";
import { hostForTemplate, type ClusterView } from "./routing.ts";
import { LEAVE_PATH, VISIT_COOKIE, VISIT_PATH, type VisitTracker } from "./visits.ts";

/** Names the visitor to the environment; the owner stays in X-User. Clients' copies are stripped (x-userland-*). */
export const VISITOR_HEADER = "x-userland-visitor";

export interface VisitEndpointDeps {
  cluster: ClusterView;
  visits: VisitTracker;
  config: HomeConfig;
}

/**
 * One refusal for an environment that does not exist and one the visitor may not open (no
 * names): a signed-in person learns nothing of who has an environment.
 */
export function visitRefusedPage(): Page {
  return simplePage(
    403,
    "You may not open this environment",
    `Opening a student's environment needs the right to visit it (verb "create" on "userlands/visit" in its namespace), which you do not have, or the environment does not exist. Ask an admin. To go back to your own environment: ${LEAVE_PATH}`,
  );
}

export const isVisitPath = (pathname: string) => pathname === VISIT_PATH || pathname === LEAVE_PATH;

/** The visit cookie is the proxy's own: environments never see it. */
export function withoutVisitCookie(headers: IncomingHttpHeaders): void {
  if (headers.cookie === undefined || cookieValues(headers.cookie, VISIT_COOKIE).length === 0) return;
  const kept = headers.cookie
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair !== "" && (pair.split("=", 1)[0] ?? "").trim() !== VISIT_COOKIE);
  if (kept.length > 0) headers.cookie = kept.join("; ");
  else delete headers.cookie;
}

function redirect(res: ServerResponse, location: string, cookie?: string): void {
  res.writeHead(303, {
    location,
    "cache-control": "no-store",
    "content-length": 0,
    ...(cookie ? { "set-cookie": cookie } : {}),
  });
  res.end();
}

const cookieFor = (value: string, secure: boolean, maxAge?: number) =>
  `${VISIT_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}${maxAge === undefined ? "" : `; Max-Age=${maxAge}`}`;

export async function serveVisitEndpoint(
  deps: VisitEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const { cluster, visits, config } = deps;
  const { session, client } = route;
  const secure = client.proto === "https";
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendPage(req, res, simplePage(405, "Not allowed", "Open this address in the browser."));
    return;
  }
  if (route.pathname === LEAVE_PATH) {
    redirect(res, HOME_PATH, cookieFor("", secure, 0));
    return;
  }
  if (!visits.enabled) {
    sendPage(
      req,
      res,
      simplePage(404, "Visits are off", "This platform does not let teachers open environments."),
    );
    return;
  }
  const query = new URL(req.url ?? "/", "http://proxy.invalid").searchParams;
  const name = query.get("userland") ?? "";
  const namespace = query.get("namespace");
  const userland = cluster.getUserland?.(name);
  if (!userland || (namespace !== null && userland.metadata.namespace !== namespace)) {
    record.outcome = "visit_refused";
    sendPage(req, res, visitRefusedPage());
    return;
  }
  record.owner = userland.spec.user;
  record.userland = `${userland.metadata.namespace ?? ""}/${name}`;
  const port = /:\d+$/.exec(client.host)?.[0] ?? "";
  const label = config.origins === "perUser" ? userlandLabel(userland) : undefined;
  const perUserHost = label && config.baseDomain ? `${label}.${config.baseDomain}${port}` : undefined;
  const host = perUserHost ?? hostForTemplate(userland.spec.templateName, config, client.host, port);
  if (host === undefined) {
    sendPage(req, res, simplePage(404, "Not served", "No address serves this environment's Template."));
    return;
  }
  const own = userland.spec.user === session.user;
  // Where environments are served, a page of the same origin is not the console's click.
  if (!own && host === client.host && req.headers["sec-fetch-site"] === "same-origin") {
    record.outcome = "forbidden_origin";
    sendPage(
      req,
      res,
      simplePage(
        403,
        "Open it from the console",
        "A page of this site cannot open another environment for you.",
      ),
    );
    return;
  }
  // Asked before any redirect: where an environment is served says that it exists.
  const admission = own ? "allowed" : await visits.admit(userland, session.user, route.token);
  if (admission !== "allowed") {
    record.outcome = "visit_refused";
    sendPage(
      req,
      res,
      admission === "denied"
        ? visitRefusedPage()
        : simplePage(
            502,
            "Visits are not available",
            "The user-management service could not be asked. Try again in a minute.",
          ),
    );
    return;
  }
  // Per-user origins: its own host names it (no cookie).
  if (perUserHost) {
    redirect(res, `${client.proto}://${perUserHost}/`);
    return;
  }
  if (host !== client.host) {
    const query = `namespace=${encodeURIComponent(userland.metadata.namespace ?? "")}&userland=${encodeURIComponent(name)}`;
    redirect(res, `${client.proto}://${host}${VISIT_PATH}?${query}`);
    return;
  }
  // The owner's own: no visit, and no cookie that would outlive this click.
  redirect(
    res,
    "/",
    cookieFor(own ? "" : `${userland.metadata.namespace ?? ""}/${name}`, secure, own ? 0 : undefined),
  );
}
