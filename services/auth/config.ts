/**
 * The auth service's settings (environment variables), checked together at start-up so a broken
 * deployment gets one message that names every variable to set or fix.
 */
import { formatDuration } from "../../api/duration.ts";
import { TEMPLATE_NAME_PATTERN } from "../../api/v1alpha1/template.ts";
import { ConfigError, loadConfig, parse, serviceListeners, type Settings } from "../../lib/config.ts";
import { timeoutSettings, type ServerTimeouts } from "../../lib/serverTimeouts.ts";
import type { AllowLists } from "./allowlist.ts";
import type { GitHubSettings } from "./github.ts";
import type { OidcSettings } from "./oidc.ts";
import type { ProvisionSettings } from "./provision.ts";
import type { SignOutSettings } from "./signOut.ts";
import { createRedirectPolicy, parseHostPattern, type RedirectPolicy } from "./redirects.ts";

const hostPatterns = (raw: string): string[] => {
  const entries = parse.list(raw);
  entries.forEach(parseHostPattern);
  return entries;
};

const domains = (raw: string): string[] =>
  parse.list(raw).map((d) => {
    const domain = d.toLowerCase().replace(/^@/, "");
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain))
      throw new Error(`"${d}" is not an e-mail domain such as uni.example.org`);
    return domain;
  });

const prefix = (raw: string): string => {
  if (!/^[!-~][ -~]*$/.test(raw))
    throw new Error("expected printable ASCII that does not start with a space, e.g. github:");
  return raw;
};

// The counters stay off auth.<baseDomain>, which the Ingress routes to AUTH_PORT whole.
const listeners = serviceListeners("AUTH", { admin: "/metrics and /healthz" });

