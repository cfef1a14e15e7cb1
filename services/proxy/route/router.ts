/**
 * Decides what becomes of a request or WebSocket handshake, for both alike: Host → Template,
 * session → user, (user, Template) → Userland → a page or the upstream to forward to. The answer
 * is a Route; server.ts acts on it in one place. Deciding changes nothing (a stopped environment's
 * start is a Route too). Nothing in the request but the verified session chooses whose environment
 * is reached.
 */
import { userlandNameFor } from "../../../api/naming.ts";
import type { IncomingMessage } from "node:http";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import type { Session } from "../../../lib/session.ts";
import { environmentInfo } from "./environmentState.ts";
import { clientInfo, originAllowed, type ClientInfo } from "../forward/headers.ts";
import { isServiceWorkerScript, serviceWorkersAllowed, userlandForLabel, userlandLabel } from "./origins.ts";
import {
  foreignWebSocketPage,
  simplePage,
  startingPage,
  unknownHostPage,
} from "../pages/environmentPages.ts";
import type { RequestKind, RequestRecord } from "../requestLog.ts";
import { SIGNED_OUT_PATH } from "../endpoints/signedOut.ts";
import { HOME_PATH } from "../pages/homeView.ts";
import { isHomeHost, labelUnder, templateForHost } from "./templateHosts.ts";
import { resolveTarget } from "./environmentRoute.ts";
import { isOwnPath, notSyncedYet, ownEndpoint, page, type Route, type RouterDeps } from "./routes.ts";
import { visitorRoute } from "./visitRoute.ts";

/**
 * The base domain's own host when it serves no Template: the student's home at its root and the
 * proxy's own endpoints; nothing else is there.
 */
function homeHostRoute(
  kind: RequestKind,
  session: Session,
  token: string | undefined,
  client: ClientInfo,
  pathname: string,
): Route {
  const own = { session, token, client, template: undefined };
  if (kind === "http" && pathname === "/") return { ...ownEndpoint(own, HOME_PATH), homeAt: "/" };
  if (kind === "http" && isOwnPath(pathname)) return ownEndpoint(own, pathname);
  return page(
    "unknown_host",
    simplePage(404, "Not found", "Nothing is served at this address but your home page, at /."),
  );
}

export class Router {
  private readonly deps: RouterDeps;

  constructor(deps: RouterDeps) {
    this.deps = deps;
  }

