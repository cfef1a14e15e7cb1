/**
 * Prometheus metrics of the proxy, on its own registry (several in-process proxies in tests never
 * collide). Served on the admin port only.
 */
import type { Counter, Gauge, Histogram } from "prom-client";
import { declareMetrics, type Registered } from "../../lib/metrics.ts";

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
  | "forbidden_service_worker"
  /** A teacher's visit to a student's environment: forwarded (route/visitTracker.ts). */
  | "visit"
  /** A visit RBAC refused, or the user-manager could not be asked. */
  | "visit_refused"
  /** An exam environment refused (docs/decisions/0013-exams.md): an old session, or on hold. */
  | "exam_refused";

export type UpstreamError = "refused" | "reset" | "timeout" | "other";

export interface ProxyMetrics extends Registered {
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

export const createMetrics = declareMetrics("userland_proxy_", (m): Omit<ProxyMetrics, "registry"> => ({
  requests: m.counter(
    "userland_proxy_requests_total",
    "Requests answered, by kind (http, websocket) and status class (2xx ... 5xx; 101 for WebSockets).",
    ["kind", "status_class"],
  ),
  routes: m.counter(
    "userland_proxy_route_outcomes_total",
    "Where requests went: proxied, or which page or refusal they got.",
    ["kind", "outcome"],
  ),
  upstreamLatency: m.histogram(
    "userland_proxy_upstream_response_seconds",
    "Time from forwarding a request to the environment's response headers (WebSockets: to the 101).",
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ["kind"],
  ),
  upstreamErrors: m.counter(
    "userland_proxy_upstream_errors_total",
    "Failed forwards by kind and error (refused: 502, reset: 502, timeout: 504).",
    ["kind", "error"],
  ),
  openWebSockets: m.gauge("userland_proxy_websockets_open", "WebSockets currently proxied."),
  activityPatches: m.counter(
    "userland_proxy_activity_patches_total",
    "last-activity annotation patches by result (success, gone, error).",
    ["result"],
  ),
  starts: m.counter(
    "userland_proxy_starts_total",
    "Start requests sent to the user-manager by result (success, error).",
    ["result"],
  ),
  homeActions: m.counter(
    "userland_proxy_home_actions_total",
    "Stop, self-service create and hand-in requests sent to the user-manager from students' home pages, by action (stop, create, handin) and result (success, exists, refused, error).",
    ["action", "result"],
  ),
  userlands: m.gauge("userland_proxy_userlands", "Userlands in the routing index."),
}));

export function statusClass(code: number): string {
  if (code === 101) return "101";
  return `${Math.floor(code / 100)}xx`;
}
