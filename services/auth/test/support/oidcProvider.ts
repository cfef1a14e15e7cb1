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
import { providerHandler } from "../../../../dev/identityProvider.ts";

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

  const chosenAccount = () => {
    if (!current) throw new Error("test did not choose an account (signInAs)");
    return current;
  };

  const handle = providerHandler(provider, chosenAccount);
  handler = (req, res) => {
    if (req.url?.startsWith("/token")) state.codeExchanges++;
    handle(req, res);
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
