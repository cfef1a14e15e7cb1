/**
 * The endpoints of a teacher's visit (docs/decisions/0012-visits.md). A visit has an origin of its
 * own, the environment's host `<userland>--<template>.<domain>`, in both origin modes: student code
 * runs there, so nothing that answers with the teacher's rights (their home, their own environment,
 * the console, the API) may share it.
 *
 * - `GET /_userland/visit?namespace=<ns>&userland=<name>` (the console's Open, on the Template's or
 *   the home host, with the teacher's session): asks whether the visitor may enter (RBAC, through
 *   the user-manager), then hands the visitor's session over to the environment's host in a form
 *   post (pages/visitPages.ts).
 * - `POST /_userland/visit` on the environment's host (the hand-over): from a platform origin only;
 *   keeps the session in the host-only visit cookie and opens the environment.
 * - `POST /_userland/leave` on the environment's host: from that host or a platform origin; drops
 *   the visit cookie and reports the visit ended. `GET` shows the Leave button.
 *
 * The hand-over and Leave, on the visit's host, are visitHost.ts's. The cookie grants nothing by
 * itself: every request with it is checked (route/visitRoute.ts,
 * route/visitTracker.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "node:net";
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { parseVisitRequests, consentState, VISIT_CONSENT_ANNOTATION } from "../../../api/visits.ts";
import { localPath } from "../../../lib/localPath.ts";
import type { ClientInfo } from "../forward/headers.ts";
import { simplePage } from "../pages/environmentPages.ts";
import { HOME_PATH, openUrl, ownUserland } from "../pages/homeView.ts";
import { sendPage, sendRedirect } from "../pages/send.ts";
import { handOverPage, visitRefusedPage, waitingPage } from "../pages/visitPages.ts";
import type { RequestRecord } from "../requestLog.ts";
import { signOutUrlFor, visitorRefusal } from "../route/exam.ts";
import { userlandLabel } from "../route/origins.ts";
import type { OwnEndpointRoute } from "../route/routes.ts";
import { userlandKey } from "../route/userlandIndex.ts";
import { ALLOW_PATH, LEAVE_PATH, VISIT_PATH } from "../route/visitTracker.ts";
import { FormTooLarge, formFromThisSite, readForm } from "./forms.ts";
import type { VisitConfig, VisitEndpointDeps } from "./visitDeps.ts";
import { leave } from "./visitHost.ts";

/** The Template of `userland` asks its student before every visit (api/visits.ts). */
function asksFirst(deps: VisitEndpointDeps, userland: Userland): boolean {
  return (
    deps.cluster.getTemplate(userland.spec.templateName)?.metadata.annotations?.[VISIT_CONSENT_ANNOTATION] ===
    "required"
  );
}

export const isVisitPath = (pathname: string) =>
  pathname === VISIT_PATH || pathname === LEAVE_PATH || pathname === ALLOW_PATH;

/** The visit's origin: the environment's own host, or undefined where it has none (no base domain, too long). */
function visitOrigin(userland: Userland, config: VisitConfig, client: ClientInfo): string | undefined {
  const label = userlandLabel(userland);
  // An address has no names under it (a base domain of 127.0.0.1 needs PROXY_VISIT_DOMAIN).
  if (!label || !config.visitDomain || isIP(config.visitDomain) !== 0) return undefined;
  const port = /:\d+$/.exec(client.host)?.[0] ?? "";
  return `${client.proto}://${label}.${config.visitDomain}${port}`;
}

export async function serveVisitEndpoint(
  deps: VisitEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const { cluster, visits, config } = deps;
  const { session, client } = route;
  if (route.pathname === LEAVE_PATH) {
    await leave(deps, req, res, route, record);
    return;
  }
  if (route.pathname === ALLOW_PATH) {
    await allow(deps, req, res, route, record);
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendPage(req, res, simplePage(405, "Not allowed", "Open this address in the browser."));
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
  if (userland.spec.user === session.user) {
    // The owner's own Open: their environment where their home page opens it.
    const own = openUrl(userland, config, client);
    if (own === undefined)
      sendPage(req, res, simplePage(404, "Not served", "No address serves this environment's Template."));
    else sendRedirect(res, own);
    return;
  }
  const origin = visitOrigin(userland, config, client);
  if (origin === undefined) {
    sendPage(
      req,
      res,
      simplePage(
        404,
        "Not served",
        "A visit opens the environment at an address of its own, <userland>--<template>.<PROXY_VISIT_DOMAIN>: set PROXY_BASE_DOMAIN or PROXY_VISIT_DOMAIN (with wildcard DNS), and keep the Userland's name short enough for a host name.",
      ),
    );
    return;
  }
  // During an exam only its proctors (route/exam.ts), before the visit right is asked; the same refusal.
  const exam = visitorRefusal(
    userland,
    session,
    signOutUrlFor(config.loginUrl, `${client.proto}://${client.host}${req.url ?? "/"}`),
  );
  if (exam !== undefined && exam !== "denied") {
    record.outcome = "exam_refused";
    sendPage(req, res, exam);
    return;
  }
  // A Template that asks first: the waiting page's refresh comes back here until the student allowed.
  if (exam !== "denied" && asksFirst(deps, userland)) {
    const requests = parseVisitRequests(userland.metadata.annotations?.[UserlandAnnotations.visitRequests]);
    if (
      req.headers["sec-fetch-site"] === "same-origin" &&
      consentState(requests, session.user, new Date()) !== "allowed"
    ) {
      record.outcome = "visit_refused";
      sendPage(req, res, waitingPage(userland.spec.user));
      return;
    }
  }
  // Asked before any hand-over: where an environment is served says that it exists.
  const admission = exam === "denied" ? "denied" : await visits.admit(userland, session.user, route.token);
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
  sendPage(req, res, handOverPage(userland.spec.user, origin, route.token ?? ""));
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