export const settings = {
  ...listeners.settings,
  // Sign-out forms and callbacks are tiny: a request still arriving after 30 s is a slow-loris client.
  ...timeoutSettings("AUTH", { headersMs: 20_000, requestMs: 30_000 }),
  publicUrl: {
    env: "AUTH_PUBLIC_URL",
    description:
      "The URL browsers reach this service at, e.g. https://auth.example.org/ (callbacks are <url>/callback/oidc and <url>/callback/github)",
    parse: parse.httpUrl,
  },
  sessionKeysFile: {
    env: "AUTH_SESSION_KEYS_FILE",
    description:
      "File with the session signing keys, the first signs: EC P-256 private keys as PEM (openssl ecparam -name prime256v1 -genkey -noout) or a private JWKS (node scripts/sessionKeys.ts)",
    parse: parse.string,
  },
  sessionTtl: {
    env: "AUTH_SESSION_TTL",
    description: "How long a session lasts, e.g. 8h",
    parse: parse.duration,
    default: 12 * 3_600_000,
    show: formatDuration,
  },
  loginTimeout: {
    env: "AUTH_LOGIN_TIMEOUT",
    description: "How long a user may take at the identity provider",
    parse: parse.duration,
    default: 10 * 60_000,
    show: formatDuration,
  },
  endedSessions: {
    env: "AUTH_ENDED_SESSIONS",
    description:
      "Refuse sessions ended before they expire (sign-out, sign out everywhere, a teacher) at /forward-auth and /whoami: watch the session records the user-manager writes (needs Kubernetes: list and watch configmaps in the service's own namespace); false only where no ingress relies on /forward-auth",
    parse: parse.boolean,
    default: false,
  },
  cookieSecure: {
    env: "AUTH_COOKIE_SECURE",
    description: "Mark cookies Secure (false only for plain-http local use)",
    parse: parse.boolean,
    default: true,
  },
  cookieDomain: {
    env: "AUTH_COOKIE_DOMAIN",
    description:
      "Session cookie domain so one login covers every template host, e.g. example.org for *.example.org (unset: this host only)",
    parse: parse.string,
    default: undefined,
  },
  allowedRedirectHosts: {
    env: "AUTH_ALLOWED_REDIRECT_HOSTS",
    description:
      "Comma-separated hosts the browser may return to after login: example.org, *.example.org (one label), host:port",
    parse: hostPatterns,
    default: [],
  },
  clearSiteUrl: {
    env: "AUTH_CLEAR_SITE_URL",
    description:
      "The proxy's sign-out hop on any Template host, e.g. https://code.example.org/_userland/signed-out: signing out, and signing in before the new session is set, pass through it, and the proxy clears cookies, storage and service workers on every Template host (shared lab computers); unset: not cleared",
    parse: parse.httpUrl,
    default: undefined,
  },
  defaultRedirect: {
    env: "AUTH_DEFAULT_REDIRECT",
    description: "Where to go after login when no safe return URL was given; unset: AUTH_PUBLIC_URL",
    parse: parse.url,
    default: undefined,
  },

  oidcIssuer: {
    env: "AUTH_OIDC_ISSUER",
    description: "OpenID Connect issuer URL (discovery); enables OIDC login",
    parse: parse.url,
    default: undefined,
  },
  oidcClientId: {
    env: "AUTH_OIDC_CLIENT_ID",
    description: "OIDC client id",
    parse: parse.string,
    default: undefined,
  },
  oidcClientSecret: {
    env: "AUTH_OIDC_CLIENT_SECRET",
    description: "OIDC client secret",
    parse: parse.string,
    default: undefined,
  },
  oidcScopes: {
    env: "AUTH_OIDC_SCOPES",
    description: "Comma-separated OIDC scopes",
    parse: parse.list,
    default: ["openid", "profile", "email"],
  },
  oidcTokenAuthMethod: {
    env: "AUTH_OIDC_TOKEN_AUTH_METHOD",
    description: "How the client authenticates at the token endpoint",
    parse: parse.oneOf("client_secret_basic", "client_secret_post"),
    default: "client_secret_basic",
  },
  oidcAllowHttp: {
    env: "AUTH_OIDC_ALLOW_HTTP",
    description: "Allow an http:// issuer (local development only)",
    parse: parse.boolean,
    default: false,
  },
  oidcUserinfo: {
    env: "AUTH_OIDC_USERINFO",
    description: "Also read claims from the UserInfo endpoint",
    parse: parse.boolean,
    default: true,
  },
  oidcDisplayName: {
    env: "AUTH_OIDC_DISPLAY_NAME",
    description: "Name of the OIDC login on the sign-in page",
    parse: parse.string,
    default: "Single sign-on",
  },
  usernameClaim: {
    env: "AUTH_USERNAME_CLAIM",
    description: "OIDC claim that is the user's identity (preferred_username, email, sub, ...)",
    parse: parse.string,
    default: "preferred_username",
  },
  oidcUserPrefix: {
    env: "AUTH_OIDC_USER_PREFIX",
    description: "Prefix put before OIDC identities, e.g. uni:",
    parse: prefix,
    default: "",
  },
  groupsClaim: {
    env: "AUTH_GROUPS_CLAIM",
    description: "OIDC claim that lists the user's groups",
    parse: parse.string,
    default: "groups",
  },

  githubClientId: {
    env: "AUTH_GITHUB_CLIENT_ID",
    description: "GitHub OAuth app client id; enables GitHub login",
    parse: parse.string,
    default: undefined,
  },
  githubClientSecret: {
    env: "AUTH_GITHUB_CLIENT_SECRET",
    description: "GitHub OAuth app client secret",
    parse: parse.string,
    default: undefined,
  },
  githubUrl: {
    env: "AUTH_GITHUB_URL",
    description: "GitHub web URL (GitHub Enterprise: https://github.example.org)",
    parse: parse.url,
    default: new URL("https://github.com"),
  },
  githubApiUrl: {
    env: "AUTH_GITHUB_API_URL",
    description: "GitHub REST API URL (GitHub Enterprise: https://github.example.org/api/v3)",
    parse: parse.url,
    default: new URL("https://api.github.com"),
  },
  githubUserPrefix: {
    env: "AUTH_GITHUB_USER_PREFIX",
    description: "Prefix put before GitHub identities, e.g. github:",
    parse: prefix,
    default: "",
  },
  githubIdentity: {
    env: "AUTH_GITHUB_IDENTITY",
    description:
      "Which GitHub attribute is the identity: login (readable; renames change it) or id (numeric, stable)",
    parse: parse.oneOf("login", "id"),
    default: "login",
  },

  allowedDomains: {
    env: "AUTH_ALLOWED_DOMAINS",
    description: "Comma-separated e-mail domains allowed to log in (verified e-mail, exact)",
    parse: domains,
    default: [],
  },
  allowedGroups: {
    env: "AUTH_ALLOWED_GROUPS",
    description: "Comma-separated OIDC groups allowed to log in",
    parse: parse.list,
    default: [],
  },
  allowedOrgs: {
    env: "AUTH_ALLOWED_ORGS",
    description: "Comma-separated GitHub organizations allowed to log in",
    parse: parse.list,
    default: [],
  },

  provisionUrl: {
    env: "AUTH_PROVISION_URL",
    description: "user-manager base URL; enables creating each user's Userland on login",
    parse: parse.url,
    default: undefined,
  },
  provisionTemplate: {
    env: "AUTH_PROVISION_TEMPLATE",
    description: "Template a student with no Userland yet gets at sign-in (auto-provisioning)",
    parse: parse.string,
    default: undefined,
  },
  provisionTokenFile: {
    env: "AUTH_PROVISION_TOKEN_FILE",
    description: "File with the bearer token for the user-manager (e.g. a projected ServiceAccount token)",
    parse: parse.string,
    default: undefined,
  },
  provisionSkipUrls: {
    env: "AUTH_PROVISION_SKIP_URLS",
    description:
      "Comma-separated URL prefixes: a sign-in on its way to one of them provisions nothing (the teachers' console: signing in to it gives a teacher no environment)",
    parse: (raw: string): URL[] => parse.list(raw).map((u) => parse.httpUrl(u)),
    default: [],
  },
  provisionTimeout: {
    env: "AUTH_PROVISION_TIMEOUT",
    description: "How long a login waits for auto-provisioning",
    parse: parse.duration,
    default: 5_000,
    show: formatDuration,
  },

  signOutUrl: {
    env: "AUTH_SIGN_OUT_URL",
    description:
      "user-manager base URL; set: /logout ends the session everywhere (the proxy and forward-auth refuse a copied cookie), not only on this browser",
    parse: parse.url,
    default: undefined,
  },
  signOutTokenFile: {
    env: "AUTH_SIGN_OUT_TOKEN_FILE",
    description:
      "File with the bearer token for the user-manager at sign-out (a projected ServiceAccount token; its account needs delete on userlands/sessions)",
    parse: parse.string,
    default: undefined,
  },
  signOutTimeout: {
    env: "AUTH_SIGN_OUT_TIMEOUT",
    description: "How long /logout waits for the user-manager to end the session everywhere",
    parse: parse.duration,
    default: 5_000,
    show: formatDuration,
  },
} satisfies Settings;

