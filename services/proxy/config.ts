/**
 * The proxy's settings (environment variables), checked together at start-up so a broken
 * deployment gets one message that names every variable to set or fix.
 */
import { TEMPLATE_NAME_PATTERN } from "../../api/v1alpha1/template.ts";
import {
  ConfigError,
  loadConfig,
  optional,
  parse,
  required,
  withDefault,
  type ConfigOf,
} from "../../lib/config.ts";
import { cidrList, trustedProxies, type TrustedProxies } from "./headers.ts";
import { parseOverrides, type UpstreamOverrides } from "./resolver.ts";

const templatePattern = new RegExp(TEMPLATE_NAME_PATTERN);
const hostPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:\d{1,5})?$/;

/** Keeps the text ("30s") so `--help` shows a readable default; converted after loading. */
const durationText = (raw: string): string => {
  if (parse.duration(raw) <= 0) throw new Error("expected a duration above zero");
  return raw.trim();
};

function templateName(raw: string): string {
  if (!templatePattern.test(raw))
    throw new Error(`"${raw}" is not a Template name (lowercase letters, digits and "-", at most 24)`);
  return raw;
}

export function normaliseHost(raw: string): string {
  return raw.trim().toLowerCase().replace(/\.$/, "");
}

/** `code.example.org=code,jupyter.example.org=jupyter` → host → template. */
function hostTemplates(raw: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of parse.list(raw)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new Error(`"${entry}" is not host=template`);
    const host = normaliseHost(entry.slice(0, eq));
    const template = entry.slice(eq + 1).trim();
    if (!hostPattern.test(host)) throw new Error(`"${host}" is not a host name`);
    templateName(template);
    if (map.has(host)) throw new Error(`host ${host} is listed twice`);
    map.set(host, template);
  }
  return map;
}

