/**
 * Prometheus metrics. Each app gets its own registry so several instances (tests) never collide
 * and `/metrics` shows exactly this service.
 */
import type { Counter } from "prom-client";
import { declareMetrics, type Registered } from "../../lib/metrics.ts";

export type Provider = "oidc" | "github";

export interface Metrics extends Registered {
  loginsStarted: Counter<"provider">;
  logins: Counter<"provider" | "result">;
  forwardAuth: Counter<"result">;
  provisions: Counter<"result">;
  signOuts: Counter<"result">;
}

export const createMetrics = declareMetrics("userland_auth_", (m): Omit<Metrics, "registry"> => ({
  loginsStarted: m.counter(
    "userland_auth_logins_started_total",
    "Logins sent to an identity provider, by provider.",
    ["provider"],
  ),
  logins: m.counter(
    "userland_auth_logins_total",
    "Completed login callbacks by provider and result (success, refused by an allow-list or identity rule or asked over another user's session, error).",
    ["provider", "result"],
  ),
  forwardAuth: m.counter(
    "userland_auth_forward_auth_total",
    "Forward-auth checks by result (allowed, denied).",
    ["result"],
  ),
  provisions: m.counter(
    "userland_auth_provision_total",
    "Auto-provisioning at sign-in by result: created, exists, failed (calls to the user-management service), skipped (a sign-in to the teachers' console, AUTH_PROVISION_SKIP_URLS).",
    ["result"],
  ),
  signOuts: m.counter(
    "userland_auth_sign_outs_total",
    "Sign-outs at /logout by result: ended (everywhere, through the user-management service), browser-only (the service could not end it: this browser only), local (AUTH_SIGN_OUT_URL unset).",
    ["result"],
  ),
}));
