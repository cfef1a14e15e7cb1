/**
 * Builds the user-manager's fastify app from a validated configuration and a KubeRest (the
 * service's own Kubernetes identity), without listening: main.ts serves it, tests run it in-process.
 */
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController, type FastifyBaseLogger } from "fastify";
import type { KubeRest } from "../../lib/kubeRest.ts";
import { createLogger, type Logger } from "../../lib/logger.ts";
import { AccessReviewer, TokenAuthenticator, installAuth } from "./auth.ts";
import type { UserManagerConfig } from "./config.ts";
import { installErrorHandlers } from "./errors.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { OPENAPI_PATH, openApiRoute, registerOpenApi } from "./openapi.ts";
import { rosterRoutes } from "./rosterImport.ts";
import { UserlandStore } from "./store.ts";
import { userlandRoutes } from "./userlands.ts";

export const API_VERSION = "1.0.0";

export interface AppOptions {
  config: UserManagerConfig;
  /** The service's own client: it writes Userlands and asks TokenReviews and access reviews. */
  rest: KubeRest;
  /** The namespace whose Userlands are managed (config.namespace, resolved). */
  namespace: string;
  log?: Logger;
  metrics?: Metrics;
  now?: () => Date;
}

const PROBES = new Set(["/healthz", "/readyz", "/metrics"]);

export async function buildApp(options: AppOptions) {
  const { config, rest, namespace } = options;
  const log = options.log ?? createLogger("user-manager");
  const metrics = options.metrics ?? createMetrics();
  const store = new UserlandStore(rest, namespace);

  const loggerInstance: FastifyBaseLogger = log;
  const app = Fastify({
    loggerInstance,
    // One line per request is logged below, with the caller; never headers (they carry tokens).
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: false,
    bodyLimit: 64 * 1024,
    // An identity in /users/{user}/userland may be 256 characters, up to three times that once
    // percent-encoded (find-my-way's default of 100 answered 414 for valid identities).
    routerOptions: { maxParamLength: 1024 },
    // TypeBox validates with the route schemas: bodies are never coerced (a number is not a user
    // name), query strings are converted ("true" → true), unknown fields are errors.
  })
    .withTypeProvider<TypeBoxTypeProvider>()
    .setValidatorCompiler(TypeBoxValidatorCompiler);

  // Only JSON (and CSV on the roster route): anything else is a clear 415, not an unvalidated string.
  app.removeContentTypeParser("text/plain");
  // An empty JSON body is no body (clients often send the header on POST .../start anyway); the
  // routes that need a body then fail validation with a 400 naming it.
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    void json(request, text, done);
  });
  installErrorHandlers(app);
  await registerOpenApi(app, API_VERSION);

  installAuth(app, {
    namespace,
    authenticator: new TokenAuthenticator({
      rest,
      ttlMs: config.tokenCacheTtl,
      audiences: config.tokenAudiences,
      metrics,
    }),
    reviewer: new AccessReviewer({ rest, namespace, ttlMs: config.authzCacheTtl, metrics }),
  });

  app.addHook("onSend", async (_request, reply, payload) => {
    reply.header("x-content-type-options", "nosniff");
    if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
    return payload;
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const status = reply.statusCode;
    metrics.requests.inc({ method: request.method, route, status: String(status) });
    metrics.requestDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    const entry = {
      method: request.method,
      route,
      path: request.url.split("?")[0],
      status,
      ms: Math.round(reply.elapsedTime),
      caller: request.caller?.username,
    };
    if (PROBES.has(route) || route === OPENAPI_PATH) request.log.debug(entry, "request");
    else request.log.info(entry, "request");
  });

  let readyUntil = 0;
  app.get("/healthz", { config: { public: true }, schema: { hide: true } }, () => ({ status: "ok" }));
  app.get("/readyz", { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    // Ready when the Userland API answers to the service's identity; remembered briefly so probes stay cheap.
    if (Date.now() < readyUntil) return { status: "ready" };
    try {
      await rest.list(store.userlandPath(), { query: { limit: 1 }, timeoutMs: 5_000 });
      readyUntil = Date.now() + 5_000;
      return { status: "ready" };
    } catch (error) {
      return reply
        .code(503)
        .send({ error: "ServiceUnavailable", message: `cannot list Userlands: ${(error as Error).message}` });
    }
  });
  app.get("/metrics", { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  openApiRoute(app);

  await app.register(userlandRoutes, { store, metrics, ...(options.now ? { now: options.now } : {}) });
  await app.register(rosterRoutes, {
    store,
    metrics,
    maxRows: config.rosterMaxRows,
    maxBytes: config.rosterMaxBytes,
    concurrency: config.kubeConcurrency,
  });
  return app;
}

export type UserManagerApp = Awaited<ReturnType<typeof buildApp>>;
