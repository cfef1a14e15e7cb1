/**
 * Decides what becomes of a request or WebSocket handshake, for both alike: Host → Template,
 * session → user, (user, Template) → Userland → a page or the upstream to forward to. The answer
 * is a Route; server.ts acts on it in one place. Deciding changes nothing (a stopped environment's
 * start is a Route too). Nothing in the request but the verified session chooses whose environment
 * is reached.
 */
import { sessionEnded } from "../../../api/sessions.ts";
import { userlandNameFor } from "../../../api/naming.ts";
import type { IncomingMessage } from "node:http";
import { UserlandAnnotations, type StartProgress, type Userland } from "../../../api/v1alpha1/index.ts";
import type { Session } from "../../../lib/session.ts";
import type { ProxyConfig } from "../config.ts";
import { environmentInfo, environmentState } from "./environmentState.ts";
import { clientInfo, originAllowed, type ClientInfo } from "../forward/headers.ts";
import type { RouteOutcome } from "../metrics.ts";
import { isServiceWorkerScript, serviceWorkersAllowed, userlandForLabel, userlandLabel } from "./origins.ts";
import {
  failedPage,
  foreignWebSocketPage,
  missingPage,
  simplePage,
  startingPage,
  stoppedPage,
  unknownHostPage,
  upstreamErrorPage,
  type EnvironmentInfo,
  type Page,
} from "../pages/environmentPages.ts";
import type { RequestKind, RequestRecord } from "../requestLog.ts";
import type { UpstreamResolver } from "./resolver.ts";
import { SIGNED_OUT_PATH } from "../endpoints/signedOut.ts";
import { HOME_PATH } from "../pages/homeView.ts";
import { isHomeHost, labelUnder, templateForHost } from "./templateHosts.ts";
import { userlandKey, type ClusterView } from "./userlandIndex.ts";
import type { RequestSessions } from "../../../lib/requestSessions.ts";
import type { Starter } from "../endpoints/starter.ts";
import { justReady, readySince, WAITING_TO_ANSWER } from "../forward/readyRetry.ts";
import { isStalled, progressText } from "../../../lib/startProgress.ts";
import { LEAVE_PATH, VISIT_PATH, visitCookieName, type VisitTracker } from "./visitTracker.ts";
import { visitEndedPage, visitOnlyPage, visitRefusedPage, waitingPage } from "../pages/visitPages.ts";
import { examEndOf, heldPage, notIsolatedPage, ownerRefusal, signOutUrlFor, visitorRefusal } from "./exam.ts";

/** A request whose session and Template are known. */
interface Signed {
  session: Session;
  /** The session's cookie value (visits relay it to the user-manager, which verifies it itself). */
  token?: string | undefined;
  template: string;
  client: ClientInfo;
}

export type Route =
  /** A page (or its JSON) instead of the environment: refusals, unknown host, not ready. */
  | { kind: "page"; outcome: RouteOutcome; page: Page }
  /** No valid session; `conflicting`: the cookies named different users, or the session was ended (the browser must drop them). */
  | { kind: "signIn"; outcome: "no_session"; client: ClientInfo; conflicting: boolean }
  /** PROXY_ORIGINS=perUser: the Template's host sends the student on to their environment's host. */
  | { kind: "redirect"; outcome: "per_user_host"; location: string }
  /**
   * A teacher's visit handed over to the environment's own host: the console's Open posts the
   * visitor's session there (endpoints/visitEndpoints.ts). Needs no session of this host yet.
   */
  | { kind: "visitEnter"; outcome: "own_endpoint"; client: ClientInfo; userland: Userland | undefined }
  /** A hop of the sign-out (and sign-in) chain: clear this origin, go on (endpoints/signedOut.ts). Needs no session. */
  | { kind: "signedOut"; outcome: "own_endpoint"; client: ClientInfo; query: URLSearchParams }
  /**
   * The proxy's own /_userland/ endpoints, never forwarded; also the home page at the base domain's
   * root (`homeAt: "/"`), where no Template is served (`template` undefined).
   */
  | (Omit<Signed, "template"> & {
      kind: "ownEndpoint";
      outcome: "own_endpoint";
      template: string | undefined;
      pathname: string;
      /** Where the home page is shown when that is not HOME_PATH. */
      homeAt?: string;
      /** On a visit's host: the environment visited (only Leave is served there). */
      visiting?: Userland;
    })
  /**
   * A stopped environment with PROXY_START_ON_ACCESS: server.ts asks for its start (an action, not
   * part of the decision) and shows `starting` once it was sent, else `stopped` with its button.
   */
  | { kind: "start"; outcome: "starting"; userland: Userland; user: string; starting: Page; stopped: Page }
  /** The session's own environment, ready, at `target`. */
  | (Signed & {
      kind: "forward";
      outcome: "proxied" | "visit";
      target: URL;
      /** The path and query as routed here: exactly what the environment gets (see `route`). */
      path: string;
      userland: { namespace: string; name: string };
      env: EnvironmentInfo;
      /** Service workers may be registered from this environment (else Service-Worker-Allowed is dropped). */
      serviceWorkers: boolean;
      /** When it turned Ready (forward/readyRetry.ts): a refusal just after is not an outage. */
      readySince: number | undefined;
      /** How its start went (status.progress), for the starting page a refusal just after Ready keeps. */
      progress: StartProgress | undefined;
      /** In an exam: its end (epoch ms), when a WebSocket opened now must close (forward/examSockets.ts). */
      examEnd?: number;
      /** In an exam: its examKey, whose WebSockets close when its isolation goes. */
      exam?: string;
      /** A teacher's visit (route/visitTracker.ts): the environment's owner, whom `X-User` names; else undefined. */
      visitOf?: string;
    });

