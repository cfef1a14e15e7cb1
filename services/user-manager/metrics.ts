/**
 * Prometheus metrics, on a registry of the app's own so several apps in one process (tests) never
 * collide and /metrics shows exactly this service.
 */
import type { Counter, Gauge, Histogram } from "prom-client";
import { declareMetrics, type Registered } from "../../lib/metrics.ts";

export interface Metrics extends Registered {
  requests: Counter<"method" | "route" | "status">;
  requestDuration: Histogram<"method" | "route">;
  created: Counter<"source">;
  deleted: Counter<"source">;
  tokenReviews: Counter<"result">;
  accessReviews: Counter<"verb" | "result">;
  kubeRequests: Counter<"verb" | "code">;
  consoleInFlight: Gauge;
}

export const createMetrics = declareMetrics("userland_user_manager_", (m): Omit<Metrics, "registry"> => ({
  requests: m.counter(
    "userland_user_manager_http_requests_total",
    "HTTP requests by method, route pattern and status code.",
    ["method", "route", "status"],
  ),
  requestDuration: m.histogram(
    "userland_user_manager_http_request_duration_seconds",
    "HTTP request duration by method and route pattern.",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ["method", "route"],
  ),
  created: m.counter(
    "userland_user_manager_userlands_created_total",
    "Userlands created, by source (api: POST /api/v1/userlands, roster: roster import).",
    ["source"],
  ),
  deleted: m.counter(
    "userland_user_manager_userlands_deleted_total",
    "Userlands deleted, by source (api, roster: pruned by a roster import).",
    ["source"],
  ),
  tokenReviews: m.counter(
    "userland_user_manager_token_reviews_total",
    "TokenReviews for unknown bearer tokens by result: authenticated, rejected, error, refused_busy (not sent: too many waiting, answered 429).",
    ["result"],
  ),
  accessReviews: m.counter(
    "userland_user_manager_access_reviews_total",
    "LocalSubjectAccessReviews sent to Kubernetes (cache misses) by verb and result: allowed, denied, error.",
    ["verb", "result"],
  ),
  kubeRequests: m.counter(
    "userland_user_manager_kube_requests_total",
    "Requests to the Kubernetes API by verb and HTTP status (0: no response).",
    ["verb", "code"],
  ),
  consoleInFlight: m.gauge(
    "userland_user_manager_console_requests_in_flight",
    "Console requests past the door and not yet answered, all callers (each may have 4 at once).",
  ),
}));
