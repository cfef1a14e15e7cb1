/**
 * What the router decides (a Route) and what it decides with (RouterDeps): the vocabulary shared by
 * router.ts, environmentRoute.ts and visitRoute.ts, and acted on by server.ts.
 */
import type { StartProgress, Userland } from "../../../api/v1alpha1/index.ts";
import type { Session } from "../../../lib/session.ts";
import type { RequestSessions } from "../../../lib/requestSessions.ts";
import type { ProxyConfig } from "../config.ts";
import type { ClientInfo } from "../forward/headers.ts";
import type { RouteOutcome } from "../metrics.ts";
import { simplePage, type EnvironmentInfo } from "../pages/environmentPages.ts";
import type { Page } from "../pages/pageShell.ts";
import type { Starter } from "../endpoints/starter.ts";
import type { UpstreamResolver } from "./resolver.ts";
import type { ClusterView } from "./userlandIndex.ts";
import type { VisitTracker } from "./visitTracker.ts";

/** A request whose session and Template are known. */
export interface Signed {
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
export function ownEndpoint(
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

export const page = (outcome: RouteOutcome, p: Page): Route => ({ kind: "page", outcome, page: p });

/** The caches are not filled yet: nothing can be decided. */
export const notSyncedYet = (): Route =>
  page("starting", simplePage(503, "Starting up", "The platform is starting; try again in a few seconds."));
