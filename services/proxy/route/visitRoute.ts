/**
 * A teacher's visit on the environment's own host (docs/decisions/0012-visits.md): who the visitor
 * is (the visit cookie only), whether RBAC and any exam let them in, and the environment's Route.
 */
import type { IncomingMessage } from "node:http";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import type { Session } from "../../../lib/session.ts";
import { originAllowed, type ClientInfo } from "../forward/headers.ts";
import { foreignWebSocketPage, simplePage } from "../pages/environmentPages.ts";
import { visitEndedPage, visitOnlyPage, visitRefusedPage, waitingPage } from "../pages/visitPages.ts";
import type { RequestKind, RequestRecord } from "../requestLog.ts";
import { environmentState } from "./environmentState.ts";
import { resolveTarget, signOutUrl } from "./environmentRoute.ts";
import { notIsolatedPage, visitorRefusal } from "./exam.ts";
import { serviceWorkersAllowed, userlandForLabel } from "./origins.ts";
import { isOwnPath, notSyncedYet, ownEndpoint, page, type Route, type RouterDeps } from "./routes.ts";
import { userlandKey } from "./userlandIndex.ts";
import { LEAVE_PATH, VISIT_PATH, visitCookieName } from "./visitTracker.ts";

/**
 * A visitor on the environment's own host, the visit's origin (docs/decisions/0012-visits.md):
 * their session is the visit cookie the console's Open handed over, never the platform's own
 * cookie, so only a click in the console begins a visit. Nothing of the visitor's own answers on
 * this host (their home, forms, other environments): a page the student serves here acts with the
 * visitor's rights on this one environment only. Undefined: no visit here (the owner, or nobody).
 */
export async function visitorRoute(
  deps: RouterDeps,
  req: IncomingMessage,
  kind: RequestKind,
  client: ClientInfo,
  label: string,
  parsed: URL,
  record: RequestRecord,
): Promise<Route | undefined> {
  const { cluster, sessions, config } = deps;
  const { pathname } = parsed;
  const userland = userlandForLabel(label, (name) => cluster.getUserland?.(name));
  if (pathname === VISIT_PATH && kind === "http" && req.method === "POST")
    return { kind: "visitEnter", outcome: "own_endpoint", client, userland };
  const lookup = await sessions.fromRequest(req, visitCookieName(client.proto === "https"));
  if (!lookup.session) return lookup.conflicting ? page("visit_refused", visitEndedPage()) : undefined;
  const { session, token } = lookup;
  // The owner signed in on this browser since (a lab PC): their own session wins over a visit's.
  if (userland && session.user !== userland.spec.user) {
    const own = await sessions.fromRequest(req);
    if (own.session?.user === userland.spec.user) return undefined;
  }
  if (userland?.spec.user === session.user) return undefined;
  record.user = session.user;
  if (!userland || cluster.sessionEnded?.(session)) return page("visit_refused", visitEndedPage());
  record.template = userland.spec.templateName;
  if (!cluster.synced()) return notSyncedYet();
  if (isOwnPath(pathname))
    return pathname === LEAVE_PATH
      ? { ...ownEndpoint({ session, token, template: undefined, client }, pathname), visiting: userland }
      : page("visit_refused", visitOnlyPage(userland.spec.user));
  if (kind === "websocket" && !originAllowed(req.headers.origin, client, config.allowedOrigins))
    return page("forbidden_origin", foreignWebSocketPage());
  return visit(deps, userland, session, token, client, `${pathname}${parsed.search}`, record);
}

/**
 * A visit to another student's environment: RBAC decides (through the user-manager, on the
 * visitor's own session), then it is forwarded like the owner's own traffic, with the owner in
 * `X-User` and the visitor beside it. A visitor is never offered the owner's Start button.
 */
export async function visit(
  deps: RouterDeps,
  userland: Userland,
  session: Session,
  token: string | undefined,
  client: ClientInfo,
  path: string,
  record: RequestRecord,
): Promise<Route> {
  const owner = userland.spec.user;
  const template = userland.spec.templateName;
  record.owner = owner;
  record.userland = userlandKey(userland);
  // During an exam only its proctors, before the visit right is even asked.
  const exam = visitorRefusal(userland, session, signOutUrl(deps, client, path));
  const refused = exam === "denied" ? "denied" : undefined;
  if (exam !== undefined && exam !== "denied") return page("exam_refused", exam);
  const open = notIsolatedPage(userland, deps.cluster.examIsolated?.bind(deps.cluster));
  if (open) return page("exam_refused", open);
  const admission = refused ?? (await deps.visits?.admit(userland, session.user, token)) ?? "unavailable";
  if (admission === "denied") return page("visit_refused", visitRefusedPage());
  if (admission === "waiting") return page("visit_refused", waitingPage(owner));
  if (admission === "unavailable")
    return page(
      "visit_refused",
      simplePage(
        502,
        "Visits are not available",
        "The user-management service could not be asked whether you may open this environment. Try again in a minute.",
      ),
    );
  if (environmentState(userland) !== "ready")
    return page(
      "starting",
      simplePage(
        503,
        `${owner}'s environment is not running`,
        "It opens here once it is running again; its student starts it from their home page.",
      ),
    );
  const route = resolveTarget(
    deps,

    { session, template, client },
    path,
    "/",
    record,
    serviceWorkersAllowed(deps.config.origins, deps.cluster.getTemplate(template)),
    userland,
  );
  return route.kind === "forward" ? { ...route, outcome: "visit", visitOf: owner } : route;
}
