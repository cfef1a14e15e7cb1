/**
 * The proxy's settings (environment variables), checked together at start-up so a broken
 * deployment gets one message that names every variable to set or fix.
 */
import { ConfigError, loadConfig } from "../../lib/config.ts";
import type { WatchNamespaces } from "../../lib/namespaces.ts";
import type { ServerTimeouts } from "../../lib/serverTimeouts.ts";
import type { SessionKeySource } from "../../lib/session.ts";
import { trustedProxies, type TrustedProxies } from "./forward/headers.ts";
import type { OriginMode } from "./route/origins.ts";
import type { UpstreamOverrides } from "./route/resolver.ts";
import { listeners, sessionKeySourceProblem, settings } from "./settings.ts";

export interface ProxyConfig {
  host: string;
  port: number;
  adminHost: string;
  adminPort: number;
  /** Empty: the proxy's own namespace (resolved at start-up). */
  namespace: string;
  watchNamespaces: WatchNamespaces | undefined;
  sessionKeys: SessionKeySource;
  loginUrl: URL;
  hostTemplates: Map<string, string>;
  baseDomain: string | undefined;
  /** Where visits' hosts are (PROXY_VISIT_DOMAIN, else the base domain); undefined: no visits. */
  visitDomain: string | undefined;
  origins: OriginMode;
  defaultTemplate: string | undefined;
  upstreamOverrides: UpstreamOverrides | undefined;
  upstreamOverridesFile: string | undefined;
  clusterDomain: string;
  trustedProxies: TrustedProxies;
  allowedOrigins: string[];
  upstreamTimeoutMs: number;
  connectTimeoutMs: number;
  readyGraceMs: number;
  websocketIdleTimeoutMs: number;
  timeouts: ServerTimeouts;
  limits: { websocketsPerUser: number; requestsPerUser: number };
  activityFlushMs: number;
  visitQuietMs: number;
  userManager: { url: URL; tokenFile: string | undefined } | undefined;
  startOnAccess: boolean;
  accessLog: boolean;
  shutdownGraceMs: number;
}

/** Loads and cross-checks the settings; throws ConfigError listing every problem. */
export function loadProxyConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  const keySourceProblem = sessionKeySourceProblem(env);
  const c = loadConfig("proxy", settings, env, keySourceProblem ? [keySourceProblem] : []);
  const problems: string[] = keySourceProblem ? [keySourceProblem] : [];
  if (c.hostTemplates.size === 0 && c.baseDomain === undefined && c.defaultTemplate === undefined) {
    problems.push(
      "say which Template each host serves: set PROXY_HOST_TEMPLATES, PROXY_BASE_DOMAIN and/or PROXY_DEFAULT_TEMPLATE",
    );
  }
  if (c.origins === "perUser" && c.baseDomain === undefined)
    problems.push(
      "PROXY_ORIGINS=perUser needs PROXY_BASE_DOMAIN (environments are <userland>--<template>.<domain>)",
    );
  if (c.upstreamOverrides && c.upstreamOverridesFile) {
    problems.push("set PROXY_UPSTREAM_OVERRIDES or PROXY_UPSTREAM_OVERRIDES_FILE, not both");
  }
  if (c.startOnAccess && !c.userManagerUrl)
    problems.push("PROXY_START_ON_ACCESS=true needs PROXY_USER_MANAGER_URL");
  const adminProblem = listeners.problem(c);
  if (adminProblem) problems.push(adminProblem);
  if (problems.length > 0) throw new ConfigError("proxy", problems);
  return {
    host: c.host,
    port: c.port,
    adminHost: c.adminHost,
    adminPort: c.adminPort,
    namespace: c.namespace,
    watchNamespaces: c.watchNamespaces,
    sessionKeys: c.sessionJwksUrl ? { url: c.sessionJwksUrl } : { file: c.sessionKeysFile ?? "" },
    loginUrl: c.loginUrl,
    hostTemplates: c.hostTemplates,
    baseDomain: c.baseDomain,
    visitDomain: c.visitDomain ?? c.baseDomain,
    origins: c.origins,
    defaultTemplate: c.defaultTemplate,
    upstreamOverrides: c.upstreamOverrides,
    upstreamOverridesFile: c.upstreamOverridesFile,
    clusterDomain: c.clusterDomain,
    trustedProxies: trustedProxies(c.trustedProxies),
    allowedOrigins: c.allowedOrigins,
    upstreamTimeoutMs: c.upstreamTimeout,
    connectTimeoutMs: c.connectTimeout,
    readyGraceMs: c.readyGrace,
    websocketIdleTimeoutMs: c.websocketIdleTimeout,
    timeouts: { headersMs: c.headersTimeout, requestMs: c.requestTimeout },
    limits: { websocketsPerUser: c.maxWebSocketsPerUser, requestsPerUser: c.maxRequestsPerUser },
    activityFlushMs: c.activityFlush,
    visitQuietMs: c.visitQuiet,
    userManager: c.userManagerUrl ? { url: c.userManagerUrl, tokenFile: c.userManagerTokenFile } : undefined,
    startOnAccess: c.startOnAccess,
    accessLog: c.accessLog,
    shutdownGraceMs: c.shutdownGrace,
  };
}