export interface AuthConfig {
  host: string;
  port: number;
  /** Where /metrics is served (lib/adminServer.ts), never the public port. */
  adminHost: string;
  adminPort: number;
  timeouts: ServerTimeouts;
  /** Normalized to end with "/" so endpoint URLs resolve under any path prefix. */
  publicUrl: URL;
  sessionKeysFile: string;
  sessionTtlSeconds: number;
  loginTimeoutSeconds: number;
  cookie: { secure: boolean; domain?: string | undefined };
  /** The proxy's /_userland/signed-out, through which sign-out and sign-in clear every Template host. */
  clearSiteUrl?: URL | undefined;
  redirects: RedirectPolicy;
  oidc?:
    | (OidcSettings & { usernameClaim: string; userPrefix: string; groupsClaim: string; displayName: string })
    | undefined;
  github?: (GitHubSettings & { userPrefix: string; identity: "login" | "id" }) | undefined;
  allow: AllowLists;
  provision?: ProvisionSettings | undefined;
  /** Set: /logout ends the session everywhere through the user-manager (signOut.ts). */
  signOut?: SignOutSettings | undefined;
  /** True: /forward-auth and /whoami refuse ended sessions, watching the session records. */
  endedSessions: boolean;
}

/**
 * Settings that work only together, such as a provider's client id and secret: once any of them is
 * set, each one left unset is a problem, with its message.
 */
