/**
 * OpenID Connect login with openid-client: discovery, authorization code flow with PKCE (S256),
 * state and nonce; openid-client validates the ID token (signature, issuer, audience, expiry,
 * nonce). Discovery is lazy and retried, so an identity provider that is down when the service
 * starts only makes it unready, not crash.
 */
import * as client from "openid-client";
import type { LoginTransaction } from "./transaction.ts";

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  scopes: readonly string[];
  tokenAuthMethod: "client_secret_basic" | "client_secret_post";
  /** Permit an http:// issuer (local development and tests only). */
  allowHttp: boolean;
  /** Also read claims from the UserInfo endpoint (many providers put e-mail and groups only there). */
  userinfo: boolean;
}

export type Claims = Record<string, unknown>;

export interface OidcClient {
  /** Discovers the provider if not done yet; false (and retried next time) if it is unreachable. */
  ready(): Promise<boolean>;
  authorizationUrl(tx: {
    state: string;
    nonce: string;
    verifier: string;
    forceLogin?: boolean;
  }): Promise<URL>;
  /** Exchanges the code in `query` and returns the validated claims; throws on any failure. */
  finish(query: URLSearchParams, tx: LoginTransaction): Promise<Claims>;
}

const TIMEOUT_SECONDS = 10;

export function createOidcClient(settings: OidcSettings, redirectUri: URL): OidcClient {
  let discovered: Promise<client.Configuration> | undefined;

  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(
        settings.issuer,
        settings.clientId,
        { client_secret: settings.clientSecret, redirect_uris: [redirectUri.href], response_types: ["code"] },
        settings.tokenAuthMethod === "client_secret_basic"
          ? client.ClientSecretBasic(settings.clientSecret)
          : client.ClientSecretPost(settings.clientSecret),
        {
          timeout: TIMEOUT_SECONDS,
          ...(settings.allowHttp ? { execute: [client.allowInsecureRequests] } : {}),
        },
      )
      .then((config) => {
        config.timeout = TIMEOUT_SECONDS;
        return config;
      })
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  }

  return {
    async ready() {
      try {
        await configuration();
        return true;
      } catch {
        return false;
      }
    },

    async authorizationUrl(tx) {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri.href,
        response_type: "code",
        scope: settings.scopes.join(" "),
        state: tx.state,
        nonce: tx.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(tx.verifier),
        code_challenge_method: "S256",
        ...(tx.forceLogin ? { prompt: "login" } : {}),
      });
    },

    async finish(query, tx) {
      const config = await configuration();
      // openid-client takes the redirect_uri from this URL, so it must be the public callback URL.
      const currentUrl = new URL(redirectUri);
      currentUrl.search = query.toString();
      const tokens = await client.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: tx.verifier,
        expectedState: tx.state,
        expectedNonce: tx.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new Error("the token response has no ID token");
      const claims: Claims = { ...idToken };
      if (settings.userinfo && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
        // The ID token's subject must match, so userinfo cannot speak for someone else; its claims
        // only fill gaps, the signed ID token wins where both say something.
        const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
        for (const [k, v] of Object.entries(info)) if (!(k in claims)) claims[k] = v;
      }
      return claims;
    },
  };
}

/** A message for the person when `finish` failed: the provider's own error if it sent one. */
export function describeOidcError(error: unknown): string {
  const e = error as { error?: unknown; error_description?: unknown; message?: unknown };
  if (typeof e.error === "string") {
    return typeof e.error_description === "string" ? `${e.error}: ${e.error_description}` : e.error;
  }
  return "the identity provider's answer could not be verified";
}
