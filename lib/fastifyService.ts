/**
 * What every fastify service of the platform (auth, user-manager) gets: safe default response
 * headers, one log line and optional metrics per request, and the kubelet's probes /healthz and
 * /readyz. Not /metrics: this is the port the Ingress routes, and the counters are served on the
 * service's admin listener (lib/adminServer.ts). Wrapped by fastify-plugin (no encapsulation), so
 * its hooks cover every route of the app that registers it.
 */
import type { FastifyPluginCallback, FastifyRequest, RouteShorthandOptions } from "fastify";
import fastifyPlugin from "fastify-plugin";
import type { Counter, Histogram } from "prom-client";

const PROBES = ["/healthz", "/readyz"];

export interface RequestMetrics {
  requests: Counter<"method" | "route" | "status">;
  /** Seconds. */
  duration: Histogram<"method" | "route">;
}

export interface FastifyServiceOptions {
  /** Why the service should get no traffic yet (the 503 body), or undefined when it is ready. */
  notReady: () => Promise<Record<string, unknown> | undefined>;
  /** Set on every response beside `x-content-type-options: nosniff` and a default `cache-control: no-store`. */
  headers?: Record<string, string>;
  /** Level of ordinary requests' log lines; probes (and `quietRoutes`) are logged at debug. */
  requestLogLevel: "info" | "debug";
  /** Route patterns polled by machines, logged at debug like the probes. */
  quietRoutes?: string[];
  /** Added to a request's log line. Never headers: they carry credentials. */
  logFields?: (request: FastifyRequest) => Record<string, unknown>;
  /** Counted for every response when given. */
  metrics?: RequestMetrics;
  /** Options of the probe routes, e.g. to exempt them from authentication or API docs. */
  probeRouteOptions?: RouteShorthandOptions;
}

const plugin: FastifyPluginCallback<FastifyServiceOptions> = (app, options, done) => {
  const { metrics, logFields } = options;
  const quiet = new Set([...PROBES, ...(options.quietRoutes ?? [])]);
  const headers = { "x-content-type-options": "nosniff", ...options.headers };
  const routeOptions = options.probeRouteOptions ?? {};

  app.addHook("onSend", async (request, reply, payload) => {
    if (!reply.hasHeader("cache-control")) reply.header("cache-control", "no-store");
    // Answered before the body arrived (401, 403, 413): close the connection after the answer
    // instead of reading, and throwing away, whatever the client still sends (forever, for an
    // endless chunked body).
    if (!request.raw.complete) reply.header("connection", "close");
    reply.headers(headers);
    return payload;
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const status = reply.statusCode;
    metrics?.requests.inc({ method: request.method, route, status: String(status) });
    metrics?.duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    // The path without its query: callbacks' query strings carry authorization codes.
    const entry = {
      method: request.method,
      route,
      path: request.url.split("?")[0],
      status,
      ms: Math.round(reply.elapsedTime),
      ...logFields?.(request),
    };
    const level = quiet.has(route) ? "debug" : options.requestLogLevel;
    request.log[level](entry, "request");
  });

  app.get("/healthz", routeOptions, () => ({ status: "ok" }));
  app.get("/readyz", routeOptions, async (_request, reply) => {
    const why = await options.notReady();
    if (why) return reply.code(503).send(why);
    return { status: "ready" };
  });
  done();
};

/** The plugin; `app.register(fastifyService, options)`. */
export const fastifyService = fastifyPlugin(plugin, { name: "userland-service", fastify: "5.x" });
