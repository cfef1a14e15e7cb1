/**
 * Builds the user-manager's fastify app from a validated configuration and a KubeRest (the
 * service's own Kubernetes identity), without listening: main.ts serves it, tests run it in-process.
 */
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController, type FastifyBaseLogger } from "fastify";
import { fastifyService } from "../../lib/fastifyService.ts";
import { fastifyTimeoutOptions } from "../../lib/serverTimeouts.ts";
import type { KubeRest } from "../../lib/kubeRest.ts";
import { createLogger, type Logger } from "../../lib/logger.ts";
import { sessionVerifierFor, type SessionVerifier } from "../../lib/session.ts";
import { watchSessionRecords } from "../../lib/sessionRecords.ts";
import { requestSessions } from "../../lib/requestSessions.ts";
import { AccessReviewer } from "./auth/accessReview.ts";
import { authPlugin } from "./auth/plugin.ts";
import type { SessionAuth } from "./auth/sessionCaller.ts";
import { TokenAuthenticator } from "./auth/tokenReview.ts";
import { consoleConfig, type UserManagerConfig } from "./config.ts";
import { assignmentRoutes } from "./assignments.ts";
import { gradingRoutes } from "./gradingRoutes.ts";
import { reviewRoutes } from "./reviewRoutes.ts";
import { personTeaches } from "./auth/teaches.ts";
import { examRoutes } from "./exams.ts";
import { ArchiveTransfers, type ReachPod } from "./archiveTransfer.ts";
import { classArchiveRoutes } from "./classArchives.ts";
import { downloadRoutes, downloadSender } from "./downloads.ts";
import { uploadRoutes } from "./uploads.ts";
import { consoleRoutes } from "./console/plugin.ts";
import { CourseworkStore } from "./courseworkStore.ts";
import { bodyParsersPlugin } from "./bodyParsers.ts";
import { errorsPlugin } from "./errors.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { OPENAPI_PATH, openApiRoute, registerOpenApi } from "./openapi.ts";
import { rosterRoutes } from "./rosterImport.ts";
import { ALL_NAMESPACES, ServedNamespaces } from "../../lib/namespaces.ts";
import { UserlandStore } from "./store.ts";
import { visitRoutes } from "./visits.ts";
import { userlandRoutes } from "./userlands.ts";
import { changeSessionRecord, endSessionsOf } from "./sessionRecordWriter.ts";
import { groupsPatch } from "../../api/sessions.ts";

export const API_VERSION = "1.0.0";

export interface AppOptions {
  config: UserManagerConfig;
  /** The service's own client: it writes Userlands and asks TokenReviews and access reviews. */
  rest: KubeRest;
  /** The service's own namespace (config.namespace, resolved). */
  namespace: string;
  log?: Logger;
  metrics?: Metrics;
  now?: () => Date;
  /** How archive and upload pods are dialled (default: at their address; tests: a relay). */
  reachTransferPod?: ReachPod;
}

