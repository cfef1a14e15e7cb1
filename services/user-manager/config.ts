/**
 * The user-manager's settings (environment variables), validated together at start-up so a broken
 * deployment gets one message naming every variable to fix.
 */
import { formatDuration } from "../../api/duration.ts";
import { loadConfig, parse, type ConfigOf, type Settings } from "../../lib/config.ts";
import { timeoutSettings } from "../../lib/serverTimeouts.ts";

const audiences = (raw: string): string[] => {
  const list = parse.list(raw);
  for (const a of list)
    if (!/^[!-~]+$/.test(a)) throw new Error(`"${a}" is not a token audience (printable ASCII, no spaces)`);
  return list;
};

export const settings = {
  host: {
    env: "USER_MANAGER_HOST",
    description: "Address to listen on",
    parse: parse.string,
    default: "0.0.0.0",
  },
  port: {
    env: "USER_MANAGER_PORT",
    description: "Port to listen on (0: any free port)",
    parse: parse.port,
    default: 8080,
  },
  // A roster import is at most USER_MANAGER_ROSTER_MAX_BYTES: two minutes is plenty for it.
  ...timeoutSettings("USER_MANAGER", { headersMs: 20_000, requestMs: 120_000 }),
  namespace: {
    env: "USERLAND_NAMESPACE",
    description: "Namespace whose Userlands this service manages",
    parse: parse.string,
    default: "",
    show: () => "its own namespace",
  },
  tokenCacheTtl: {
    env: "USER_MANAGER_TOKEN_CACHE_TTL",
    description: "How long a TokenReview result is reused, e.g. 30s (0: ask the API server on every request)",
    parse: parse.duration,
    show: formatDuration,
    default: 30_000,
  },
  authzCacheTtl: {
    env: "USER_MANAGER_AUTHZ_CACHE_TTL",
    description:
      "How long an allowed SubjectAccessReview is reused, e.g. 10s; denials are never cached (0: ask every time)",
    parse: parse.duration,
    show: formatDuration,
    default: 10_000,
  },
  tokenAudiences: {
    env: "USER_MANAGER_TOKEN_AUDIENCES",
    description:
      "Comma-separated audiences a bearer token must be issued for (empty: the API server's own audiences)",
    parse: audiences,
    default: [],
  },
  rosterMaxRows: {
    env: "USER_MANAGER_ROSTER_MAX_ROWS",
    description: "Most users accepted in one roster import (more: 413)",
    parse: parse.integer(1, 100_000),
    default: 5000,
  },
  rosterMaxBytes: {
    env: "USER_MANAGER_ROSTER_MAX_BYTES",
    description: "Largest roster request body in bytes (more: 413)",
    parse: parse.integer(1024, 64 * 1024 * 1024),
    default: 2 * 1024 * 1024,
  },
  kubeConcurrency: {
    env: "USER_MANAGER_KUBE_CONCURRENCY",
    description: "Parallel Kubernetes writes during a roster import",
    parse: parse.integer(1, 64),
    default: 8,
  },
} satisfies Settings;

export type UserManagerConfig = ConfigOf<typeof settings>;

/** Throws ConfigError listing every problem. */
export function loadUserManagerConfig(env: NodeJS.ProcessEnv = process.env): UserManagerConfig {
  return loadConfig("user-manager", settings, env);
}

/** Defaults for everything, for tests and embedding; `overrides` wins. */
export function defaultConfig(overrides: Partial<UserManagerConfig> = {}): UserManagerConfig {
  return { ...loadUserManagerConfig({}), ...overrides };
}
