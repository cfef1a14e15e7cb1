/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1 for tests. Its login and consent screens are
 * replaced by a tiny interaction handler that signs in whichever account the test chose with
 * `signInAs`, through the provider's own interaction API, so the authorization endpoint, code
 * issuance, token endpoint, ID token signing and UserInfo are all the real thing.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

export type AccountClaims = Record<string, unknown>;

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  provider: Provider;
  /** The account the next authorization signs in. */
  signInAs(accountId: string): void;
  /** Calls to the token endpoint that exchanged a code, successful or not. */
  codeExchanges: number;
  close(): Promise<void>;
}

export async function startOidcProvider(options: {
  redirectUri: string;
  accounts: Record<string, AccountClaims>;
}): Promise<TestOidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined = undefined;
  const server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: "test-rs256", alg: "RS256", use: "sig" };
  const clientId = "userland-auth";
  const clientSecret = "test-client-secret-that-is-long-enough";
  let current: string | undefined;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: ["test-cookie-signing-key"] },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["preferred_username", "name"],
      groups: ["groups"],
    },
    features: { devInteractions: { enabled: false } },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      Grant: 3600,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, id) => {
      const claims = options.accounts[id];
      if (!claims) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...claims }) };
    },
  });

  const state = { codeExchanges: 0 };
  const callback = provider.callback();

  async function interaction(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === "login") {
      if (!current) throw new Error("test did not choose an account (signInAs)");
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: current } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    // Consent: grant whatever the client asked for, as a first-party app would.
    const accountId = details.session?.accountId;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: String(details.params.client_id) });
    if (!grant) throw new Error("grant not found");
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  handler = (req, res) => {
    if (req.url?.startsWith("/token")) state.codeExchanges++;
    if (req.url?.startsWith("/interaction/")) {
      interaction(req, res).catch((error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
      });
      return;
    }
    void callback(req, res);
  };

  return {
    issuer,
    clientId,
    clientSecret,
    provider,
    signInAs(accountId) {
      current = accountId;
    },
    get codeExchanges() {
      return state.codeExchanges;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