export type OwnEndpointRoute = Extract<Route, { kind: "ownEndpoint" }>;

/** The Route to the proxy's own endpoint at `pathname`, for a signed request (its Template, if any). */
function ownEndpoint(
  signed: Omit<Signed, "template"> & { template: string | undefined },
  pathname: string,
): OwnEndpointRoute {
  return { kind: "ownEndpoint", outcome: "own_endpoint", ...signed, pathname };
}

export type RouterConfig = Pick<
  ProxyConfig,
  | "hostTemplates"
  | "baseDomain"
  | "visitDomain"
  | "defaultTemplate"
  | "trustedProxies"
  | "allowedOrigins"
  | "startOnAccess"
  | "origins"
  | "readyGraceMs"
  | "loginUrl"
>;

export interface RouterDeps {
  config: RouterConfig;
  cluster: ClusterView;
  sessions: RequestSessions;
  resolver: UpstreamResolver;
  starter: Starter;
  /** Teachers' visits; absent: none (unit tests). */
  visits?: VisitTracker | undefined;
}

export function isOwnPath(pathname: string): boolean {
  return pathname === "/_userland" || pathname.startsWith("/_userland/");
}

const page = (outcome: RouteOutcome, p: Page): Route => ({ kind: "page", outcome, page: p });

/** The caches are not filled yet: nothing can be decided. */
const notSyncedYet = (): Route =>
  page("starting", simplePage(503, "Starting up", "The platform is starting; try again in a few seconds."));

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
      const visit = await this.visitorRoute(req, kind, client, visitLabel, parsed, record);
      return visit ?? page("unknown_host", unknownHostPage(client.host));
    }
    let template = perUserHost ? undefined : templateForHost(client.host, config);
    const homeHost = !perUserHost && !template && isHomeHost(client.host, config);
    if (!perUserHost && !template && !homeHost) return page("unknown_host", unknownHostPage(client.host));
    if (template) record.template = template;
    if (perUserHost && config.visitDomain === config.baseDomain && this.deps.visits?.enabled) {
      const visit = await this.visitorRoute(req, kind, client, label, parsed, record);
      if (visit) return visit;
    }
    const lookup = await sessions.fromRequest(req);
    if (!lookup.session)
      return { kind: "signIn", outcome: "no_session", client, conflicting: lookup.conflicting };
    const { session } = lookup;
    // Ended before its expiry (sign-out, sign out everywhere, a teacher for a stolen laptop): marks
    // on the user's Userlands in this replica's cache (api/sessions.ts). The browser is told to drop
    // its cookies, so the auth service signs it in afresh instead of sending it back here.
    if (cluster.userlandsOf && sessionEnded(session, cluster.userlandsOf(session.user)))
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
    const route = this.resolveTarget(
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

  /**
   * A visitor on the environment's own host, the visit's origin (docs/decisions/0012-visits.md):
   * their session is the visit cookie the console's Open handed over, never the platform's own
   * cookie, so only a click in the console begins a visit. Nothing of the visitor's own answers on
   * this host (their home, forms, other environments): a page the student serves here acts with the
   * visitor's rights on this one environment only. Undefined: no visit here (the owner, or nobody).
   */
  private async visitorRoute(
    req: IncomingMessage,
    kind: RequestKind,
    client: ClientInfo,
    label: string,
    parsed: URL,
    record: RequestRecord,
  ): Promise<Route | undefined> {
    const { cluster, sessions, config } = this.deps;
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
    if (!userland || (cluster.userlandsOf && sessionEnded(session, cluster.userlandsOf(session.user))))
      return page("visit_refused", visitEndedPage());
    record.template = userland.spec.templateName;
    if (!cluster.synced()) return notSyncedYet();
    if (isOwnPath(pathname))
      return pathname === LEAVE_PATH
        ? { ...ownEndpoint({ session, token, template: undefined, client }, pathname), visiting: userland }
        : page("visit_refused", visitOnlyPage(userland.spec.user));
    if (kind === "websocket" && !originAllowed(req.headers.origin, client, config.allowedOrigins))
      return page("forbidden_origin", foreignWebSocketPage());
    return this.visit(userland, session, token, client, `${pathname}${parsed.search}`, record);
  }

  /**
   * A visit to another student's environment: RBAC decides (through the user-manager, on the
   * visitor's own session), then it is forwarded like the owner's own traffic, with the owner in
   * `X-User` and the visitor beside it. A visitor is never offered the owner's Start button.
   */
  private async visit(
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
    const exam = visitorRefusal(userland, session, this.signOutUrl(client, path));
    const refused = exam === "denied" ? "denied" : undefined;
    if (exam !== undefined && exam !== "denied") return page("exam_refused", exam);
    const open = notIsolatedPage(userland, this.deps.cluster.examIsolated?.bind(this.deps.cluster));
    if (open) return page("exam_refused", open);
    const admission =
      refused ?? (await this.deps.visits?.admit(userland, session.user, token)) ?? "unavailable";
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
    const route = this.resolveTarget(
      { session, template, client },
      path,
      "/",
      record,
      serviceWorkersAllowed(this.deps.config.origins, this.deps.cluster.getTemplate(template)),
      userland,
    );
    return route.kind === "forward" ? { ...route, outcome: "visit", visitOf: owner } : route;
  }

  /** The user's Userland of `template` when the API server has it though this replica's cache does not. */
  private async justCreated(user: string, template: string): Promise<Userland | undefined> {
    const { cluster } = this.deps;
    const namespace = cluster.getTemplate(template)?.metadata.namespace ?? cluster.namespace;
    const found = await cluster.fetchUserland?.(namespace, userlandNameFor(user, template));
    return found && found.spec.user === user && found.spec.templateName === template ? found : undefined;
  }

  /** The auth service's sign-out page, coming back to `path` on this host (a new sign-in). */
  private signOutUrl(client: ClientInfo, path: string): string {
    return signOutUrlFor(this.deps.config.loginUrl, `${client.proto}://${client.host}${path}`);
  }

  /** The session user's environment for the Template: where to forward, or the page to show. */
  private resolveTarget(
    signed: Signed,
    path: string,
    returnPath: string,
    record: RequestRecord,
    serviceWorkers: boolean,
    named?: Userland,
  ): Route {
    const { cluster, resolver } = this.deps;
    const userland = named ?? cluster.findUserland(signed.session.user, signed.template);
    const env = environmentInfo(cluster, signed.template, signed.session.user);
    if (userland) record.userland = userlandKey(userland);
    // An exam's rules (route/exam.ts): a visitor's were applied before (visit).
    const exam =
      userland &&
      (heldPage(userland) ??
        notIsolatedPage(userland, cluster.examIsolated?.bind(cluster)) ??
        (named
          ? undefined
          : ownerRefusal(userland, signed.session, this.signOutUrl(signed.client, returnPath))));
    if (exam) return page("exam_refused", exam);
    const notReady = this.pageFor(userland, env, returnPath, signed.session.user);
    if (notReady || !userland) return notReady ?? page("no_environment", missingPage(env));
    const { namespace = "", name = "" } = userland.metadata;
    const service = userland.status?.service;
    const target = service && resolver.resolve(namespace, service.name, service.port);
    if (!target) {
      // Just after Ready, the address may not be known yet (an upstream overrides file is re-read
      // once a second): the start's last step, not an outage. The cluster's DNS resolver always
      // gives an address; its lookups are retried with the connection (forward/readyRetry.ts).
      if (justReady(readySince(userland), this.deps.config.readyGraceMs))
        return page(
          "starting",
          startingPage(env, "Ready", WAITING_TO_ANSWER, {
            progress: progressText(userland.status?.progress, new Date()),
          }),
        );
      return page("unresolved", upstreamErrorPage(502, env, returnPath));
    }
    return {
      kind: "forward",
      outcome: "proxied",
      ...signed,
      target,
      path,
      userland: { namespace, name },
      env,
      serviceWorkers,
      readySince: readySince(userland),
      progress: userland.status?.progress,
      ...examEndOf(userland),
    };
  }

  /** The page (or start) for a Userland that is not ready, or undefined when it is. */
  private pageFor(
    userland: Userland | undefined,
    env: EnvironmentInfo,
    returnPath: string,
    user: string,
  ): Route | undefined {
    const { config, starter } = this.deps;
    const state = environmentState(userland);
    if (!userland || state === "missing") return page("no_environment", missingPage(env));
    if (state === "ready") return undefined;
    if (state === "failed") return page("failed", failedPage(env, userland.status?.message));
    if (state === "stopped") {
      const starting = startingPage(env, "Starting", "Start requested");
      if (starter.recentlyRequested(userland)) return page("starting", starting);
      const stopped = stoppedPage(env, {
        canStart: starter.canStart,
        returnPath,
        reason: userland.metadata.annotations?.[UserlandAnnotations.stoppedReason],
      });
      if (config.startOnAccess && starter.canStart)
        return { kind: "start", outcome: "starting", userland, user, starting, stopped };
      return page("stopped", stopped);
    }
    return page(
      "starting",
      startingPage(env, userland.status?.phase ?? "Pending", userland.status?.message, {
        progress: progressText(userland.status?.progress, new Date()),
        stalled: isStalled(userland.status),
      }),
    );
  }
}
