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
 * The cookie grants nothing: every request with it is checked (route/router.ts, route/visitTracker.ts). A page of
 * the same origin (another student's environment the teacher opened) must not switch the teacher
 * into a third environment without their click, so a visit is begun only by a navigation that
 * did not come from this origin (`Sec-Fetch-Site`).
 */
import { signOutUrlFor, visitorRefusal } from "../route/exam.ts";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { cookieValues } from "../../../lib/requestSessions.ts";
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { consentState, parseVisitRequests, VISIT_CONSENT_ANNOTATION } from "../../../api/visits.ts";
import { HOME_PATH, ownUserland, type HomeConfig } from "../pages/homeView.ts";
import { userlandLabel } from "../route/origins.ts";
import { simplePage } from "../pages/environmentPages.ts";
import type { RequestRecord } from "../requestLog.ts";
import { sendPage, sendRedirect } from "../pages/send.ts";
import type { OwnEndpointRoute } from "../route/router.ts";
import { hostForTemplate } from "../route/templateHosts.ts";
import { userlandKey, type ClusterView } from "../route/userlandIndex.ts";
import { visitRefusedPage, waitingPage } from "../pages/visitPages.ts";
import { FormTooLarge, formFromThisSite, readForm } from "./forms.ts";
import {
  ALLOW_PATH,
  LEAVE_PATH,
  VISIT_COOKIE,
  VISIT_PATH,
  type VisitTracker,
} from "../route/visitTracker.ts";
import { localPath } from "../../../lib/localPath.ts";
import type { UserManagerClient } from "../../../lib/userManagerClient.ts";

/** Names the visitor to the environment; the owner stays in X-User. Clients' copies are stripped (x-userland-*). */
export const VISITOR_HEADER = "x-userland-visitor";

export interface VisitEndpointDeps {
  cluster: ClusterView;
  visits: VisitTracker;
  config: HomeConfig;
  allowedOrigins: readonly string[];
  userManager: UserManagerClient | undefined;
}

/** The Template of `userland` asks its student before every visit (api/visits.ts). */
function asksFirst(deps: VisitEndpointDeps, userland: Userland): boolean {
  return (
    deps.cluster.getTemplate(userland.spec.templateName)?.metadata.annotations?.[VISIT_CONSENT_ANNOTATION] ===
    "required"
  );
}

export const isVisitPath = (pathname: string) =>
  pathname === VISIT_PATH || pathname === LEAVE_PATH || pathname === ALLOW_PATH;

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
  if (req.method !== "GET" && req.method !== "HEAD" && route.pathname !== ALLOW_PATH) {
    sendPage(req, res, simplePage(405, "Not allowed", "Open this address in the browser."));
    return;
  }
  if (route.pathname === LEAVE_PATH) {
    sendRedirect(res, HOME_PATH, cookieFor("", secure, 0));
    return;
  }
  if (route.pathname === ALLOW_PATH) {
    await allow(deps, req, res, route, record);
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
  record.userland = userlandKey(userland);
  const port = /:\d+$/.exec(client.host)?.[0] ?? "";
  const label = config.origins === "perUser" ? userlandLabel(userland) : undefined;
  const perUserHost = label && config.baseDomain ? `${label}.${config.baseDomain}${port}` : undefined;
  const host = perUserHost ?? hostForTemplate(userland.spec.templateName, config, client.host, port);
  if (host === undefined) {
    sendPage(req, res, simplePage(404, "Not served", "No address serves this environment's Template."));
    return;
  }
  const own = userland.spec.user === session.user;
  // Where environments are served, a page of the same origin is not the console's click; but the
  // waiting page's own refresh is (a Template that asks first): it goes on only once the student
  // allowed this visitor, which only the teacher's own click from the console can have asked.
  if (
    !own &&
    host === client.host &&
    req.headers["sec-fetch-site"] === "same-origin" &&
    asksFirst(deps, userland)
  ) {
    const requests = parseVisitRequests(userland.metadata.annotations?.[UserlandAnnotations.visitRequests]);
    if (consentState(requests, session.user, new Date()) !== "allowed") {
      record.outcome = "visit_refused";
      sendPage(req, res, waitingPage(userland.spec.user));
      return;
    }
  } else if (!own && host === client.host && req.headers["sec-fetch-site"] === "same-origin") {
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
  // During an exam only its proctors (route/exam.ts), before the visit right is asked; the same refusal.
  const exam = own
    ? undefined
    : visitorRefusal(
        userland,
        session,
        signOutUrlFor(config.loginUrl, `${client.proto}://${client.host}${req.url ?? "/"}`),
      );
  if (exam !== undefined && exam !== "denied") {
    record.outcome = "exam_refused";
    sendPage(req, res, exam);
    return;
  }
  // Asked before any redirect: where an environment is served says that it exists.
  const admission = own
    ? "allowed"
    : exam === "denied"
      ? "denied"
      : await visits.admit(userland, session.user, route.token);
  if (admission !== "allowed") {
    record.outcome = "visit_refused";
    sendPage(
      req,
      res,
      admission === "waiting"
        ? waitingPage(userland.spec.user)
        : admission === "denied"
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
    sendRedirect(res, `${client.proto}://${perUserHost}/`);
    return;
  }
  if (host !== client.host) {
    const query = `namespace=${encodeURIComponent(userland.metadata.namespace ?? "")}&userland=${encodeURIComponent(name)}`;
    sendRedirect(res, `${client.proto}://${host}${VISIT_PATH}?${query}`);
    return;
  }
  // The owner's own: no visit, and no cookie that would outlive this click.
  sendRedirect(res, "/", cookieFor(own ? "" : userlandKey(userland), secure, own ? 0 : undefined));
}

/**
 * `POST /_userland/allow-visit` (`userland`, `visitor`, `rd`): the student's Allow on their home
 * page, for their own environment only (another name is answered like one that does not exist),
 * from this site only (lib/formOrigin.ts, as the home's other forms).
 */
async function allow(
  deps: VisitEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const { session, client } = route;
  if (req.method !== "POST") {
    sendPage(req, res, simplePage(405, "Not allowed", "Allow a visit with the button on your home page."));
    return;
  }
  if (!formFromThisSite(req, res, client, deps.allowedOrigins, record)) return;
  // Too large: the same 400 as a form that cannot be read.
  const form = await readForm(req).catch((error: unknown) => {
    if (error instanceof FormTooLarge) return undefined;
    throw error;
  });
  const returnPath = localPath(form?.get("rd") ?? HOME_PATH);
  const userland = form && ownUserland(deps.cluster, session.user, form.get("userland") ?? "");
  const visitor = form?.get("visitor") ?? "";
  if (!form || returnPath === undefined || visitor === "") {
    sendPage(req, res, simplePage(400, "Bad request", "The form could not be read."));
    return;
  }
  if (!userland) {
    sendPage(req, res, simplePage(404, "No such environment", "You have no environment of that name."));
    return;
  }
  record.userland = userlandKey(userland);
  let answer: "allowed" | "none" | "error";
  try {
    answer =
      (await deps.userManager?.allowVisit?.(userland.metadata.name ?? "", {
        session: route.token ?? "",
        visitor,
      })) ?? "error";
  } catch {
    answer = "error";
  }
  if (answer === "error") {
    sendPage(
      req,
      res,
      simplePage(
        502,
        "Could not allow the visit",
        "The user-management service did not accept it. Try again in a minute.",
      ),
    );
    return;
  }
  if (answer === "none") {
    sendPage(
      req,
      res,
      simplePage(
        404,
        "No one is waiting",
        `${visitor} is not waiting to open this environment (a request lapses after 10 minutes).`,
      ),
    );
    return;
  }
  sendRedirect(res, returnPath);
}
