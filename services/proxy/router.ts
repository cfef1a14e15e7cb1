/**
 * Decides what becomes of a request or WebSocket handshake, for both alike: Host → Template,
 * session → user, (user, Template) → Userland → a page or the upstream to forward to. The answer
 * is a Route; server.ts acts on it in one place. Nothing in the request but the verified session
 * chooses whose environment is reached.
 */
import type { IncomingMessage } from "node:http";
import { UserlandAnnotations, type Userland } from "../../api/v1alpha1/index.ts";
import type { Session } from "../../lib/session.ts";
import type { ProxyConfig } from "./config.ts";
import { environmentInfo, environmentState, userlandKey } from "./environment.ts";
import { clientInfo, originAllowed, type ClientInfo } from "./headers.ts";
import type { RouteOutcome } from "./metrics.ts";
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
} from "./pages.ts";
import type { RequestKind, RequestRecord } from "./requestLog.ts";
import type { UpstreamResolver } from "./resolver.ts";
import { templateForHost, type ClusterView } from "./routing.ts";
import type { RequestSessions } from "./session.ts";
import type { Starter } from "./starter.ts";

/** A request whose session and Template are known. */
interface Signed {
  session: Session;
  template: string;
  client: ClientInfo;
}

export type Route =
  /** A page (or its JSON) instead of the environment: refusals, unknown host, not ready. */
  | { kind: "page"; outcome: RouteOutcome; page: Page }
  /** No valid session. */
  | { kind: "signIn"; outcome: "no_session"; client: ClientInfo }
  /** The proxy's own /_userland/ endpoints, never forwarded. */
  | (Signed & { kind: "ownEndpoint"; outcome: "own_endpoint"; pathname: string })
  /** The session's own environment, ready, at `target`. */
  | (Signed & {
      kind: "forward";
      outcome: "proxied";
      target: URL;
      /** The path and query as routed here: exactly what the environment gets (see `route`). */
      path: string;
      userland: { namespace: string; name: string };
      env: EnvironmentInfo;
    });

export type OwnEndpointRoute = Extract<Route, { kind: "ownEndpoint" }>;

export type RouterConfig = Pick<
  ProxyConfig,
  "hostTemplates" | "baseDomain" | "defaultTemplate" | "trustedProxies" | "allowedOrigins" | "startOnAccess"
>;

export interface RouterDeps {
  config: RouterConfig;
  cluster: ClusterView;
  sessions: RequestSessions;
  resolver: UpstreamResolver;
  starter: Starter;
}

export function isOwnPath(pathname: string): boolean {
  return pathname === "/_userland" || pathname.startsWith("/_userland/");
}

const page = (outcome: RouteOutcome, p: Page): Route => ({ kind: "page", outcome, page: p });

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
    const template = templateForHost(client.host, config);
    if (!template) return page("unknown_host", unknownHostPage(client.host));
    record.template = template;
    const session = await sessions.fromRequest(req);
    if (!session) return { kind: "signIn", outcome: "no_session", client };
    record.user = session.user;
    if (!cluster.synced())
      return page(
        "starting",
        simplePage(503, "Starting up", "The platform is starting; try again in a few seconds."),
      );
    if (kind === "websocket" && !originAllowed(req.headers.origin, client, config.allowedOrigins))
      return page("forbidden_origin", foreignWebSocketPage());
    const { pathname } = parsed;
    if (isOwnPath(pathname))
      return { kind: "ownEndpoint", outcome: "own_endpoint", session, template, client, pathname };
    // A refused WebSocket has no page to return to.
    const returnPath = kind === "http" ? url : "/";
    return this.resolveTarget(
      { session, template, client },
      `${pathname}${parsed.search}`,
      returnPath,
      record,
    );
  }

  /** The session user's environment for the Template: where to forward, or the page to show. */
  private async resolveTarget(
    signed: Signed,
    path: string,
    returnPath: string,
    record: RequestRecord,
  ): Promise<Route> {
    const { cluster, resolver } = this.deps;
    const userland = cluster.findUserland(signed.session.user, signed.template);
    const env = environmentInfo(cluster, signed.template, signed.session.user);
    if (userland) record.userland = userlandKey(userland);
    const notReady = await this.pageFor(userland, env, returnPath, record);
    if (notReady || !userland) return notReady ?? page("no_environment", missingPage(env));
    const { namespace = "", name = "" } = userland.metadata;
    const service = userland.status?.service;
    const target = service && resolver.resolve(namespace, service.name, service.port);
    if (!target) return page("unresolved", upstreamErrorPage(502, env, returnPath));
    return {
      kind: "forward",
      outcome: "proxied",
      ...signed,
      target,
      path,
      userland: { namespace, name },
      env,
    };
  }

  /** The page for a Userland that is not ready, or undefined when it is. */
  private async pageFor(
    userland: Userland | undefined,
    env: EnvironmentInfo,
    returnPath: string,
    record: RequestRecord,
  ): Promise<Route | undefined> {
    const { config, starter } = this.deps;
    const state = environmentState(userland);
    if (!userland || state === "missing") return page("no_environment", missingPage(env));
    if (state === "ready") return undefined;
    if (state === "failed") return page("failed", failedPage(env, userland.status?.message));
    if (state === "stopped") {
      if (
        starter.recentlyRequested(userland) ||
        (config.startOnAccess && (await starter.request(userland, record.user)))
      )
        return page("starting", startingPage(env, "Starting", "Start requested"));
      return page(
        "stopped",
        stoppedPage(env, {
          canStart: starter.canStart,
          returnPath,
          reason: userland.metadata.annotations?.[UserlandAnnotations.stoppedReason],
        }),
      );
    }
    return page("starting", startingPage(env, userland.status?.phase ?? "Pending", userland.status?.message));
  }
}
