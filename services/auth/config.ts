/**
 * The auth service's settings (environment variables), checked together at start-up so a broken
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
import type { AllowLists } from "./allowlist.ts";
import type { GitHubSettings } from "./github.ts";
import type { OidcSettings } from "./oidc.ts";
import type { ProvisionSettings } from "./provision.ts";
import { createRedirectPolicy, parseHostPattern, type RedirectPolicy } from "./redirects.ts";

/** Keeps the text ("12h") so `--help` shows a readable default; converted after loading. */
const durationText = (raw: string): string => {
  parse.duration(raw);
  return raw.trim();
};

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

export const settings = {
  host: withDefault("AUTH_HOST", "Address to listen on", parse.string, "0.0.0.0"),
  port: withDefault("AUTH_PORT", "Port to listen on", parse.integer(0, 65535), 8080),
  publicUrl: required(
    "AUTH_PUBLIC_URL",
    "The URL browsers reach this service at, e.g. https://auth.example.org/ (callbacks are <url>/callback/oidc and <url>/callback/github)",
    parse.url,
  ),
  sessionKeysFile: required(
    "AUTH_SESSION_KEYS_FILE",
    "File with the session signing keys, the first signs: EC P-256 private keys as PEM (openssl ecparam -name prime256v1 -genkey -noout) or a private JWKS (node scripts/session-keys.ts)",
    parse.string,
  ),
  sessionTtl: withDefault("AUTH_SESSION_TTL", "How long a session lasts, e.g. 8h", durationText, "12h"),
  loginTimeout: withDefault(
    "AUTH_LOGIN_TIMEOUT",
    "How long a user may take at the identity provider",
    durationText,
    "10m",
  ),
  cookieSecure: withDefault(
    "AUTH_COOKIE_SECURE",
    "Mark cookies Secure (false only for plain-http local use)",
    parse.boolean,
    true,
  ),
  cookieDomain: optional(
    "AUTH_COOKIE_DOMAIN",
    "Session cookie domain so one login covers every template host, e.g. example.org for *.example.org (unset: this host only)",
    parse.string,
  ),
  allowedRedirectHosts: withDefault(
    "AUTH_ALLOWED_REDIRECT_HOSTS",
    "Comma-separated hosts the browser may return to after login: example.org, *.example.org (one label), host:port",
    hostPatterns,
    [],
  ),
  defaultRedirect: optional(
    "AUTH_DEFAULT_REDIRECT",
    "Where to go after login when no safe return URL was given; unset: AUTH_PUBLIC_URL",
    parse.url,
  ),

  oidcIssuer: optional(
    "AUTH_OIDC_ISSUER",
    "OpenID Connect issuer URL (discovery); enables OIDC login",
    parse.url,
  ),
  oidcClientId: optional("AUTH_OIDC_CLIENT_ID", "OIDC client id", parse.string),
  oidcClientSecret: optional("AUTH_OIDC_CLIENT_SECRET", "OIDC client secret", parse.string),
  oidcScopes: withDefault("AUTH_OIDC_SCOPES", "Comma-separated OIDC scopes", parse.list, [
    "openid",
    "profile",
    "email",
  ]),
  oidcTokenAuthMethod: withDefault(
    "AUTH_OIDC_TOKEN_AUTH_METHOD",
    "How the client authenticates at the token endpoint",
    parse.oneOf("client_secret_basic", "client_secret_post"),
    "client_secret_basic",
  ),
  oidcAllowHttp: withDefault(
    "AUTH_OIDC_ALLOW_HTTP",
    "Allow an http:// issuer (local development only)",
    parse.boolean,
    false,
  ),
  oidcUserinfo: withDefault(
    "AUTH_OIDC_USERINFO",
    "Also read claims from the UserInfo endpoint",
    parse.boolean,
    true,
  ),
  oidcDisplayName: withDefault(
    "AUTH_OIDC_DISPLAY_NAME",
    "Name of the OIDC login on the sign-in page",
    parse.string,
    "Single sign-on",
  ),
  usernameClaim: withDefault(
    "AUTH_USERNAME_CLAIM",
    "OIDC claim that is the user's identity (preferred_username, email, sub, ...)",
    parse.string,
    "preferred_username",
  ),
  oidcUserPrefix: withDefault(
    "AUTH_OIDC_USER_PREFIX",
    "Prefix put before OIDC identities, e.g. uni:",
    prefix,
    "",
  ),
  groupsClaim: withDefault(
    "AUTH_GROUPS_CLAIM",
    "OIDC claim that lists the user's groups",
    parse.string,
    "groups",
  ),

  githubClientId: optional(
    "AUTH_GITHUB_CLIENT_ID",
    "GitHub OAuth app client id; enables GitHub login",
    parse.string,
  ),
  githubClientSecret: optional("AUTH_GITHUB_CLIENT_SECRET", "GitHub OAuth app client secret", parse.string),
  githubUrl: withDefault(
    "AUTH_GITHUB_URL",
    "GitHub web URL (GitHub Enterprise: https://github.example.org)",
    parse.url,
    new URL("https://github.com"),
  ),
  githubApiUrl: withDefault(
    "AUTH_GITHUB_API_URL",
    "GitHub REST API URL (GitHub Enterprise: https://github.example.org/api/v3)",
    parse.url,
    new URL("https://api.github.com"),
  ),
  githubUserPrefix: withDefault(
    "AUTH_GITHUB_USER_PREFIX",
    "Prefix put before GitHub identities, e.g. github:",
    prefix,
    "",
  ),
  githubIdentity: withDefault(
    "AUTH_GITHUB_IDENTITY",
    "Which GitHub attribute is the identity: login (readable; renames change it) or id (numeric, stable)",
    parse.oneOf("login", "id"),
    "login",
  ),

  allowedDomains: withDefault(
    "AUTH_ALLOWED_DOMAINS",
    "Comma-separated e-mail domains allowed to log in (verified e-mail, exact)",
    domains,
    [],
  ),
  allowedGroups: withDefault(
    "AUTH_ALLOWED_GROUPS",
    "Comma-separated OIDC groups allowed to log in",
    parse.list,
    [],
  ),
  allowedOrgs: withDefault(
    "AUTH_ALLOWED_ORGS",
    "Comma-separated GitHub organizations allowed to log in",
    parse.list,
    [],
  ),

  provisionUrl: optional(
    "AUTH_PROVISION_URL",
    "user-manager base URL; enables creating each user's Userland on login",
    parse.url,
  ),
  provisionTemplate: optional(
    "AUTH_PROVISION_TEMPLATE",
    "Template for auto-provisioned Userlands",
    parse.string,
  ),
  provisionTokenFile: optional(
    "AUTH_PROVISION_TOKEN_FILE",
    "File with the bearer token for the user-manager (e.g. a projected ServiceAccount token)",
    parse.string,
  ),
  provisionTimeout: withDefault(
    "AUTH_PROVISION_TIMEOUT",
    "How long a login waits for auto-provisioning",
    durationText,
    "5s",
  ),
};

