/**
 * Builds the auth service's fastify app from a validated configuration, without listening, so
 * main.ts serves it and tests run it in-process.
 */
import fastifyCookie from "@fastify/cookie";
import fastifyFormbody from "@fastify/formbody";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController } from "fastify";
import { ConfigError } from "../../lib/config.ts";
import { formFromOwnSite } from "../../lib/formOrigin.ts";
import { fastifyService } from "../../lib/fastifyService.ts";
import { pageSecurityHeaders } from "../../lib/pageHeaders.ts";
import { fastifyTimeoutOptions } from "../../lib/serverTimeouts.ts";
import { watchSessionRecords } from "../../lib/sessionRecords.ts";
import type { KubeConnection } from "../../lib/kubeConnection.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import type { Logger } from "../../lib/logger.ts";
import {
  createSessionSigner,
  createSessionVerifier,
  loadSigningKeys,
  publicJwks,
  type SigningKeys,
} from "../../lib/session.ts";
import type { AuthConfig } from "./config.ts";
import { endpoint, type AuthContext } from "./context.ts";
import { createGitHubClient } from "./github.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { createOidcClient } from "./oidc.ts";
import { createProvisioner } from "./provision.ts";
import { createSignOut } from "./signOut.ts";
import { createGroupsReport } from "./groupsReport.ts";
import { messagePage } from "./pages.ts";
import { loginRoutes, sendPage } from "./routes.ts";
import { sessionRoutes } from "./sessionRoutes.ts";
import { createTransactionSealer } from "./transaction.ts";

export interface AppOptions {
  log: Logger;
  metrics?: Metrics;
  /** Where the API server is, and the own namespace: needed with AUTH_ENDED_SESSIONS. */
  kube?: { kc: KubeConnection; namespace: string } | undefined;
}

async function signingKeys(config: AuthConfig): Promise<SigningKeys> {
  try {
    return await loadSigningKeys(config.sessionKeysFile);
  } catch (error) {
    throw new ConfigError("auth", [
      `AUTH_SESSION_KEYS_FILE=${JSON.stringify(config.sessionKeysFile)} is unusable: ${(error as Error).message} (expected EC P-256 private keys as PEM, e.g. from openssl ecparam -name prime256v1 -genkey -noout, or a private JWKS)`,
    ]);
  }
}

function endedSessionsFor(config: AuthConfig, options: AppOptions) {
  if (!config.endedSessions) return undefined;
  if (!options.kube)
    throw new ConfigError("auth", [
      "AUTH_ENDED_SESSIONS=true needs the Kubernetes API: run in a pod whose ServiceAccount may list and watch configmaps in its namespace, or set KUBECONFIG",
    ]);
  const { kc, namespace } = options.kube;
  return watchSessionRecords(new KubeRest(kc, "userland-auth"), namespace, options.log);
}

export async function buildApp(config: AuthConfig, options: AppOptions) {
  const { log } = options;
  const keys = await signingKeys(config);
  const jwks = publicJwks(keys);
  const metrics = options.metrics ?? createMetrics();
  const ctx: AuthContext = {
    config,
    log,
    metrics,
    jwks,
    signer: createSessionSigner(keys),
    verifier: createSessionVerifier(jwks),
    transactions: createTransactionSealer(keys, config.loginTimeoutSeconds),
    oidc: config.oidc && createOidcClient(config.oidc, endpoint(config, "callback/oidc")),
    github: config.github && createGitHubClient(config.github, endpoint(config, "callback/github")),
    provisioner: config.provision && createProvisioner(config.provision, log, metrics),
    signOut: config.signOut && createSignOut(config.signOut, log, metrics),
    groupsReport: config.signOut && createGroupsReport(config.signOut, log),
    endedSessions: endedSessionsFor(config, options),
  };
  // Not awaited: /readyz says "waiting" and the session endpoints answer 503 until the first list.
  ctx.endedSessions
    ?.start()
    .catch((error: unknown) => log.error({ err: error }, "the Userlands cache did not sync"));

  const app = Fastify({
    loggerInstance: log,
    // Logged by fastifyService without query strings: callbacks carry authorization codes.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: false,
    ...fastifyTimeoutOptions(config.timeouts),
  }).withTypeProvider<TypeBoxTypeProvider>();

  await app.register(fastifyCookie);
  await app.register(fastifyFormbody);

  await app.register(fastifyService, {
    // Its sign-out form ends at whatever address rd names (an environment's signed-out page, the
    // provider's end-session endpoint), so form-action cannot be restricted.
    headers: pageSecurityHeaders({ formTargets: "unrestricted" }),
    requestLogLevel: "debug",
    // Ready once the OIDC provider's metadata is known; GitHub needs no discovery.
    notReady: async () => {
      if (ctx.endedSessions && !ctx.endedSessions.synced())
        return { status: "waiting for the Userlands cache (ended sessions)" };
      return ctx.oidc && !(await ctx.oidc.ready())
        ? { status: "waiting for the OpenID Connect provider" }
        : undefined;
    },
  });
  app.addHook("onClose", async () => ctx.endedSessions?.stop());

  // Every state-changing form (today the sign-out) must come from the auth service's own pages:
  // another site's form must not sign a student out (or in) with their cookies.
  app.addHook("onRequest", async (request, reply) => {
    if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return;
    if (formFromOwnSite(request.headers, (origin) => origin === config.publicUrl.origin)) return;
    return sendPage(
      reply,
      403,
      messagePage("Not allowed", "This form must be sent from this site's own page."),
    );
  });
  await app.register(sessionRoutes, { ctx });
  await app.register(loginRoutes, { ctx });
  return app;
}

export type AuthApp = Awaited<ReturnType<typeof buildApp>>;
