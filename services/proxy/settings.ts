/**
 * The proxy's settings table: every PROXY_* variable with its parser, default and help (`--help`,
 * the chart's README and the checks at start-up all read it). config.ts loads it into ProxyConfig.
 */
import { watchNamespacesSetting } from "../../lib/namespaces.ts";
import { formatDuration } from "../../api/duration.ts";
import { TEMPLATE_NAME_PATTERN } from "../../api/v1alpha1/template.ts";
import { parse, serviceListeners, type Settings } from "../../lib/config.ts";
import { timeoutSettings } from "../../lib/serverTimeouts.ts";
import { cidrList } from "../../lib/cidrs.ts";
import { HOST_PATTERN, normaliseHost } from "./route/hostNames.ts";
import { ORIGIN_MODES, type OriginMode } from "./route/origins.ts";
import { parseOverrides } from "./route/resolver.ts";

const templatePattern = new RegExp(TEMPLATE_NAME_PATTERN);

function templateName(raw: string): string {
  if (!templatePattern.test(raw))
    throw new Error(`"${raw}" is not a Template name (lowercase letters, digits and "-", at most 24)`);
  return raw;
}

/** `code.example.org=code,jupyter.example.org=jupyter` → host → template. */
function hostTemplates(raw: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of parse.list(raw)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new Error(`"${entry}" is not host=template`);
    const host = normaliseHost(entry.slice(0, eq));
    const template = entry.slice(eq + 1).trim();
    if (!HOST_PATTERN.test(host)) throw new Error(`"${host}" is not a host name`);
    templateName(template);
    if (map.has(host)) throw new Error(`host ${host} is listed twice`);
    map.set(host, template);
  }
  return map;
}

function baseDomain(raw: string): string {
  const domain = normaliseHost(raw).replace(/^\*?\./, "");
  if (!HOST_PATTERN.test(domain)) throw new Error(`"${raw}" is not a domain such as example.org`);
  return domain;
}

function originMode(raw: string): OriginMode {
  const mode = ORIGIN_MODES.find((m) => m.toLowerCase() === raw.trim().toLowerCase());
  if (!mode) throw new Error(`"${raw}" is not one of ${ORIGIN_MODES.join(", ")}`);
  return mode;
}

function origins(raw: string): string[] {
  return parse.list(raw).map((o) => {
    let url: URL;
    try {
      url = new URL(o);
    } catch {
      throw new Error(`"${o}" is not an origin such as https://ide.example.org`);
    }
    if (url.origin === "null" || url.pathname !== "/" || url.search || url.hash) {
      throw new Error(`"${o}" is not an origin such as https://ide.example.org (scheme, host and port only)`);
    }
    return url.origin;
  });
}

/** Where the proxy gets the auth service's public session keys: exactly one of the two settings. */

const SESSION_KEY_SOURCE =
  "set PROXY_SESSION_JWKS_URL (the auth service's /.well-known/jwks.json, e.g. http://userland-auth.<namespace>.svc.cluster.local/.well-known/jwks.json) or PROXY_SESSION_PUBLIC_KEYS_FILE (a public JWKS file)";

/** The problem with the session key settings, judged from the raw variables so it is reported with every other problem. */
export function sessionKeySourceProblem(env: NodeJS.ProcessEnv): string | undefined {
  const url = (env.PROXY_SESSION_JWKS_URL ?? "") !== "";
  const file = (env.PROXY_SESSION_PUBLIC_KEYS_FILE ?? "") !== "";
  if (url && file) return "set PROXY_SESSION_JWKS_URL or PROXY_SESSION_PUBLIC_KEYS_FILE, not both";
  if (!url && !file) return SESSION_KEY_SOURCE;
  return undefined;
}

export const listeners = serviceListeners("PROXY", {
  admin: "/healthz, /readyz and /metrics",
  host: "Address to listen on for student traffic",
  port: "Port for student traffic",
});