export interface AuthConfig {
  host: string;
  port: number;
  /** Normalized to end with "/" so endpoint URLs resolve under any path prefix. */
  publicUrl: URL;
  sessionKeysFile: string;
  sessionTtlSeconds: number;
  loginTimeoutSeconds: number;
  cookie: { secure: boolean; domain?: string | undefined };
  redirects: RedirectPolicy;
  oidc?:
    | (OidcSettings & { usernameClaim: string; userPrefix: string; groupsClaim: string; displayName: string })
    | undefined;
  github?: (GitHubSettings & { userPrefix: string; identity: "login" | "id" }) | undefined;
  allow: AllowLists;
  provision?: ProvisionSettings | undefined;
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
  let c: ConfigOf<typeof settings>;
  try {
    c = loadConfig("auth", settings, env);
  } catch (error) {
    // Report a missing provider together with the other problems: one pass to fix a deployment.
    if (error instanceof ConfigError && !anyProvider)
      throw new ConfigError("auth", [...error.problems, noProvider]);
    throw error;
  }
  const problems: string[] = [];
  const problem = (message: string) => problems.push(message);

  const publicUrl = new URL(c.publicUrl);
  if (publicUrl.protocol !== "https:" && publicUrl.protocol !== "http:")
    problem("AUTH_PUBLIC_URL must be an http:// or https:// URL");
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

