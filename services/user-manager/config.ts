/**
 * The user-manager's settings (environment variables), validated together at start-up so a broken
 * deployment gets one message naming every variable to fix.
 */
import { LABELS } from "../../api/naming.ts";
import { watchNamespacesSetting } from "../../lib/namespaces.ts";
import { formatDuration } from "../../api/duration.ts";
import {
  ConfigError,
  loadConfig,
  parse,
  serviceListeners,
  type ConfigOf,
  type Settings,
} from "../../lib/config.ts";
import { timeoutSettings } from "../../lib/serverTimeouts.ts";
import type { SessionKeySource } from "../../lib/session.ts";
import {
  SESSION_GROUP_PREFIX_DEFAULT,
  SESSION_USER_PREFIX_DEFAULT,
  subjectPrefix,
} from "../../lib/sessionSubjects.ts";

/** A label key: an optional DNS-subdomain prefix and a name (Kubernetes' qualified name). */
const labelKey = (raw: string): string => {
  if (
    !/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(
      raw,
    )
  )
    throw new Error("expected a label key such as userland.dev/class");
  return raw;
};

const audiences = (raw: string): string[] => {
  const list = parse.list(raw);
  for (const a of list)
    if (!/^[!-~]+$/.test(a)) throw new Error(`"${a}" is not a token audience (printable ASCII, no spaces)`);
  return list;
};

// The API is routed from the internet (/console, /api/v1): the counters get a port of their own.
const listeners = serviceListeners("USER_MANAGER", {
  admin: "/metrics and /healthz",
  port: "Port to listen on (0: any free port)",
});

