/**
 * A loopback stand-in for GitHub that speaks the parts of its OAuth web flow and REST API the auth
 * service uses: /login/oauth/authorize (approves at once and redirects back with code and state),
 * /login/oauth/access_token (checks client secret, redirect URI and PKCE; codes work once, and a
 * bad code is a 200 with an "error" field, as on GitHub), /user, /user/orgs and /user/emails.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHubUser {
  login: string;
  id: number;
  orgs: string[];
  emails: { email: string; verified: boolean; primary?: boolean }[];
}

export interface GitHubStandIn {
  url: string;
  clientId: string;
  clientSecret: string;
  signInAs(login: string): void;
  /** Requests seen, as "METHOD /path?query". */
  requests: string[];
  /** Scopes asked for by the last authorization request. */
  lastScope: string | undefined;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
}

export async function startGitHubStandIn(users: GitHubUser[]): Promise<GitHubStandIn> {
  const clientId = "Iv1.standin";
  const clientSecret = "stand-in-secret";
  const byLogin = new Map(users.map((u) => [u.login, u]));
  const codes = new Map<string, { login: string; redirectUri: string; challenge: string | null }>();
  const tokens = new Map<string, string>();
  const state = {
    current: undefined as string | undefined,
    lastScope: undefined as string | undefined,
    requests: [] as string[],
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => json(res, 500, { message: String(error) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://stand-in");
    state.requests.push(`${req.method} ${url.pathname}${url.search}`);
    if (req.method === "GET" && url.pathname === "/login/oauth/authorize") {
      const redirectUri = url.searchParams.get("redirect_uri") ?? "";
      if (url.searchParams.get("client_id") !== clientId || !state.current)
        return json(res, 400, { error: "bad request" });
      state.lastScope = url.searchParams.get("scope") ?? undefined;
      const code = randomBytes(10).toString("hex");
      const challenge =
        url.searchParams.get("code_challenge_method") === "S256"
          ? url.searchParams.get("code_challenge")
          : null;
      codes.set(code, { login: state.current, redirectUri, challenge });
      const back = new URL(redirectUri);
      back.searchParams.set("code", code);
      back.searchParams.set("state", url.searchParams.get("state") ?? "");
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (req.method === "POST" && url.pathname === "/login/oauth/access_token") {
      const form = new URLSearchParams(await body(req));
      const grant = codes.get(form.get("code") ?? "");
      codes.delete(form.get("code") ?? "");
      if (form.get("client_id") !== clientId || form.get("client_secret") !== clientSecret) {
        return json(res, 200, {
          error: "incorrect_client_credentials",
          error_description: "The client_id and/or client_secret passed are incorrect.",
        });
      }
      if (!grant || grant.redirectUri !== form.get("redirect_uri")) {
        return json(res, 200, {
          error: "bad_verification_code",
          error_description: "The code passed is incorrect or expired.",
        });
      }
      const verifier = form.get("code_verifier") ?? "";
      if (grant.challenge && createHash("sha256").update(verifier).digest("base64url") !== grant.challenge) {
        return json(res, 200, { error: "invalid_grant", error_description: "PKCE verification failed." });
      }
      const token = `gho_${randomBytes(12).toString("hex")}`;
      tokens.set(token, grant.login);
      return json(res, 200, { access_token: token, token_type: "bearer", scope: "read:user" });
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const user = byLogin.get(tokens.get(auth ?? "") ?? "");
    if (!user) return json(res, 401, { message: "Bad credentials" });
    if (url.pathname === "/user") return json(res, 200, { login: user.login, id: user.id, type: "User" });
    if (url.pathname === "/user/orgs" || url.pathname === "/user/emails") {
      // One item per page, so pagination (Link rel="next") is exercised.
      const items =
        url.pathname === "/user/orgs" ? user.orgs.map((login, i) => ({ login, id: i + 1 })) : user.emails;
      const page = Number(url.searchParams.get("page") ?? "1");
      const next: Record<string, string> =
        page < items.length ? { link: `<http://stand-in${url.pathname}?page=${page + 1}>; rel="next"` } : {};
      return json(res, 200, items.slice(page - 1, page), next);
    }
    return json(res, 404, { message: "Not Found" });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    clientId,
    clientSecret,
    signInAs(login) {
      state.current = login;
    },
    get requests() {
      return state.requests;
    },
    get lastScope() {
      return state.lastScope;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
