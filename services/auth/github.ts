/**
 * GitHub OAuth login (the provider the original system used): authorize, exchange the code (with
 * PKCE), then read the account from the REST API. The base URLs are settings so GitHub Enterprise
 * Server and local stand-ins work the same way.
 */
import type { VerifiedEmail } from "./allowlist.ts";

export interface GitHubSettings {
  clientId: string;
  clientSecret: string;
  /** Web base URL (authorize and token endpoints), e.g. https://github.com. */
  url: URL;
  /** REST API base URL, e.g. https://api.github.com. */
  apiUrl: URL;
  /** Read organizations (for AUTH_ALLOWED_ORGS). */
  readOrgs: boolean;
  /** Read verified e-mail addresses (for AUTH_ALLOWED_DOMAINS). */
  readEmails: boolean;
}

export interface GitHubAccount {
  login: string;
  id: number;
  orgs: string[];
  emails: VerifiedEmail[];
}

export interface GitHubClient {
  authorizationUrl(tx: { state: string; codeChallenge: string }): URL;
  /** Exchanges the code and reads the account; throws GitHubError with a message for the person. */
  finish(code: string, verifier: string): Promise<GitHubAccount>;
}

export class GitHubError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GitHubError";
  }
}

const TIMEOUT_MS = 10_000;
const MAX_PAGES = 10;

/** `path` under `base`, keeping any path prefix of base (GitHub Enterprise serves /api/v3). */
function under(base: URL, path: string): URL {
  const b = new URL(base);
  if (!b.pathname.endsWith("/")) b.pathname += "/";
  return new URL(path.replace(/^\//, ""), b);
}

export function createGitHubClient(settings: GitHubSettings, redirectUri: URL): GitHubClient {
  const scopes = [
    "read:user",
    ...(settings.readOrgs ? ["read:org"] : []),
    ...(settings.readEmails ? ["user:email"] : []),
  ];

  async function api<T>(token: string, path: string): Promise<{ body: T; link: string | null }> {
    const response = await fetch(under(settings.apiUrl, path), {
      headers: {
        accept: "application/vnd.github+json",
        authorization: `Bearer ${token}`,
        "user-agent": "userland-auth",
        "x-github-api-version": "2022-11-28",
      },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (!response.ok) throw new GitHubError(`GitHub answered ${response.status} for ${path}`);
    return { body: (await response.json()) as T, link: response.headers.get("link") };
  }

  async function pages<T>(token: string, path: string): Promise<T[]> {
    const all: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const { body, link } = await api<T[]>(token, `${path}?per_page=100&page=${page}`);
      if (!Array.isArray(body)) throw new GitHubError(`GitHub sent an unexpected answer for ${path}`);
      all.push(...body);
      if (!link?.includes('rel="next"')) break;
    }
    return all;
  }

  return {
    authorizationUrl(tx) {
      const url = under(settings.url, "/login/oauth/authorize");
      url.search = new URLSearchParams({
        client_id: settings.clientId,
        redirect_uri: redirectUri.href,
        scope: scopes.join(" "),
        state: tx.state,
        code_challenge: tx.codeChallenge,
        code_challenge_method: "S256",
        allow_signup: "false",
      }).toString();
      return url;
    },

    async finish(code, verifier) {
      const response = await fetch(under(settings.url, "/login/oauth/access_token"), {
        method: "POST",
        headers: {
          accept: "application/json",
          "content-type": "application/x-www-form-urlencoded",
          "user-agent": "userland-auth",
        },
        body: new URLSearchParams({
          client_id: settings.clientId,
          client_secret: settings.clientSecret,
          code,
          redirect_uri: redirectUri.href,
          code_verifier: verifier,
        }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      // GitHub reports a bad or reused code as 200 with an "error" field.
      const token = (await response.json().catch(() => ({}))) as {
        access_token?: unknown;
        error?: unknown;
        error_description?: unknown;
      };
      if (!response.ok || typeof token.access_token !== "string") {
        const why =
          typeof token.error === "string"
            ? `${token.error}${typeof token.error_description === "string" ? `: ${token.error_description}` : ""}`
            : `HTTP ${response.status}`;
        throw new GitHubError(`GitHub did not accept the login (${why})`);
      }
      const accessToken = token.access_token;
      const { body: user } = await api<{ login?: unknown; id?: unknown }>(accessToken, "/user");
      if (typeof user.login !== "string" || typeof user.id !== "number")
        throw new GitHubError("GitHub sent an account without a login");
      const orgs = settings.readOrgs
        ? (await pages<{ login?: unknown }>(accessToken, "/user/orgs")).map((o) => String(o.login))
        : [];
      const emails = settings.readEmails
        ? (await pages<{ email?: unknown; verified?: unknown }>(accessToken, "/user/emails"))
            .filter((e) => typeof e.email === "string")
            .map((e) => ({ email: String(e.email), verified: e.verified === true }))
        : [];
      return { login: user.login, id: user.id, orgs, emails };
    },
  };
}
