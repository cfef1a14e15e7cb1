/**
 * What createProxyServer (server.ts) takes and gives: its settings, its dependencies (each an
 * argument, so tests run it in-process against the real control plane) and the running proxy.
 */
import type { Server } from "node:http";
import type { Logger } from "../../lib/logger.ts";
import type { RequestSessions } from "../../lib/requestSessions.ts";
import type { UserManagerClient } from "../../lib/userManagerClient.ts";
import type { ProxyConfig } from "./config.ts";
import type { ActivitySink } from "./forward/forwarder.ts";
import type { ProxyMetrics } from "./metrics.ts";
import type { UpstreamResolver } from "./route/resolver.ts";
import type { RouterConfig } from "./route/routes.ts";
import type { ClusterView } from "./route/userlandIndex.ts";
import type { VisitTracker } from "./route/visitTracker.ts";

/** What the router decides with (route/routes.ts), and what the server itself needs besides. */
export type ProxyServerConfig = RouterConfig &
  Pick<
    ProxyConfig,
    | "upstreamTimeoutMs"
    | "connectTimeoutMs"
    | "websocketIdleTimeoutMs"
    | "accessLog"
    | "timeouts"
    | "limits"
    | "visitQuietMs"
  >;

export interface ProxyDeps {
  config: ProxyServerConfig;
  cluster: ClusterView;
  sessions: RequestSessions;
  resolver: UpstreamResolver;
  activity: ActivitySink;
  metrics: ProxyMetrics;
  log: Logger;
  userManager?: UserManagerClient | undefined;
}

export interface RunningProxy {
  server: Server;
  admin: Server;
  /** Listens on both servers; resolves with their base URLs. */
  listen(options: {
    host: string;
    port: number;
    adminHost: string;
    adminPort: number;
    /** The settings whose passed sockets (lib/listen.ts) replace host:port, e.g. PROXY_PORT. */
    socketNames?: { main: string; admin: string };
  }): Promise<{ url: string; adminUrl: string }>;
  /** Stops accepting, closes WebSockets, lets in-flight requests finish for up to `graceMs`. */
  close(graceMs?: number): Promise<void>;
  /** Requests and WebSockets in flight (for tests and shutdown). */
  inFlight(): { requests: number; websockets: number };
  /** Teachers' visits as this replica sees them. */
  visits: VisitTracker;
  /** Closes `user`'s WebSockets whose session has been ended (a Userland of theirs changed); how many. */
  closeEndedWebSockets(user: string): number;
  /** Closes the open WebSockets into an exam's environments (its examKey); how many. */
  closeExamWebSockets(exam: string): number;
}