export const settings = {
  ...listeners.settings,
  // A roster import is at most USER_MANAGER_ROSTER_MAX_BYTES: two minutes is plenty for it.
  ...timeoutSettings(
    "USER_MANAGER",
    { headersMs: 20_000, requestMs: 120_000 },
    "; a teacher's upload too (2 min carry 512 MiB at 4.5 MB/s: raise it for slower links)",
  ),
  namespace: {
    env: "USERLAND_NAMESPACE",
    description: "Namespace whose Userlands this service manages",
    parse: parse.string,
    default: "",
    show: () => "its own namespace",
  },
  watchNamespaces: watchNamespacesSetting(
    "Userlands this service manages (and Templates it creates them for)",
  ),
  tokenCacheTtl: {
    env: "USER_MANAGER_TOKEN_CACHE_TTL",
    description: "How long a TokenReview result is reused, e.g. 30s (0: ask the API server on every request)",
    parse: parse.duration,
    show: formatDuration,
    default: 30_000,
  },
  tokenReviewBacklog: {
    env: "USER_MANAGER_TOKEN_REVIEW_BACKLOG",
    description:
      "Unknown bearer tokens that may wait for a TokenReview at once; more are answered 429 (with the console on, the API is reachable from the internet)",
    parse: parse.integer(1, 10_000),
    default: 64,
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

  // The teachers' console and the API's session sign-in: on when the session keys are set.
  sessionJwksUrl: {
    env: "USER_MANAGER_SESSION_JWKS_URL",
    description:
      "The auth service's public session keys, http(s)://<auth>/.well-known/jwks.json; turns on the teachers' console and session sign-in for the API (or USER_MANAGER_SESSION_PUBLIC_KEYS_FILE)",
    parse: parse.httpUrl,
    default: undefined,
  },
  sessionKeysFile: {
    env: "USER_MANAGER_SESSION_PUBLIC_KEYS_FILE",
    description:
      "Public JWKS file of the auth service's session keys, read at start-up (or USER_MANAGER_SESSION_JWKS_URL)",
    parse: parse.string,
    default: undefined,
  },
  loginUrl: {
    env: "USER_MANAGER_LOGIN_URL",
    description:
      "The auth service's login URL, e.g. https://auth.example.org/login; the console sends browsers without a session to <url>?rd=<console page> (needed with the session keys)",
    parse: parse.httpUrl,
    default: undefined,
  },
  consoleUrl: {
    env: "USER_MANAGER_CONSOLE_URL",
    description:
      "The console's public URL, e.g. https://example.org/console/; its origin is the only one whose pages may send cookie-authenticated writes (needed with the session keys)",
    parse: parse.httpUrl,
    default: undefined,
  },
  visitUrl: {
    env: "USER_MANAGER_VISIT_URL",
    description:
      "The proxy's visit address the console's Open links go to (docs/decisions/0012-visits.md); default: /_userland/visit on the console's origin, where the chart routes everything but /console and /api/v1 to the proxy",
    parse: parse.httpUrl,
    default: undefined,
  },
  sessionUserPrefix: {
    env: "USER_MANAGER_SESSION_USER_PREFIX",
    description:
      "Prefix that makes a session's user a Kubernetes user for RBAC, e.g. userland: (kubectl create rolebinding … --user=userland:alice)",
    parse: subjectPrefix,
    default: SESSION_USER_PREFIX_DEFAULT,
  },
  sessionGroupPrefix: {
    env: "USER_MANAGER_SESSION_GROUP_PREFIX",
    description:
      "Prefix that makes each of a session's groups a Kubernetes group for RBAC, e.g. userland:group: (… --group=userland:group:teachers)",
    parse: subjectPrefix,
    default: SESSION_GROUP_PREFIX_DEFAULT,
  },
  classLabel: {
    env: "USER_MANAGER_CLASS_LABEL",
    description: "Label on Userlands by whose value the console narrows a Template's Userlands to one class",
    parse: labelKey,
    default: LABELS.class,
  },
} satisfies Settings;

export type UserManagerConfig = ConfigOf<typeof settings>;

/** The console and the API's session sign-in, when configured. */
export interface ConsoleConfig {
  keys: SessionKeySource;
  loginUrl: URL;
  /** Normalised to end with "/". */
  url: URL;
  userPrefix: string;
  groupPrefix: string;
  classLabel: string;
  /** The proxy's /_userland/visit: where Open sends a teacher. */
  visitUrl: URL;
}

/** Which of the console's settings are given: judged alike from the raw variables and the parsed ones. */
interface ConsolePresence {
  jwksUrl: boolean;
  keysFile: boolean;
  loginUrl: boolean;
  consoleUrl: boolean;
}

/** What is missing or conflicting among the console's settings. */
function presenceProblems(has: ConsolePresence): string[] {
  const problems: string[] = [];
  if (has.jwksUrl && has.keysFile)
    problems.push("set USER_MANAGER_SESSION_JWKS_URL or USER_MANAGER_SESSION_PUBLIC_KEYS_FILE, not both");
  if (!has.jwksUrl && !has.keysFile) {
    if (has.loginUrl || has.consoleUrl)
      problems.push(
        "the console needs the auth service's public session keys: set USER_MANAGER_SESSION_JWKS_URL (e.g. http://userland-auth.<namespace>.svc/.well-known/jwks.json) or USER_MANAGER_SESSION_PUBLIC_KEYS_FILE",
      );
    return problems;
  }
  if (!has.loginUrl)
    problems.push(
      "set USER_MANAGER_LOGIN_URL: the auth service's login URL (e.g. https://auth.example.org/login), where the console sends teachers to sign in",
    );
  if (!has.consoleUrl)
    problems.push(
      "set USER_MANAGER_CONSOLE_URL: the console's public URL (e.g. https://example.org/console/), whose origin alone may send cookie-authenticated writes",
    );
  return problems;
}

/** The console's settings, undefined when it is off; throws ConfigError naming what to set. */
export function consoleConfig(c: UserManagerConfig): ConsoleConfig | undefined {
  const problems = presenceProblems({
    jwksUrl: c.sessionJwksUrl !== undefined,
    keysFile: c.sessionKeysFile !== undefined,
    loginUrl: c.loginUrl !== undefined,
    consoleUrl: c.consoleUrl !== undefined,
  });
  if (c.consoleUrl && (c.consoleUrl.search || c.consoleUrl.hash || c.consoleUrl.username))
    problems.push("USER_MANAGER_CONSOLE_URL must not have a query, fragment or user name");
  if (c.consoleUrl && !/^\/console\/?$/.test(c.consoleUrl.pathname))
    problems.push(
      `USER_MANAGER_CONSOLE_URL must end in /console/ (the path the service serves it at), e.g. https://example.org/console/, not ${c.consoleUrl.pathname}`,
    );
  if (problems.length > 0) throw new ConfigError("user-manager", problems);
  const keys = c.sessionJwksUrl
    ? { url: c.sessionJwksUrl }
    : c.sessionKeysFile
      ? { file: c.sessionKeysFile }
      : undefined;
  if (!keys || !c.loginUrl || !c.consoleUrl) return undefined;
  const url = new URL(c.consoleUrl);
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  return {
    keys,
    loginUrl: c.loginUrl,
    url,
    userPrefix: c.sessionUserPrefix,
    groupPrefix: c.sessionGroupPrefix,
    classLabel: c.classLabel,
    visitUrl: c.visitUrl ?? new URL("/_userland/visit", url.origin),
  };
}

/** Throws ConfigError listing every problem. */
export function loadUserManagerConfig(env: NodeJS.ProcessEnv = process.env): UserManagerConfig {
  // The console's missing settings are reported with the others.
  const given = (name: string) => (env[name] ?? "") !== "";
  const missing = presenceProblems({
    jwksUrl: given(settings.sessionJwksUrl.env),
    keysFile: given(settings.sessionKeysFile.env),
    loginUrl: given(settings.loginUrl.env),
    consoleUrl: given(settings.consoleUrl.env),
  });
  const config = loadConfig("user-manager", settings, env, missing);
  const adminProblem = listeners.problem(config);
  try {
    consoleConfig(config);
  } catch (error) {
    if (error instanceof ConfigError && adminProblem)
      throw new ConfigError("user-manager", [adminProblem, ...error.problems]);
    throw error;
  }
  if (adminProblem) throw new ConfigError("user-manager", [adminProblem]);
  return config;
}

/** Defaults for everything, for tests and embedding; `overrides` wins. */
export function defaultConfig(overrides: Partial<UserManagerConfig> = {}): UserManagerConfig {
  return { ...loadUserManagerConfig({}), ...overrides };
}