export const settings = {
  ...listeners.settings,
  namespace: {
    env: "USERLAND_NAMESPACE",
    description: "Namespace whose Templates and Userlands are served",
    parse: parse.string,
    default: "",
    show: () => "the proxy's own namespace",
  },
  watchNamespaces: watchNamespacesSetting("Templates and Userlands are served"),
  sessionJwksUrl: {
    env: "PROXY_SESSION_JWKS_URL",
    description:
      "The auth service's public session keys, http(s)://<auth>/.well-known/jwks.json; fetched again when a session names a new key (set this or PROXY_SESSION_PUBLIC_KEYS_FILE)",
    parse: parse.httpUrl,
    default: undefined,
  },
  sessionKeysFile: {
    env: "PROXY_SESSION_PUBLIC_KEYS_FILE",
    description:
      "Public JWKS file of the auth service's session keys, read at start-up (node scripts/sessionKeys.ts --public keys.json; set this or PROXY_SESSION_JWKS_URL)",
    parse: parse.string,
    default: undefined,
  },
  loginUrl: {
    env: "PROXY_LOGIN_URL",
    description:
      "The auth service's login URL; browsers without a session go to <url>?rd=<where they were going>",
    parse: parse.httpUrl,
  },
  hostTemplates: {
    env: "PROXY_HOST_TEMPLATES",
    description:
      "Comma-separated host=template pairs, e.g. code.example.org=code,jupyter.example.org=jupyter",
    parse: hostTemplates,
    default: new Map<string, string>(),
    show: () => "none",
  },
  baseDomain: {
    env: "PROXY_BASE_DOMAIN",
    description:
      "Serve <template>.<domain> for every Template, e.g. example.org; <domain> itself is the students' home page unless PROXY_DEFAULT_TEMPLATE is set",
    parse: baseDomain,
    default: undefined,
  },
  visitDomain: {
    env: "PROXY_VISIT_DOMAIN",
    description:
      "A teacher's visit opens the environment at <userland>--<template>.<domain>, an origin of its own where nothing of the teacher's answers (default PROXY_BASE_DOMAIN; e.g. localhost for a proxy served on 127.0.0.1)",
    parse: baseDomain,
    default: undefined,
  },
  origins: {
    env: "PROXY_ORIGINS",
    description:
      "shared: every student's environment of a Template at <template>.<domain> (service workers refused unless the Template opts in); perUser: each environment at <userland>--<template>.<PROXY_BASE_DOMAIN> (needs wildcard DNS and a *.<domain> certificate), <template>.<domain> sends students there",
    parse: originMode,
    default: "shared",
  },
  defaultTemplate: {
    env: "PROXY_DEFAULT_TEMPLATE",
    description:
      "Template for hosts that match nothing else (unset: PROXY_BASE_DOMAIN is the students' home, other such hosts get a 404 page)",
    parse: templateName,
    default: undefined,
  },
  upstreamOverrides: {
    env: "PROXY_UPSTREAM_OVERRIDES",
    description:
      "Comma-separated <namespace>/<service>=http://127.0.0.1:<port> pairs used INSTEAD of cluster DNS (tests, local platform; loopback only)",
    parse: parseOverrides,
    default: undefined,
  },
  upstreamOverridesFile: {
    env: "PROXY_UPSTREAM_OVERRIDES_FILE",
    description:
      'JSON file {"<namespace>/<service>": "http://127.0.0.1:<port>"} used instead of cluster DNS; re-read when it changes',
    parse: parse.string,
    default: undefined,
  },
  clusterDomain: {
    env: "PROXY_CLUSTER_DOMAIN",
    description: "The cluster's DNS domain (Services are <name>.<namespace>.svc.<domain>)",
    parse: baseDomain,
    default: "cluster.local",
  },
  trustedProxies: {
    env: "PROXY_TRUSTED_PROXIES",
    description:
      "Comma-separated CIDRs (e.g. 10.0.0.0/8) whose X-Forwarded-For/Proto/Host are believed; others' are replaced",
    parse: cidrList,
    default: [],
  },
  allowedOrigins: {
    env: "PROXY_ALLOWED_ORIGINS",
    description:
      "Comma-separated extra origins allowed to open WebSockets (the request's own host is always allowed)",
    parse: origins,
    default: [],
  },
  upstreamTimeout: {
    env: "PROXY_UPSTREAM_TIMEOUT",
    description: "How long an environment may stay silent on a request before the student gets a 504 page",
    parse: parse.positiveDuration,
    default: 60_000,
    show: formatDuration,
  },
  connectTimeout: {
    env: "PROXY_CONNECT_TIMEOUT",
    description: "How long connecting to an environment may take",
    parse: parse.positiveDuration,
    default: 5_000,
    show: formatDuration,
  },
  readyGrace: {
    env: "PROXY_READY_GRACE",
    description:
      "For this long after an environment turns Ready, a refused connection or a name not yet found is retried for a few seconds and then shows the starting page, not the 'not answering' page (0s: never)",
    parse: parse.duration,
    default: 30_000,
    show: formatDuration,
  },
  websocketIdleTimeout: {
    env: "PROXY_WEBSOCKET_IDLE_TIMEOUT",
    description: "Close a WebSocket after this long without traffic in either direction",
    parse: parse.positiveDuration,
    default: 15 * 60_000,
    show: formatDuration,
  },
  // Uploads to environments stream through the proxy: five minutes is Node's own default.
  ...timeoutSettings(
    "PROXY",
    { headersMs: 20_000, requestMs: 5 * 60_000 },
    " (uploads to environments count; WebSockets do not)",
  ),
  maxWebSocketsPerUser: {
    env: "PROXY_MAX_WEBSOCKETS_PER_USER",
    description:
      "Open WebSockets one student may have at once (every replica counts its own); more are refused with 429",
    parse: parse.integer(1, 100_000),
    default: 64,
  },
  maxRequestsPerUser: {
    env: "PROXY_MAX_REQUESTS_PER_USER",
    description:
      "HTTP requests one student may have in flight to environments at once (every replica counts its own); more are refused with 429",
    parse: parse.integer(1, 100_000),
    default: 128,
  },
  activityFlush: {
    env: "PROXY_ACTIVITY_FLUSH",
    description: "How often recorded activity is written to the userland.dev/last-activity annotation",
    parse: parse.positiveDuration,
    default: 30_000,
    show: formatDuration,
  },
  visitQuiet: {
    env: "PROXY_VISIT_QUIET",
    description:
      "A teacher's visit to a student's environment ends once it has sent nothing for this long (open WebSockets count as activity; once all have closed, 20 s without a request ends it); visits need PROXY_USER_MANAGER_URL",
    parse: parse.positiveDuration,
    default: 300_000,
    show: formatDuration,
  },
  userManagerUrl: {
    env: "PROXY_USER_MANAGER_URL",
    description:
      "user-manager base URL; enables the Start buttons, the home page's Stop buttons and self-service environments",
    parse: parse.httpUrl,
    default: undefined,
  },
  userManagerTokenFile: {
    env: "PROXY_USER_MANAGER_TOKEN_FILE",
    description:
      "File with the bearer token for the user-manager (e.g. a projected ServiceAccount token; re-read on every call)",
    parse: parse.string,
    default: undefined,
  },
  startOnAccess: {
    env: "PROXY_START_ON_ACCESS",
    description:
      "Start a stopped environment as soon as its student visits it (needs PROXY_USER_MANAGER_URL)",
    parse: parse.boolean,
    default: false,
  },
  accessLog: {
    env: "PROXY_ACCESS_LOG",
    description: "Log one line per request",
    parse: parse.boolean,
    default: true,
  },
  shutdownGrace: {
    env: "PROXY_SHUTDOWN_GRACE",
    description: "On SIGTERM, how long in-flight requests may finish before connections are closed",
    parse: parse.positiveDuration,
    default: 25_000,
    show: formatDuration,
  },
} satisfies Settings;