  /** Fills `record` with what it learns (Template, user, Userland) as it goes. */
  async route(req: IncomingMessage, kind: RequestKind, record: RequestRecord): Promise<Route> {
    const { config, cluster, sessions } = this.deps;
    const url = req.url ?? "";
    const client = clientInfo(req, config.trustedProxies);
    // Origin-form only: an absolute-form target ("GET http://other/ HTTP/1.1") would let the
    // request line and the Host header disagree about where the request goes.
    if (!url.startsWith("/"))
      return page("bad_request", simplePage(400, "Bad request", "The request target must be a path."));
    let parsed: URL;
    try {
      // Prefixing keeps "//x/y" a path, not a host. This one parse decides both where the request
      // goes and what is forwarded: http-proxy-3 parses "/\x/..." as the host "x", so the raw
      // target would reach the environment as another path than the one routed here.
      parsed = new URL(`http://proxy.invalid${url}`);
    } catch {
      return page("bad_request", simplePage(400, "Bad request", "The request target is not a valid path."));
    }
    if (parsed.pathname === SIGNED_OUT_PATH)
      return { kind: "signedOut", outcome: "own_endpoint", client, query: parsed.searchParams };
    // "<userland>--<template>.<domain>" names one environment (PROXY_ORIGINS=perUser). Which one
    // is decided only after the session is known, so the answer never tells a stranger whether a
    // Userland of that name exists. Served in the shared mode too, unless a Template has that
    // name: while an admin switches to perUser, a browser a new replica sent to its own host can
    // reach an old one for a few seconds (a Gateway kept the old pod in its endpoints after the
    // rollout), which would have answered "nothing is served here".
    const label = labelUnder(client.host, config.baseDomain);
    const perUserHost =
      label !== undefined &&
      label.includes("--") &&
      cluster.getUserland !== undefined &&
      (config.origins === "perUser" || cluster.getTemplate(label) === undefined);
    // A visit's own host (PROXY_VISIT_DOMAIN, when it is not the base domain): visits only.
    const visitLabel =
      config.visitDomain === config.baseDomain ? undefined : labelUnder(client.host, config.visitDomain);
    if (visitLabel?.includes("--") && this.deps.visits?.enabled) {
      const visit = await visitorRoute(this.deps, req, kind, client, visitLabel, parsed, record);
      return visit ?? page("unknown_host", unknownHostPage(client.host));
    }
    let template = perUserHost ? undefined : templateForHost(client.host, config);
    const homeHost = !perUserHost && !template && isHomeHost(client.host, config);
    if (!perUserHost && !template && !homeHost) return page("unknown_host", unknownHostPage(client.host));
    if (template) record.template = template;
    if (perUserHost && config.visitDomain === config.baseDomain && this.deps.visits?.enabled) {
      const visit = await visitorRoute(this.deps, req, kind, client, label, parsed, record);
      if (visit) return visit;
    }
    const lookup = await sessions.fromRequest(req);
    if (!lookup.session)
      return { kind: "signIn", outcome: "no_session", client, conflicting: lookup.conflicting };
    const { session } = lookup;
    // Ended before its expiry (sign-out, sign out everywhere, a teacher for a stolen laptop). The
    // browser is told to drop its cookies, so the auth service signs it in afresh instead of
    // sending it back here.
    if (cluster.sessionEnded?.(session))
      return { kind: "signIn", outcome: "no_session", client, conflicting: true };
    record.user = session.user;
    if (!cluster.synced()) return notSyncedYet();
    const { pathname } = parsed;
    const { token } = lookup;
    if (homeHost) return homeHostRoute(kind, session, token, client, pathname);
    let hostUserland: Userland | undefined;
    if (perUserHost) {
      hostUserland = userlandForLabel(label, (name) => cluster.getUserland?.(name));
      // Another student's host and a host that names nothing look the same: a visitor comes in
      // only with the visit cookie the console's Open handed over (visitorRoute).
      if (!hostUserland || hostUserland.spec.user !== session.user)
        return page("unknown_host", unknownHostPage(client.host));
      template = hostUserland.spec.templateName;
      record.template = template;
    }
    if (template === undefined) return page("unknown_host", unknownHostPage(client.host));
    if (kind === "websocket" && !originAllowed(req.headers.origin, client, config.allowedOrigins))
      return page("forbidden_origin", foreignWebSocketPage());
    if (isOwnPath(pathname)) return ownEndpoint({ session, token, template, client }, pathname);
    const serviceWorkers = serviceWorkersAllowed(config.origins, cluster.getTemplate(template));
    if (isServiceWorkerScript(req) && !serviceWorkers)
      return page(
        "forbidden_service_worker",
        simplePage(
          403,
          "Service workers are not allowed here",
          "Every student's environment of this Template shares this address, so a service worker would outlive your session on this browser. Ask an admin to serve environments at their own addresses (PROXY_ORIGINS=perUser) or to allow service workers for this Template.",
        ),
      );
    // A refused WebSocket has no page to return to.
    const returnPath = kind === "http" ? url : "/";
    const route = resolveTarget(
      this.deps,

      { session, template, client },
      `${pathname}${parsed.search}`,
      returnPath,
      record,
      serviceWorkers,
      hostUserland,
    );
    // Not in this replica's cache: asked of the API server once before "no environment" (issue 43
    // item 1). A Userland created a moment ago is starting, and its student is told so.
    if (route.kind === "page" && route.outcome === "no_environment" && kind === "http" && !hostUserland) {
      const created = await this.justCreated(session.user, template);
      if (created)
        return page(
          "starting",
          startingPage(
            environmentInfo(cluster, template, session.user),
            "Pending",
            "Your environment was just created",
          ),
        );
    }
    // The Template's own host serves no environment content when each has its own origin.
    if (route.kind === "forward" && config.origins === "perUser" && !perUserHost) {
      const userland = cluster.getUserland?.(route.userland.name);
      const ownLabel = userland && userlandLabel(userland);
      if (!ownLabel || !config.baseDomain || kind === "websocket")
        return page(
          "no_environment",
          simplePage(
            404,
            "Not served at this address",
            "Your environment is served at its own address, which is too long for a host name: ask an admin to give your Userland a shorter name.",
          ),
        );
      const port = /:\d+$/.exec(client.host)?.[0] ?? "";
      return {
        kind: "redirect",
        outcome: "per_user_host",
        location: `${client.proto}://${ownLabel}.${config.baseDomain}${port}${route.path}`,
      };
    }
    return route;
  }

  /** The user's Userland of `template` when the API server has it though this replica's cache does not. */
  private async justCreated(user: string, template: string): Promise<Userland | undefined> {
    const { cluster } = this.deps;
    const namespace = cluster.getTemplate(template)?.metadata.namespace ?? cluster.namespace;
    const found = await cluster.fetchUserland?.(namespace, userlandNameFor(user, template));
    return found && found.spec.user === user && found.spec.templateName === template ? found : undefined;
  }
}
