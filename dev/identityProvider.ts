/**
 * A local OpenID provider for trying Userland out (oidc-provider, the same library the tests use):
 * its login page accepts ANY name without a password. Never use it in production: it exists so
 * `npm start` works on a machine with no real identity provider.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOn } from "../lib/listen.ts";
import { memoryAdapters } from "./identityProviderStore.ts";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";
import { html, pageDocument } from "../lib/html.ts";

export interface DevIdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

const style = `body{font:16px system-ui,sans-serif;background:#f4f5f7;margin:0;display:grid;place-items:center;min-height:100vh}
main{background:#fff;padding:2rem 2.5rem;border-radius:12px;box-shadow:0 2px 12px #0002;max-width:26rem}
.warn{background:#fff3cd;border:1px solid #e0c36a;padding:.6rem .8rem;border-radius:6px;font-size:.9rem}
input{font:inherit;padding:.5rem;width:100%;box-sizing:border-box;margin:.5rem 0 1rem}button{font:inherit;padding:.5rem 1.2rem;background:#2b5fd9;color:#fff;border:0;border-radius:6px}
.err{color:#b00020}`;

function loginPage(uid: string, error = ""): string {
  return pageDocument({
    title: "Sign in — local development",
    style,
    heading: "Sign in to Userland",
    body: html`<p class="warn">
        <strong>Local development identity provider.</strong> Anyone can sign in as anyone: not for
        production.
      </p>
      ${error ? html`<p class="err">${error}</p>` : ""}
      <form method="post" action="/interaction/${uid}/login">
        <label for="name">Your name (any name works)</label>
        <input id="name" name="name" autofocus required maxlength="64" placeholder="e.g. alice" />
        <button type="submit">Sign in</button>
      </form>`,
  });
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = "";
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 4096) break;
  }
  return new URLSearchParams(body);
}

/**
 * Answers one oidc-provider interaction (this one and the tests' provider): the login prompt signs
 * in the account `accountFor` names (undefined: it has answered the request itself, e.g. with a
 * form); consent is given as for a first-party app, the client granted whatever it asked for.
 */
async function answerInteraction(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  accountFor: () => string | undefined | Promise<string | undefined>,
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === "login") {
    const accountId = await accountFor();
    if (accountId !== undefined)
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId } },
        { mergeWithLastSubmission: false },
      );
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({
        accountId: details.session?.accountId,
        clientId: String(details.params.client_id),
      });
  if (!grant) throw new Error("grant not found");
  const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  await provider.interactionFinished(
    req,
    res,
    { consent: { grantId: await grant.save() } },
    { mergeWithLastSubmission: true },
  );
}

/**
 * The provider's requests: its interactions answered as `answerInteraction` does (a failure: 500
 * with its message), everything else by the provider itself.
 */
export function providerHandler(
  provider: Provider,
  accountFor: (
    req: IncomingMessage,
    res: ServerResponse,
    uid: string,
  ) => string | undefined | Promise<string | undefined>,
): (req: IncomingMessage, res: ServerResponse) => void {
  const callback = provider.callback();
  return (req, res) => {
    const uid = /^\/interaction\/([^/?]+)/.exec(req.url ?? "")?.[1];
    if (uid) {
      answerInteraction(provider, req, res, () => accountFor(req, res, uid)).catch((error: unknown) =>
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error)),
      );
      return;
    }
    void callback(req, res);
  };
}

/** The one client the local provider knows (the auth service). */
export const DEV_CLIENT = { clientId: "userland-local", clientSecret: "local-development-only-secret" };

export async function startDevIdentityProvider(opts: {
  port: number;
  redirectUris: string[];
  /** Serve on the socket the parent passed under this name (lib/listen.ts), not on `port`. */
  listenAs?: string;
  /**
   * The issuer's host name (default 127.0.0.1). Another name that also leads here lets clients
   * that cannot dial this machine's loopback (pods on the real node) use the same issuer URL.
   */
  issuerHost?: string;
}): Promise<DevIdentityProvider> {
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) =>
    void res.writeHead(503).end();
  const server = createServer((req, res) => handle(req, res));
  const port = new URL(await listenOn(server, opts.port, "127.0.0.1", opts.listenAs)).port;
  const issuer = `http://${opts.issuerHost ?? "127.0.0.1"}:${port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const { clientId, clientSecret } = DEV_CLIENT;
  const provider = new Provider(issuer, {
    adapter: memoryAdapters(),
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "local", alg: "RS256", use: "sig" }] },
    cookies: { keys: ["local-development-only"] },
    claims: { openid: ["sub"], profile: ["preferred_username", "name"], email: ["email", "email_verified"] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({
        sub: id,
        preferred_username: id,
        name: id,
        email: `${id}@example.invalid`,
        email_verified: true,
      }),
    }),
  });

  /** The name the login form was sent with, or undefined after answering with the form. */
  async function signIn(req: IncomingMessage, res: ServerResponse, uid: string): Promise<string | undefined> {
    if (req.method !== "POST") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(loginPage(uid));
      return undefined;
    }
    const name = ((await readForm(req)).get("name") ?? "").trim();
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name)) {
      res
        .writeHead(400, { "content-type": "text/html; charset=utf-8" })
        .end(loginPage(uid, "Use letters, digits, '.', '_', '@' or '-'."));
      return undefined;
    }
    return name;
  }

  handle = providerHandler(provider, signIn);

  return {
    issuer,
    clientId,
    clientSecret,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