export async function buildApp(options: AppOptions) {
  const { config, rest, namespace } = options;
  const log = options.log ?? createLogger("user-manager");
  const metrics = options.metrics ?? createMetrics();
  const served = new ServedNamespaces(config.watchNamespaces, namespace);
  const store = new UserlandStore(rest, served, log);
  const coursework = new CourseworkStore(rest, served);
  // The teachers' console and session sign-in for the API, when the session keys are configured.
  const consoleSettings = consoleConfig(config);
  let sessions: SessionAuth | undefined;
  let verifier: SessionVerifier | undefined;
  // Session records (api/sessions.ts): ended sessions for the console, and people's groups for
  // whether they teach a Template.
  // Awaited only for the console (its ended-session check): without the right to read records the
  // service must still start and say so (main.ts); who teaches waits for the first list instead.
  const sessionRecords = watchSessionRecords(rest, namespace, log);
  const recordsSynced = sessionRecords.start();
  if (consoleSettings) {
    await recordsSynced;
    verifier = await sessionVerifierFor(consoleSettings.keys, log);
    sessions = {
      sessions: requestSessions(verifier),
      userPrefix: consoleSettings.userPrefix,
      groupPrefix: consoleSettings.groupPrefix,
      origin: consoleSettings.url.origin,
      // Checked at each cookie-signed request against a watch of the session records (issue 41
      // item 10: a list per request cost the API server as much as the request itself); a mark
      // counts within a watch event.
      ended: (session) => Promise.resolve(sessionRecords.ended(session)),
    };
  }

  const loggerInstance: FastifyBaseLogger = log;
  const app = Fastify({
    loggerInstance,
    // One line per request is logged below, with the caller; never headers (they carry tokens).
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: false,
    ...fastifyTimeoutOptions({ headersMs: config.headersTimeout, requestMs: config.requestTimeout }),
    bodyLimit: 64 * 1024,
    // An identity in /users/{user}/userland may be 256 characters, up to three times that once
    // percent-encoded (find-my-way's default of 100 answered 414 for valid identities).
    routerOptions: { maxParamLength: 1024 },
    // TypeBox validates with the route schemas: bodies are never coerced (a number is not a user
    // name), query strings are converted ("true" → true), unknown fields are errors.
  })
    .withTypeProvider<TypeBoxTypeProvider>()
    .setValidatorCompiler(TypeBoxValidatorCompiler);

  app.addHook("onClose", () => sessionRecords.stop());
  await app.register(errorsPlugin);
  await app.register(bodyParsersPlugin);
  await registerOpenApi(app, API_VERSION);

  const reviewer = new AccessReviewer({
    rest,
    namespace: served.single ?? namespace,
    ttlMs: config.authzCacheTtl,
    metrics,
  });
  await app.register(authPlugin, {
    namespaces: served.all ? [ALL_NAMESPACES] : served.names,
    locate: served.single === undefined ? (name) => store.namespaceOf(name) : undefined,
    templateNamespace: async (name) => (await store.getTemplate(name))?.metadata.namespace,
    candidateNamespaces: () => store.templateNamespaces(),
    authenticator: new TokenAuthenticator({
      rest,
      ttlMs: config.tokenCacheTtl,
      backlog: config.tokenReviewBacklog,
      audiences: config.tokenAudiences,
      metrics,
    }),
    reviewer,
    sessions,
  });

  let readyUntil = 0;
  await app.register(fastifyService, {
    metrics: { requests: metrics.requests, duration: metrics.requestDuration },
    requestLogLevel: "info",
    quietRoutes: [OPENAPI_PATH],
    logFields: (request) => ({ caller: request.caller?.username }),
    probeRouteOptions: { config: { public: true }, schema: { hide: true } },
    // Ready when the Userland API answers to the service's identity; remembered briefly so probes stay cheap.
    notReady: async () => {
      if (Date.now() < readyUntil) return undefined;
      try {
        await rest.list(store.probePath(), { query: { limit: 1 }, timeoutMs: 5_000 });
        readyUntil = Date.now() + 5_000;
        return undefined;
      } catch (error) {
        return { error: "ServiceUnavailable", message: `cannot list Userlands: ${(error as Error).message}` };
      }
    },
  });
  openApiRoute(app);

  await app.register(userlandRoutes, {
    store,
    metrics,
    verifier,
    endSessions: (user, what) =>
      endSessionsOf(rest, namespace, user, what, () => (options.now?.() ?? new Date()).getTime()),
    recordGroups: (user, groups) =>
      changeSessionRecord(rest, namespace, user, (annotations) => groupsPatch(annotations, groups)),
    ...(options.now ? { now: options.now } : {}),
  });
  await app.register(rosterRoutes, {
    store,
    metrics,
    maxRows: config.rosterMaxRows,
    maxBytes: config.rosterMaxBytes,
    concurrency: config.kubeConcurrency,
  });
  const teaches = personTeaches(reviewer, {
    userPrefix: config.sessionUserPrefix,
    groupPrefix: config.sessionGroupPrefix,
    groupsOf: async (user) => {
      await recordsSynced;
      return sessionRecords.groupsOf(user);
    },
  });
  await app.register(assignmentRoutes, {
    store,
    coursework,
    teaches,
    ...(options.now ? { now: options.now } : {}),
  });
  const transfers = new ArchiveTransfers(rest, options.reachTransferPod);
  const download = downloadSender(transfers);
  await app.register(gradingRoutes, { store, coursework, ...(options.now ? { now: options.now } : {}) });
  await app.register(reviewRoutes, { store, coursework, ...(options.now ? { now: options.now } : {}) });
  await app.register(downloadRoutes, { store, coursework, download });
  await app.register(uploadRoutes, { store, coursework, transfers });
  await app.register(classArchiveRoutes, { store, coursework, download });
  await app.register(examRoutes, { store, rest, ...(options.now ? { now: options.now } : {}) });
  await app.register(visitRoutes, {
    store,
    rest,
    reviewer,
    teaches,
    log,
    sessions: sessions && verifier ? { ...sessions, verifier } : undefined,
    ...(options.now ? { now: options.now } : {}),
  });
  if (consoleSettings)
    await app.register(consoleRoutes, {
      store,
      inFlightGauge: metrics.consoleInFlight,
      config: consoleSettings,
      rosterMaxBytes: config.rosterMaxBytes,
      concurrency: config.kubeConcurrency,
      ...(options.now ? { now: options.now } : {}),
    });
  return app;
}

export type UserManagerApp = Awaited<ReturnType<typeof buildApp>>;
