/**
 * Prometheus metrics, on a registry of the app's own so several apps in one process (tests) never
 * collide and /metrics shows exactly this service.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface Metrics {
  registry: Registry;
  requests: Counter<"method" | "route" | "status">;
  requestDuration: Histogram<"method" | "route">;
  created: Counter<"source">;
  deleted: Counter<"source">;
  tokenReviews: Counter<"result">;
  accessReviews: Counter<"verb" | "result">;
  kubeRequests: Counter<"verb" | "code">;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: "userland_user_manager_" });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: "userland_user_manager_http_requests_total",
      help: "HTTP requests by method, route pattern and status code.",
      labelNames: ["method", "route", "status"],
      registers,
    }),
    requestDuration: new Histogram({
      name: "userland_user_manager_http_request_duration_seconds",
      help: "HTTP request duration by method and route pattern.",
      labelNames: ["method", "route"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    created: new Counter({
      name: "userland_user_manager_userlands_created_total",
      help: "Userlands created, by source (api: POST /api/v1/userlands, roster: roster import).",
      labelNames: ["source"],
      registers,
    }),
    deleted: new Counter({
      name: "userland_user_manager_userlands_deleted_total",
      help: "Userlands deleted, by source (api, roster: pruned by a roster import).",
      labelNames: ["source"],
      registers,
    }),
    tokenReviews: new Counter({
      name: "userland_user_manager_token_reviews_total",
      help: "TokenReviews sent to Kubernetes (cache misses) by result: authenticated, rejected, error.",
      labelNames: ["result"],
      registers,
    }),
    accessReviews: new Counter({
      name: "userland_user_manager_access_reviews_total",
      help: "LocalSubjectAccessReviews sent to Kubernetes (cache misses) by verb and result: allowed, denied, error.",
      labelNames: ["verb", "result"],
      registers,
    }),
    kubeRequests: new Counter({
      name: "userland_user_manager_kube_requests_total",
      help: "Requests to the Kubernetes API by verb and HTTP status (0: no response).",
      labelNames: ["verb", "code"],
      registers,
    }),
  };
}