  const sessionTtlSeconds = Math.round(parse.duration(c.sessionTtl) / 1000);
  if (sessionTtlSeconds < 60) problem("AUTH_SESSION_TTL must be at least 1m");
  const loginTimeoutSeconds = Math.round(parse.duration(c.loginTimeout) / 1000);
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
  if (oidcAny !== undefined) {
    if (c.oidcIssuer === undefined)
      problem("set AUTH_OIDC_ISSUER: the OpenID Connect issuer URL (AUTH_OIDC_CLIENT_ID/SECRET are set)");
    if (c.oidcClientId === undefined)
      problem("set AUTH_OIDC_CLIENT_ID: the client id registered at the OpenID Connect provider");
    if (c.oidcClientSecret === undefined)
      problem("set AUTH_OIDC_CLIENT_SECRET: the client secret registered at the OpenID Connect provider");
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

  let github: AuthConfig["github"];
  if (c.githubClientId !== undefined || c.githubClientSecret !== undefined) {
    if (c.githubClientId === undefined)
      problem(
        "set AUTH_GITHUB_CLIENT_ID: the GitHub OAuth app's client id (AUTH_GITHUB_CLIENT_SECRET is set)",
      );
    if (c.githubClientSecret === undefined)
      problem("set AUTH_GITHUB_CLIENT_SECRET: the GitHub OAuth app's client secret");
    if (c.githubClientId && c.githubClientSecret) {
      github = {
        clientId: c.githubClientId,
        clientSecret: c.githubClientSecret,
        url: c.githubUrl,
        apiUrl: c.githubApiUrl,
        readOrgs: c.allowedOrgs.length > 0,
        readEmails: c.allowedDomains.length > 0,
        userPrefix: c.githubUserPrefix,
        identity: c.githubIdentity,
      };
    }
  }

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

  let provision: ProvisionSettings | undefined;
  if (c.provisionUrl !== undefined || c.provisionTemplate !== undefined) {
    if (c.provisionUrl === undefined)
      problem("set AUTH_PROVISION_URL: the user-manager base URL (AUTH_PROVISION_TEMPLATE is set)");
    if (c.provisionTemplate === undefined)
      problem(
        "set AUTH_PROVISION_TEMPLATE: the Template to create Userlands from (AUTH_PROVISION_URL is set)",
      );
    else if (!new RegExp(TEMPLATE_NAME_PATTERN).test(c.provisionTemplate)) {
      problem(`AUTH_PROVISION_TEMPLATE=${JSON.stringify(c.provisionTemplate)} is not a valid Template name`);
    }
    if (c.provisionUrl && c.provisionTemplate) {
      provision = {
        url: c.provisionUrl,
        templateName: c.provisionTemplate,
        tokenFile: c.provisionTokenFile,
        timeoutMs: parse.duration(c.provisionTimeout),
      };
    }
  }

  if (problems.length > 0 || !redirects) throw new ConfigError("auth", problems);
  return {
    host: c.host,
    port: c.port,
    publicUrl,
    sessionKeysFile: c.sessionKeysFile,
    sessionTtlSeconds,
    loginTimeoutSeconds,
    cookie: { secure: c.cookieSecure, domain: cookieDomain },
    redirects,
    oidc,
    github,
    allow: { domains: c.allowedDomains, groups: c.allowedGroups, orgs: c.allowedOrgs },
    provision,
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