function baseDomain(raw: string): string {
  const domain = normaliseHost(raw).replace(/^\*?\./, "");
  if (!hostPattern.test(domain)) throw new Error(`"${raw}" is not a domain such as example.org`);
  return domain;
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

function httpUrl(raw: string): URL {
  const url = parse.url(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error("expected an http:// or https:// URL");
  return url;
}

/** Where the proxy gets the auth service's public session keys: exactly one of the two settings. */
export type SessionKeySource = { url: URL } | { file: string };

const SESSION_KEY_SOURCE =
  "set PROXY_SESSION_JWKS_URL (the auth service's /.well-known/jwks.json, e.g. http://userland-auth.<namespace>.svc.cluster.local/.well-known/jwks.json) or PROXY_SESSION_PUBLIC_KEYS_FILE (a public JWKS file)";

/** The problem with the session key settings, judged from the raw variables so it is reported with every other problem. */
function sessionKeySourceProblem(env: NodeJS.ProcessEnv): string | undefined {
  const url = (env.PROXY_SESSION_JWKS_URL ?? "") !== "";
  const file = (env.PROXY_SESSION_PUBLIC_KEYS_FILE ?? "") !== "";
  if (url && file) return "set PROXY_SESSION_JWKS_URL or PROXY_SESSION_PUBLIC_KEYS_FILE, not both";
  if (!url && !file) return SESSION_KEY_SOURCE;
  return undefined;
}

export const settings = {
  host: withDefault("PROXY_HOST", "Address to listen on for student traffic", parse.string, "0.0.0.0"),
  port: withDefault("PROXY_PORT", "Port for student traffic", parse.integer(0, 65535), 8080),
  adminHost: withDefault(
    "PROXY_ADMIN_HOST",
    "Address for /healthz, /readyz and /metrics (not for students)",
    parse.string,
    "0.0.0.0",
  ),
  adminPort: withDefault(
    "PROXY_ADMIN_PORT",
    "Port for /healthz, /readyz and /metrics",
    parse.integer(0, 65535),
    9090,
  ),
  namespace: withDefault(
    "USERLAND_NAMESPACE",
    "Namespace whose Templates and Userlands are served (default: the proxy's own namespace)",
    parse.string,
    "",
  ),
  sessionJwksUrl: optional(
    "PROXY_SESSION_JWKS_URL",
    "The auth service's public session keys, http(s)://<auth>/.well-known/jwks.json; fetched again when a session names a new key (set this or PROXY_SESSION_PUBLIC_KEYS_FILE)",
    httpUrl,
  ),
  sessionKeysFile: optional(
    "PROXY_SESSION_PUBLIC_KEYS_FILE",
    "Public JWKS file of the auth service's session keys, read at start-up (node scripts/session-keys.ts --public keys.json; set this or PROXY_SESSION_JWKS_URL)",
    parse.string,
  ),
  loginUrl: required(
    "PROXY_LOGIN_URL",
    "The auth service's login URL; browsers without a session go to <url>?rd=<where they were going>",
    parse.url,
  ),
  hostTemplates: withDefault(
    "PROXY_HOST_TEMPLATES",
    "Comma-separated host=template pairs, e.g. code.example.org=code,jupyter.example.org=jupyter",
    hostTemplates,
    new Map<string, string>(),
  ),
  baseDomain: optional(
    "PROXY_BASE_DOMAIN",
    "Serve <template>.<domain> for every Template, e.g. example.org",
    baseDomain,
  ),
  defaultTemplate: optional(
    "PROXY_DEFAULT_TEMPLATE",
    "Template for hosts that match nothing else (unset: such hosts get a 404 page)",
    templateName,
  ),
  upstreamOverrides: optional(
    "PROXY_UPSTREAM_OVERRIDES",
    "Comma-separated <namespace>/<service>=http://127.0.0.1:<port> pairs used INSTEAD of cluster DNS (tests, local platform; loopback only)",
    parseOverrides,
  ),
  upstreamOverridesFile: optional(
    "PROXY_UPSTREAM_OVERRIDES_FILE",
    'JSON file {"<namespace>/<service>": "http://127.0.0.1:<port>"} used instead of cluster DNS; re-read when it changes',
    parse.string,
  ),
  clusterDomain: withDefault(
    "PROXY_CLUSTER_DOMAIN",
    "The cluster's DNS domain (Services are <name>.<namespace>.svc.<domain>)",
    baseDomain,
    "cluster.local",
  ),
  trustedProxies: withDefault(
    "PROXY_TRUSTED_PROXIES",
    "Comma-separated CIDRs (e.g. 10.0.0.0/8) whose X-Forwarded-For/Proto/Host are believed; others' are replaced",
    cidrList,
    [],
  ),
  allowedOrigins: withDefault(
    "PROXY_ALLOWED_ORIGINS",
    "Comma-separated extra origins allowed to open WebSockets (the request's own host is always allowed)",
    origins,
    [],
  ),
  upstreamTimeout: withDefault(
    "PROXY_UPSTREAM_TIMEOUT",
    "How long an environment may stay silent on a request before the student gets a 504 page",
    durationText,
    "60s",
  ),
  connectTimeout: withDefault(
    "PROXY_CONNECT_TIMEOUT",
    "How long connecting to an environment may take",
    durationText,
    "5s",
  ),
  websocketIdleTimeout: withDefault(
    "PROXY_WEBSOCKET_IDLE_TIMEOUT",
    "Close a WebSocket after this long without traffic in either direction",
    durationText,
    "15m",
  ),
  activityFlush: withDefault(
    "PROXY_ACTIVITY_FLUSH",
    "How often recorded activity is written to the userland.dev/last-activity annotation",
    durationText,
    "30s",
  ),
  userManagerUrl: optional(
    "PROXY_USER_MANAGER_URL",
    "user-manager base URL; enables the Start button on the stopped page",
    parse.url,
  ),
  userManagerTokenFile: optional(
    "PROXY_USER_MANAGER_TOKEN_FILE",
    "File with the bearer token for the user-manager (e.g. a projected ServiceAccount token; re-read on every call)",
    parse.string,
  ),
  startOnAccess: withDefault(
    "PROXY_START_ON_ACCESS",
    "Start a stopped environment as soon as its student visits it (needs PROXY_USER_MANAGER_URL)",
    parse.boolean,
    false,
  ),
  accessLog: withDefault("PROXY_ACCESS_LOG", "Log one line per request", parse.boolean, true),
  shutdownGrace: withDefault(
    "PROXY_SHUTDOWN_GRACE",
    "On SIGTERM, how long in-flight requests may finish before connections are closed",
    durationText,
    "25s",
  ),
};

export interface ProxyConfig {
  host: string;
  port: number;
  adminHost: string;
  adminPort: number;
  /** Empty: the proxy's own namespace (resolved at start-up). */
  namespace: string;
  sessionKeys: SessionKeySource;
  loginUrl: URL;
  hostTemplates: Map<string, string>;
  baseDomain: string | undefined;
  defaultTemplate: string | undefined;
  upstreamOverrides: UpstreamOverrides | undefined;
  upstreamOverridesFile: string | undefined;
  clusterDomain: string;
  trustedProxies: TrustedProxies;
  allowedOrigins: string[];
  upstreamTimeoutMs: number;
  connectTimeoutMs: number;
  websocketIdleTimeoutMs: number;
  activityFlushMs: number;
  userManager: { url: URL; tokenFile: string | undefined } | undefined;
  startOnAccess: boolean;
  accessLog: boolean;
  shutdownGraceMs: number;
}

/** Loads and cross-checks the settings; throws ConfigError listing every problem. */
export function loadProxyConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  const keySourceProblem = sessionKeySourceProblem(env);
  let c: ConfigOf<typeof settings>;
  try {
    c = loadConfig("proxy", settings, env);
  } catch (error) {
    // Reported together with the other problems: one pass to fix a deployment.
    if (error instanceof ConfigError && keySourceProblem)
      throw new ConfigError("proxy", [...error.problems, keySourceProblem]);
    throw error;
  }
  const problems: string[] = keySourceProblem ? [keySourceProblem] : [];
  if (c.loginUrl.protocol !== "https:" && c.loginUrl.protocol !== "http:")
    problems.push("PROXY_LOGIN_URL must be an http:// or https:// URL");
  if (c.hostTemplates.size === 0 && c.baseDomain === undefined && c.defaultTemplate === undefined) {
    problems.push(
      "say which Template each host serves: set PROXY_HOST_TEMPLATES, PROXY_BASE_DOMAIN and/or PROXY_DEFAULT_TEMPLATE",
    );
  }
  if (c.upstreamOverrides && c.upstreamOverridesFile) {
    problems.push("set PROXY_UPSTREAM_OVERRIDES or PROXY_UPSTREAM_OVERRIDES_FILE, not both");
  }
  if (c.startOnAccess && !c.userManagerUrl)
    problems.push("PROXY_START_ON_ACCESS=true needs PROXY_USER_MANAGER_URL");
  if (c.userManagerUrl && c.userManagerUrl.protocol !== "https:" && c.userManagerUrl.protocol !== "http:") {
    problems.push("PROXY_USER_MANAGER_URL must be an http:// or https:// URL");
  }
  if (c.port !== 0 && c.port === c.adminPort && c.host === c.adminHost)
    problems.push("PROXY_PORT and PROXY_ADMIN_PORT must differ");
  if (problems.length > 0) throw new ConfigError("proxy", problems);
  return {
    host: c.host,
    port: c.port,
    adminHost: c.adminHost,
    adminPort: c.adminPort,
    namespace: c.namespace,
    sessionKeys: c.sessionJwksUrl ? { url: c.sessionJwksUrl } : { file: c.sessionKeysFile ?? "" },
    loginUrl: c.loginUrl,
    hostTemplates: c.hostTemplates,
    baseDomain: c.baseDomain,
    defaultTemplate: c.defaultTemplate,
    upstreamOverrides: c.upstreamOverrides,
    upstreamOverridesFile: c.upstreamOverridesFile,
    clusterDomain: c.clusterDomain,
    trustedProxies: trustedProxies(c.trustedProxies),
    allowedOrigins: c.allowedOrigins,
    upstreamTimeoutMs: parse.duration(c.upstreamTimeout),
    connectTimeoutMs: parse.duration(c.connectTimeout),
    websocketIdleTimeoutMs: parse.duration(c.websocketIdleTimeout),
    activityFlushMs: parse.duration(c.activityFlush),
    userManager: c.userManagerUrl ? { url: c.userManagerUrl, tokenFile: c.userManagerTokenFile } : undefined,
    startOnAccess: c.startOnAccess,
    accessLog: c.accessLog,
    shutdownGraceMs: parse.duration(c.shutdownGrace),
  };
}
