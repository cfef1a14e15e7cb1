/**
 * Prometheus metrics. Each app gets its own registry so several instances (tests) never collide
 * and `/metrics` shows exactly this service.
 */
import { Counter, Registry, collectDefaultMetrics } from "prom-client";

export type Provider = "oidc" | "github";

export interface Metrics {
  registry: Registry;
  loginsStarted: Counter<"provider">;
  logins: Counter<"provider" | "result">;
  forwardAuth: Counter<"result">;
  provisions: Counter<"result">;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: "userland_auth_" });
  return {
    registry,
    loginsStarted: new Counter({
      name: "userland_auth_logins_started_total",
      help: "Logins sent to an identity provider, by provider.",
      labelNames: ["provider"],
      registers: [registry],
    }),
    logins: new Counter({
      name: "userland_auth_logins_total",
      help: "Completed login callbacks by provider and result (success, refused by an allow-list or identity rule, error).",
      labelNames: ["provider", "result"],
      registers: [registry],
    }),
    forwardAuth: new Counter({
      name: "userland_auth_forward_auth_total",
      help: "Forward-auth checks by result (allowed, denied).",
      labelNames: ["result"],
      registers: [registry],
    }),
    provisions: new Counter({
      name: "userland_auth_provision_total",
      help: "Auto-provisioning calls to the user-management service by result (created, exists, failed).",
      labelNames: ["result"],
      registers: [registry],
    }),
  };
}
