/**
 * A visit's own host (docs/decisions/0012-visits.md): the hand-over that puts the visitor's session
 * in the host-only visit cookie, and Leave, which drops it. Both only from a platform origin (or,
 * for Leave, this host): a page of another environment can neither begin nor end a visit here.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { originAllowed } from "../forward/headers.ts";
import { simplePage } from "../pages/environmentPages.ts";
import { sendPage, sendRedirect } from "../pages/send.ts";
import { leftPage, visitEndedPage, visitOnlyPage, visitRefusedPage } from "../pages/visitPages.ts";
import type { RequestRecord } from "../requestLog.ts";
import type { OwnEndpointRoute, Route } from "../route/routes.ts";
import { userlandKey } from "../route/userlandIndex.ts";
import { FormTooLarge, readForm } from "./forms.ts";
import { platformOrigin, visitCookie, type VisitEndpointDeps } from "./visitDeps.ts";

/**
 * `POST /_userland/visit` on the environment's host: the hand-over of `handOverPage`, from a
 * platform origin only (a page of another environment cannot put a visitor in here). The session
 * is verified here and again on every request; it goes into the host-only visit cookie.
 */
export async function enterVisit(
  deps: VisitEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: Extract<Route, { kind: "visitEnter" }>,
  record: RequestRecord,
): Promise<void> {
  const { client, userland } = route;
  if (!platformOrigin(req.headers.origin, deps)) {
    record.outcome = "forbidden_origin";
    sendPage(
      req,
      res,
      simplePage(403, "Not allowed", "Open the environment from the console's class table."),
    );
    return;
  }
  const form = await readForm(req).catch((error: unknown) => {
    if (error instanceof FormTooLarge) return undefined;
    throw error;
  });
  const token = form?.get("session") ?? "";
  const session = token === "" ? undefined : await deps.sessions.verify(token);
  if (!session || !userland) {
    record.outcome = "visit_refused";
    sendPage(req, res, session ? visitRefusedPage() : visitEndedPage());
    return;
  }
  record.user = session.user;
  record.userland = userlandKey(userland);
  const secure = client.proto === "https";
  // The owner's own: no visit, and no cookie.
  if (session.user === userland.spec.user) sendRedirect(res, "/");
  else sendRedirect(res, "/", visitCookie(secure, token));
}

/**
 * `/_userland/leave` on a visit's host: POST from that host or a platform origin ends the visit
 * here (a page of another site cannot); GET shows the button.
 */
export async function leave(
  deps: VisitEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const userland = route.visiting;
  if (!userland) {
    sendPage(req, res, simplePage(404, "No visit here", "This address is not a visit's."));
    return;
  }
  const owner = userland.spec.user;
  if (req.method !== "POST") {
    sendPage(req, res, visitOnlyPage(owner));
    return;
  }
  // originAllowed lets a request without Origin pass (no browser page); Leave needs one.
  const origin = req.headers.origin;
  const sameHost = origin !== undefined && originAllowed(origin, route.client, []);
  if (!sameHost && !platformOrigin(origin, deps)) {
    record.outcome = "forbidden_origin";
    sendPage(req, res, simplePage(403, "Not allowed", "Leave with the button on this site."));
    return;
  }
  const { namespace = "", name = "" } = userland.metadata;
  await deps.visits.leave(namespace, name, route.session.user);
  const page = leftPage(owner);
  const cookie = visitCookie(route.client.proto === "https", "", 0);
  sendPage(req, res, { ...page, headers: { ...page.headers, "set-cookie": cookie } });
}
