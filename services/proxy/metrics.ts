/**
 * Prometheus metrics of the proxy, on its own registry (several in-process proxies in tests never
 * collide). Served on the admin port only.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Why a request ended where it did; bounded, so it is safe as a label. */
export type RouteOutcome =
  | "proxied"
  | "no_session"
  | "unknown_host"
  | "no_environment"
  | "starting"
  | "stopped"
  | "failed"
  | "unresolved"
  | "forbidden_origin"
  | "bad_request"
  | "own_endpoint"
  /** Refused: the student already holds PROXY_MAX_REQUESTS_PER_USER / PROXY_MAX_WEBSOCKETS_PER_USER. */
  | "limited"
  /** PROXY_ORIGINS=perUser: the Template's host sends the student on to their environment's own host. */
  | "per_user_host"
  /** A service worker's script on a shared origin whose Template has not opted in. */
  | "forbidden_service_worker";

export type UpstreamError = "refused" | "reset" | "timeout" | "other";

export interface ProxyMetrics {
  registry: Registry;
  requests: Counter<"kind" | "status_class">;
  routes: Counter<"kind" | "outcome">;
  upstreamLatency: Histogram<"kind">;
  upstreamErrors: Counter<"kind" | "error">;
  openWebSockets: Gauge;
  activityPatches: Counter<"result">;
  starts: Counter<"result">;
  /** Stop and self-service create requests (the home page's buttons). */
  homeActions: Counter<"action" | "result">;
  userlands: Gauge;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: "userland_proxy_" });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: "userland_proxy_requests_total",
      help: "Requests answered, by kind (http, websocket) and status class (2xx ... 5xx; 101 for WebSockets).",
      labelNames: ["kind", "status_class"],
      registers,
    }),
    routes: new Counter({
      name: "userland_proxy_route_outcomes_total",
      help: "Where requests went: proxied, or which page or refusal they got.",
      labelNames: ["kind", "outcome"],
      registers,
    }),
    upstreamLatency: new Histogram({
      name: "userland_proxy_upstream_response_seconds",
      help: "Time from forwarding a request to the environment's response headers (WebSockets: to the 101).",
      labelNames: ["kind"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    upstreamErrors: new Counter({
      name: "userland_proxy_upstream_errors_total",
      help: "Failed forwards by kind and error (refused: 502, reset: 502, timeout: 504).",
      labelNames: ["kind", "error"],
      registers,
    }),
    openWebSockets: new Gauge({
      name: "userland_proxy_websockets_open",
      help: "WebSockets currently proxied.",
      registers,
    }),
    activityPatches: new Counter({
      name: "userland_proxy_activity_patches_total",
      help: "last-activity annotation patches by result (success, gone, error).",
      labelNames: ["result"],
      registers,
    }),
    starts: new Counter({
      name: "userland_proxy_starts_total",
      help: "Start requests sent to the user-manager by result (success, error).",
      labelNames: ["result"],
      registers,
    }),
    homeActions: new Counter({
      name: "userland_proxy_home_actions_total",
      help: "Stop and self-service create requests sent to the user-manager from students' home pages, by action (stop, create) and result (success, exists, error).",
      labelNames: ["action", "result"],
      registers,
    }),
    userlands: new Gauge({
      name: "userland_proxy_userlands",
      help: "Userlands in the routing index.",
      registers,
    }),
  };
}

export function statusClass(code: number): string {
  if (code === 101) return "101";
  return `${Math.floor(code / 100)}xx`;
}