function together(problem: (message: string) => void, group: [value: unknown, unset: string][]): void {
  if (group.every(([value]) => value === undefined)) return;
  for (const [value, unset] of group) if (value === undefined) problem(unset);
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Loads and cross-checks the settings; throws ConfigError listing every problem. */
export function loadAuthConfig(env: NodeJS.ProcessEnv = process.env): AuthConfig {
  const noProvider =
    "configure a login provider: set AUTH_OIDC_ISSUER, AUTH_OIDC_CLIENT_ID and AUTH_OIDC_CLIENT_SECRET (OpenID Connect), " +
    "and/or AUTH_GITHUB_CLIENT_ID and AUTH_GITHUB_CLIENT_SECRET (GitHub)";
  const providerVars = [
    "AUTH_OIDC_ISSUER",
    "AUTH_OIDC_CLIENT_ID",
    "AUTH_OIDC_CLIENT_SECRET",
    "AUTH_GITHUB_CLIENT_ID",
    "AUTH_GITHUB_CLIENT_SECRET",
  ];
  const anyProvider = providerVars.some((name) => (env[name] ?? "") !== "");
  const c = loadConfig("auth", settings, env, anyProvider ? [] : [noProvider]);
  const problems: string[] = [];
  const problem = (message: string) => problems.push(message);
  const adminProblem = listeners.problem(c);
  if (adminProblem) problem(adminProblem);

  const publicUrl = new URL(c.publicUrl);
  if (publicUrl.search || publicUrl.hash || publicUrl.username || publicUrl.password) {
    problem("AUTH_PUBLIC_URL must not have a query, fragment or user name");
  }
  publicUrl.search = "";
  publicUrl.hash = "";
  if (!publicUrl.pathname.endsWith("/")) publicUrl.pathname += "/";
  if (c.cookieSecure && publicUrl.protocol === "http:" && !LOOPBACK.has(publicUrl.hostname)) {
    problem(
      "AUTH_PUBLIC_URL is plain http, where browsers drop Secure cookies: use https, or set AUTH_COOKIE_SECURE=false for local use",
    );
  }

  let cookieDomain: string | undefined;
  if (c.cookieDomain !== undefined) {
    cookieDomain = c.cookieDomain.toLowerCase().replace(/^\./, "");
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(cookieDomain)) {
      problem(`AUTH_COOKIE_DOMAIN=${JSON.stringify(c.cookieDomain)} is not a domain such as example.org`);
    } else if (publicUrl.hostname !== cookieDomain && !publicUrl.hostname.endsWith(`.${cookieDomain}`)) {
      problem(
        `AUTH_COOKIE_DOMAIN=${cookieDomain} must contain the host of AUTH_PUBLIC_URL (${publicUrl.hostname}), or browsers refuse the cookie`,
      );
    }
  }

  const sessionTtlSeconds = Math.round(c.sessionTtl / 1000);
  if (sessionTtlSeconds < 60) problem("AUTH_SESSION_TTL must be at least 1m");
  const loginTimeoutSeconds = Math.round(c.loginTimeout / 1000);
  if (loginTimeoutSeconds < 30) problem("AUTH_LOGIN_TIMEOUT must be at least 30s");

  let redirects: RedirectPolicy | undefined;
  try {
    redirects = createRedirectPolicy({
      publicUrl,
      allowedHosts: c.allowedRedirectHosts,
      defaultRedirect: c.defaultRedirect,
    });
  } catch (error) {
    problem(
      `AUTH_DEFAULT_REDIRECT: ${(error as Error).message}; add its host to AUTH_ALLOWED_REDIRECT_HOSTS`,
    );
  }

  let oidc: AuthConfig["oidc"];
  const oidcAny = c.oidcIssuer ?? c.oidcClientId ?? c.oidcClientSecret;
  together(problem, [
    [
      c.oidcIssuer,
      "set AUTH_OIDC_ISSUER: the OpenID Connect issuer URL (AUTH_OIDC_CLIENT_ID/SECRET are set)",
    ],
    [c.oidcClientId, "set AUTH_OIDC_CLIENT_ID: the client id registered at the OpenID Connect provider"],
    [
      c.oidcClientSecret,
      "set AUTH_OIDC_CLIENT_SECRET: the client secret registered at the OpenID Connect provider",
    ],
  ]);
  if (oidcAny !== undefined) {
    if (
      c.oidcIssuer &&
      c.oidcIssuer.protocol !== "https:" &&
      !(c.oidcIssuer.protocol === "http:" && c.oidcAllowHttp)
    ) {
      problem(
        "AUTH_OIDC_ISSUER must be an https:// URL (set AUTH_OIDC_ALLOW_HTTP=true only for a local http issuer)",
      );
    }
    if (!c.oidcScopes.includes("openid")) problem('AUTH_OIDC_SCOPES must include "openid"');
    if (c.oidcIssuer && c.oidcClientId && c.oidcClientSecret) {
      oidc = {
        issuer: c.oidcIssuer,
        clientId: c.oidcClientId,
        clientSecret: c.oidcClientSecret,
        scopes: c.oidcScopes,
        tokenAuthMethod: c.oidcTokenAuthMethod,
        allowHttp: c.oidcAllowHttp,
        userinfo: c.oidcUserinfo,
        usernameClaim: c.usernameClaim,
        userPrefix: c.oidcUserPrefix,
        groupsClaim: c.groupsClaim,
        displayName: c.oidcDisplayName,
      };
    }
  }

  together(problem, [
    [
      c.githubClientId,
      "set AUTH_GITHUB_CLIENT_ID: the GitHub OAuth app's client id (AUTH_GITHUB_CLIENT_SECRET is set)",
    ],
    [c.githubClientSecret, "set AUTH_GITHUB_CLIENT_SECRET: the GitHub OAuth app's client secret"],
  ]);
  const github: AuthConfig["github"] =
    c.githubClientId && c.githubClientSecret
      ? {
          clientId: c.githubClientId,
          clientSecret: c.githubClientSecret,
          url: c.githubUrl,
          apiUrl: c.githubApiUrl,
          readOrgs: c.allowedOrgs.length > 0,
          readEmails: c.allowedDomains.length > 0,
          userPrefix: c.githubUserPrefix,
          identity: c.githubIdentity,
        }
      : undefined;

  if (!anyProvider) problem(noProvider);
  if (oidcAny !== undefined && (c.githubClientId ?? c.githubClientSecret) !== undefined) {
    // Both providers may know a user "alice" who are different people; distinct prefixes that
    // cannot be prefixes of each other keep the two identity spaces disjoint.
    const [a, b] = [c.oidcUserPrefix, c.githubUserPrefix];
    if (a === "" || b === "" || a.startsWith(b) || b.startsWith(a)) {
      problem(
        "with both OIDC and GitHub login, set AUTH_OIDC_USER_PREFIX and AUTH_GITHUB_USER_PREFIX to different prefixes " +
          "(neither a prefix of the other, e.g. uni: and github:) so the same name at two providers never becomes one user",
      );
    }
  }

  together(problem, [
    [c.provisionUrl, "set AUTH_PROVISION_URL: the user-manager base URL (AUTH_PROVISION_TEMPLATE is set)"],
    [
      c.provisionTemplate,
      "set AUTH_PROVISION_TEMPLATE: the Template to create Userlands from (AUTH_PROVISION_URL is set)",
    ],
  ]);
  if (c.provisionTemplate !== undefined && !new RegExp(TEMPLATE_NAME_PATTERN).test(c.provisionTemplate))
    problem(`AUTH_PROVISION_TEMPLATE=${JSON.stringify(c.provisionTemplate)} is not a valid Template name`);
  const provision: ProvisionSettings | undefined =
    c.provisionUrl && c.provisionTemplate
      ? {
          url: c.provisionUrl,
          templateName: c.provisionTemplate,
          tokenFile: c.provisionTokenFile,
          timeoutMs: c.provisionTimeout,
          skipUrls: c.provisionSkipUrls,
        }
      : undefined;

  together(problem, [
    [
      c.signOutUrl,
      "set AUTH_SIGN_OUT_URL: the user-manager base URL that ends sessions at sign-out (AUTH_SIGN_OUT_TOKEN_FILE is set)",
    ],
    [
      c.signOutTokenFile,
      "set AUTH_SIGN_OUT_TOKEN_FILE: the file with the token the user-manager accepts (a projected ServiceAccount token; AUTH_SIGN_OUT_URL is set)",
    ],
  ]);
  const signOut: SignOutSettings | undefined =
    c.signOutUrl && c.signOutTokenFile
      ? { url: c.signOutUrl, tokenFile: c.signOutTokenFile, timeoutMs: c.signOutTimeout }
      : undefined;

  if (problems.length > 0 || !redirects) throw new ConfigError("auth", problems);
  return {
    host: c.host,
    port: c.port,
    adminHost: c.adminHost,
    adminPort: c.adminPort,
    timeouts: { headersMs: c.headersTimeout, requestMs: c.requestTimeout },
    publicUrl,
    sessionKeysFile: c.sessionKeysFile,
    sessionTtlSeconds,
    loginTimeoutSeconds,
    cookie: { secure: c.cookieSecure, domain: cookieDomain },
    clearSiteUrl: c.clearSiteUrl,
    redirects,
    oidc,
    github,
    allow: { domains: c.allowedDomains, groups: c.allowedGroups, orgs: c.allowedOrgs },
    provision,
    signOut,
    endedSessions: c.endedSessions,
  };
}

/** Configurations that are valid but probably not what the admin meant; logged at start-up. */
export function configWarnings(config: AuthConfig): string[] {
  const warnings: string[] = [];
  const { domains, groups, orgs } = config.allow;
  if (config.github && domains.length === 0 && orgs.length === 0) {
    warnings.push(
      "GitHub login is open to every GitHub account: set AUTH_ALLOWED_ORGS or AUTH_ALLOWED_DOMAINS to restrict it",
    );
  }
  if (config.github && groups.length > 0 && orgs.length === 0) {
    warnings.push(
      "AUTH_ALLOWED_GROUPS applies only to OIDC logins; GitHub logins are not restricted by it (use AUTH_ALLOWED_ORGS)",
    );
  }
  if (config.oidc && orgs.length > 0 && groups.length === 0 && domains.length === 0) {
    warnings.push(
      "AUTH_ALLOWED_ORGS applies only to GitHub logins; OIDC logins are not restricted by it (use AUTH_ALLOWED_GROUPS or AUTH_ALLOWED_DOMAINS)",
    );
  }
  return warnings;
}
