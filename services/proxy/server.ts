/**
 * The proxy's HTTP servers: one for student traffic (HTTP and WebSocket, forwarded with
 * http-proxy-3) and one admin server for /healthz, /readyz and /metrics, which students never
 * reach. `createProxyServer` takes every dependency as an argument, so tests run it in-process on
 * 127.0.0.1:0 against the real control plane; app.ts wires it for production.
 *
 * Per request: Host → Template; session cookie → user; (user, Template) → Userland from the
 * informer index; Userland's Service → URL through the resolver seam. Nothing in the request but
 * the verified session chooses whose environment is reached.
 */
import {
  createServer,
  Agent,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  type ClientRequest,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ProxyServer } from "http-proxy-3";
import { UserlandAnnotations, type Userland } from "../../api/v1alpha1/index.ts";
import type { Logger } from "../../lib/logger.ts";
import { SESSION_COOKIE, type Session } from "../../lib/session.ts";
import type { ProxyConfig } from "./config.ts";
import { clientInfo, prepareUpstreamHeaders, type ClientInfo } from "./headers.ts";
import { statusClass, type ProxyMetrics, type RouteOutcome, type UpstreamError } from "./metrics.ts";
import {
  failedPage,
  missingPage,
  pageHeaders,
  simplePage,
  startingPage,
  stoppedPage,
  unknownHostPage,
  upstreamErrorPage,
  type EnvironmentInfo,
  type Page,
} from "./pages.ts";
import type { UpstreamResolver } from "./resolver.ts";
import { templateForHost, type ClusterView } from "./routing.ts";
import { loginLocation, wantsLoginRedirect, type RequestSessions } from "./session.ts";
import type { UserManagerClient } from "../../lib/userManagerClient.ts";

export type ProxyServerConfig = Pick<
  ProxyConfig,
  | "loginUrl"
  | "hostTemplates"
  | "baseDomain"
  | "defaultTemplate"
  | "trustedProxies"
  | "allowedOrigins"
  | "upstreamTimeoutMs"
  | "connectTimeoutMs"
  | "websocketIdleTimeoutMs"
  | "startOnAccess"
  | "accessLog"
>;

export interface ProxyDeps {
  config: ProxyServerConfig;
  cluster: ClusterView;
  sessions: RequestSessions;
  resolver: UpstreamResolver;
  activity: { touch(namespace: string, name: string, now?: number): void };
  metrics: ProxyMetrics;
  log: Logger;
  userManager?: UserManagerClient | undefined;
}

export interface RunningProxy {
  server: Server;
  admin: Server;
  /** Listens on both servers; resolves with their base URLs. */
  listen(options: {
    host: string;
    port: number;
    adminHost: string;
    adminPort: number;
  }): Promise<{ url: string; adminUrl: string }>;
  /** Stops accepting, closes WebSockets, lets in-flight requests finish for up to `graceMs`. */
  close(graceMs?: number): Promise<void>;
  /** Requests and WebSockets in flight (for tests and shutdown). */
  inFlight(): { requests: number; websockets: number };
}

export type EnvironmentState = "missing" | "ready" | "starting" | "stopped" | "failed";

/** What a Userland means for its student right now. */
export function environmentState(userland: Userland | undefined): EnvironmentState {
  if (!userland || userland.metadata.deletionTimestamp) return "missing";
  if (userland.spec.enabled === false) return "stopped";
  const status = userland.status;
  // A status written for an older spec (e.g. before a Template switch) may name an old Service.
  const current =
    status?.observedGeneration === undefined || status.observedGeneration === userland.metadata.generation;
  if (status?.phase === "Ready" && status.service && current) return "ready";
  if (status?.phase === "Failed" && current) return "failed";
  return "starting";
}

interface RequestContext {
  kind: "http" | "websocket";
  start: number;
  /** The client's address, read at the start: `req.socket` is null once the connection is gone. */
  peer: string | undefined;
  outcome?: RouteOutcome;
  user?: string;
  template?: string;
  userland?: string;
  upstreamStart?: number;
  upstreamError?: UpstreamError;
  status?: number;
}

class UpstreamTimeout extends Error {
  readonly code = "EUPSTREAMTIMEOUT";
}

function classify(error: unknown): UpstreamError {
  const code = (error as { code?: string } | undefined)?.code;
  if (code === "EUPSTREAMTIMEOUT" || code === "ECONNECT_TIMEOUT" || code === "ETIMEDOUT") return "timeout";
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EHOSTUNREACH")
    return "refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "reset";
  return "other";
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** A local path to return to after a form post (never another site: "//x" and "/\x" are refused). */
export function safeReturnPath(value: unknown): string {
  if (
    typeof value !== "string" ||
    !value.startsWith("/") ||
    value.startsWith("//") ||
    value.startsWith("/\\")
  )
    return "/";
  if (value.length > 2048 || [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
    return "/";
  return value;
}

function prefersJson(req: IncomingMessage): boolean {
  const accept = req.headers.accept ?? "";
  return /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);
}

/** The request's Origin is this host (any scheme: TLS may end at an ingress) or explicitly allowed. */
export function originAllowed(
  origin: string | undefined,
  client: ClientInfo,
  allowed: readonly string[],
): boolean {
  // Browsers always send Origin on WebSocket handshakes; a client without one is not a browser
  // page, so cross-site WebSocket hijacking (what this check stops) does not apply.
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (allowed.includes(url.origin)) return true;
  return (url.protocol === "https:" || url.protocol === "http:") && url.host === client.host;
}

class FormTooLarge extends Error {}

async function readForm(req: IncomingMessage, limit = 4096): Promise<URLSearchParams> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new FormTooLarge("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

export function createProxyServer(deps: ProxyDeps): RunningProxy {
  const { config, cluster, sessions, resolver, activity, metrics, log } = deps;
  const routes = {
    hostTemplates: config.hostTemplates,
    baseDomain: config.baseDomain,
    defaultTemplate: config.defaultTemplate,
  };
  // Pooled keep-alive connections to environments; idle ones close after 30 s (sooner when the
  // upstream announces a shorter Keep-Alive timeout), so a pool never outlives an environment long.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 512,
    maxFreeSockets: 64,
    timeout: 30_000,
    scheduling: "lifo",
  });
  const proxy = new ProxyServer({
    agent,
    xfwd: false,
    changeOrigin: false,
    connectTimeout: config.connectTimeoutMs,
  });
  const contexts = new WeakMap<IncomingMessage, RequestContext>();
  const websockets = new Set<Socket>();
  const startRequested = new Map<string, number>();
  let inFlightRequests = 0;
  let closing = false;

  proxy.on("error", (error, req) =>
    log.warn({ err: error.message, url: req.url }, "proxy error without a handler"),
  );

  // Every outgoing request (Expect was removed from the headers, so this always fires).
  proxy.on("proxyReq", (proxyReq: ClientRequest, req: IncomingMessage) => {
    const ctx = contexts.get(req);
    if (ctx) ctx.upstreamStart = performance.now();
    proxyReq.setTimeout(config.upstreamTimeoutMs, () =>
      proxyReq.destroy(new UpstreamTimeout("upstream timed out")),
    );
  });

  proxy.on("proxyRes", (proxyRes: IncomingMessage, req: IncomingMessage) => {
    const ctx = contexts.get(req);
    if (ctx?.upstreamStart !== undefined)
      metrics.upstreamLatency.observe({ kind: "http" }, (performance.now() - ctx.upstreamStart) / 1000);
    // An environment must not replace or clear the platform's session cookie.
    const setCookie = proxyRes.headers["set-cookie"];
    if (setCookie) {
      const kept = setCookie.filter((c) => c.split("=", 1)[0]?.trim().toLowerCase() !== SESSION_COOKIE);
      if (kept.length !== setCookie.length) proxyRes.headers["set-cookie"] = kept;
    }
  });

  proxy.on("proxyReqWs", (proxyReq: ClientRequest, req: IncomingMessage, socket: Socket) => {
    const ctx = contexts.get(req);
    if (ctx) ctx.upstreamStart = performance.now();
    let upgraded = false;
    proxyReq.setTimeout(config.upstreamTimeoutMs, () => {
      if (!upgraded) proxyReq.destroy(new UpstreamTimeout("upstream timed out"));
    });
    proxyReq.on("upgrade", (_res: IncomingMessage, proxySocket: Socket) => {
      upgraded = true;
      if (ctx?.upstreamStart !== undefined)
        metrics.upstreamLatency.observe(
          { kind: "websocket" },
          (performance.now() - ctx.upstreamStart) / 1000,
        );
      if (ctx) {
        ctx.status = 101;
        ctx.outcome = "proxied";
      }
      websockets.add(socket);
      metrics.openWebSockets.inc();
      socket.once("close", () => {
        websockets.delete(socket);
        metrics.openWebSockets.dec();
        proxySocket.destroy();
      });
      proxySocket.once("close", () => socket.destroy());
      // http-proxy-3 clears socket timeouts right after this listener; set ours after it. One
      // timer covers both directions: a socket's timer restarts on reads and on writes.
      queueMicrotask(() =>
        proxySocket.setTimeout(config.websocketIdleTimeoutMs, () => {
          log.info({ user: ctx?.user, userland: ctx?.userland }, "closing idle WebSocket");
          proxySocket.destroy();
          socket.destroy();
        }),
      );
      const [namespace, name] = (ctx?.userland ?? "/").split("/") as [string, string];
      let last = 0;
      const touch = () => {
        const now = Date.now();
        if (now - last < 1000) return;
        last = now;
        activity.touch(namespace, name, now);
      };
      socket.on("data", touch);
      proxySocket.on("data", touch);
    });
  });

  function environmentInfo(template: string, user: string): EnvironmentInfo {
    const t = cluster.getTemplate(template);
    return { template, user, title: t?.spec.displayName ?? template };
  }

  function finish(ctx: RequestContext, req: IncomingMessage, status: number): void {
    ctx.status = status;
    metrics.requests.inc({ kind: ctx.kind, status_class: statusClass(status) });
    metrics.routes.inc({ kind: ctx.kind, outcome: ctx.outcome ?? "bad_request" });
    if (!config.accessLog) return;
    const path = (req.url ?? "").split("?", 1)[0];
    log.info(
      {
        kind: ctx.kind,
        method: req.method,
        host: req.headers.host,
        path,
        status,
        ms: Math.round((performance.now() - ctx.start) * 10) / 10,
        user: ctx.user,
        template: ctx.template,
        userland: ctx.userland,
        outcome: ctx.outcome,
        upstreamError: ctx.upstreamError,
        peer: ctx.peer,
      },
      "request",
    );
  }

  function sendPage(req: IncomingMessage, res: ServerResponse, page: Page): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const json = prefersJson(req);
    const body = json ? JSON.stringify(page.json) : page.body;
    const headers = json
      ? { "content-type": "application/json", "cache-control": "no-store" }
      : pageHeaders(page.script === true);
    res.writeHead(page.status, { ...headers, ...page.headers, "content-length": Buffer.byteLength(body) });
    res.end(req.method === "HEAD" ? undefined : body);
  }

  function sendJson(res: ServerResponse, status: number, value: unknown): void {
    const body = JSON.stringify(value);
    res.writeHead(status, {
      "content-type": "application/json",
      "cache-control": "no-store",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  }

  function refuseSession(req: IncomingMessage, res: ServerResponse, client: ClientInfo): void {
    if (wantsLoginRedirect(req)) {
      res.writeHead(302, {
        location: loginLocation(config.loginUrl, client, req.url ?? "/"),
        "cache-control": "no-store",
        "content-length": 0,
      });
      res.end();
      return;
    }
    res.writeHead(401, {
      "content-type": "application/json",
      "cache-control": "no-store",
      "www-authenticate": 'Cookie realm="userland"',
    });
    res.end(JSON.stringify({ error: "not signed in", login: config.loginUrl.href }));
  }

  /** Starts a stopped environment (at most once a minute per Userland); true when a start was sent or is pending. */
  async function requestStart(userland: Userland, ctx: RequestContext): Promise<boolean> {
    const { namespace = "", name = "" } = userland.metadata;
    const key = `${namespace}/${name}`;
    const now = Date.now();
    const last = startRequested.get(key);
    if (last !== undefined && now - last < 60_000) return true;
    if (!deps.userManager) return false;
    startRequested.set(key, now);
    if (startRequested.size > 10_000) startRequested.clear();
    try {
      await deps.userManager.start(name);
      metrics.starts.inc({ result: "success" });
      log.info({ user: ctx.user, userland: key }, "start requested");
      return true;
    } catch (error) {
      startRequested.delete(key);
      metrics.starts.inc({ result: "error" });
      log.warn({ user: ctx.user, userland: key, err: (error as Error).message }, "start request failed");
      return false;
    }
  }

  function recentlyStarted(userland: Userland): boolean {
    const last = startRequested.get(`${userland.metadata.namespace ?? ""}/${userland.metadata.name ?? ""}`);
    return last !== undefined && Date.now() - last < 60_000;
  }

  /** The page for a Userland that is not ready, or undefined when it is. */
  async function pageFor(
    userland: Userland | undefined,
    env: EnvironmentInfo,
    ctx: RequestContext,
    path: string,
  ): Promise<Page | undefined> {
    const state = environmentState(userland);
    ctx.outcome = state === "ready" ? "proxied" : state === "missing" ? "no_environment" : state;
    if (!userland || state === "missing") return missingPage(env);
    if (state === "ready") return undefined;
    if (state === "failed") return failedPage(env, userland.status?.message);
    if (state === "stopped") {
      if (recentlyStarted(userland) || (config.startOnAccess && (await requestStart(userland, ctx)))) {
        ctx.outcome = "starting";
        return startingPage(env, "Starting", "Start requested");
      }
      return stoppedPage(env, {
        canStart: deps.userManager !== undefined,
        returnPath: path,
        reason: userland.metadata.annotations?.[UserlandAnnotations.stoppedReason],
      });
    }
    return startingPage(env, userland.status?.phase ?? "Pending", userland.status?.message);
  }

  async function ownEndpoint(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    pathname: string,
    session: Session,
    template: string,
    client: ClientInfo,
  ) {
    ctx.outcome = "own_endpoint";
    const userland = cluster.findUserland(session.user, template);
    if (userland) ctx.userland = `${userland.metadata.namespace ?? ""}/${userland.metadata.name ?? ""}`;
    if (pathname === "/_userland/status" && (req.method === "GET" || req.method === "HEAD")) {
      const state = environmentState(userland);
      sendJson(res, 200, {
        state: state === "stopped" && userland && recentlyStarted(userland) ? "starting" : state,
        template,
        user: session.user,
        phase: userland?.status?.phase ?? (userland ? "Pending" : undefined),
        message: userland?.status?.message ?? "",
      });
      return;
    }
    if (pathname === "/_userland/start" && req.method === "POST") {
      // Forms from other sites must not start environments: browsers send Origin on every POST.
      if (!originAllowed(req.headers.origin, client, config.allowedOrigins)) {
        ctx.outcome = "forbidden_origin";
        sendPage(req, res, simplePage(403, "Not allowed", "This form must be sent from this site."));
        return;
      }
      let form: URLSearchParams;
      try {
        form = await readForm(req);
      } catch (error) {
        sendPage(
          req,
          res,
          error instanceof FormTooLarge
            ? simplePage(413, "Form too large", "This form must be smaller than 4 KiB.")
            : simplePage(400, "Bad request", "The form could not be read."),
        );
        return;
      }
      const env = environmentInfo(template, session.user);
      if (!userland || environmentState(userland) === "missing") {
        sendPage(req, res, missingPage(env));
        return;
      }
      if (environmentState(userland) === "stopped" && !(await requestStart(userland, ctx))) {
        sendPage(
          req,
          res,
          simplePage(
            502,
            "Could not start your environment",
            "The user-management service did not accept the request. Try again in a minute.",
          ),
        );
        return;
      }
      if (prefersJson(req)) {
        sendJson(res, 202, { state: "starting", template });
        return;
      }
      res.writeHead(303, {
        location: safeReturnPath(form.get("rd")),
        "cache-control": "no-store",
        "content-length": 0,
      });
      res.end();
      return;
    }
    sendPage(
      req,
      res,
      simplePage(404, "Not found", "This address belongs to the platform, not to your environment."),
    );
  }

  /** Everything before forwarding, shared by HTTP and WebSocket requests. */
  interface Routed {
    session: Session;
    template: string;
    client: ClientInfo;
    pathname: string;
  }

  async function route(
    req: IncomingMessage,
    ctx: RequestContext,
    refuse: (page: Page | "session", client: ClientInfo) => void,
  ): Promise<Routed | undefined> {
    const url = req.url ?? "";
    // Origin-form only: an absolute-form target ("GET http://other/ HTTP/1.1") would let the
    // request line and the Host header disagree about where the request goes.
    if (!url.startsWith("/")) {
      ctx.outcome = "bad_request";
      refuse(
        simplePage(400, "Bad request", "The request target must be a path."),
        clientInfo(req, config.trustedProxies),
      );
      return undefined;
    }
    const client = clientInfo(req, config.trustedProxies);
    let pathname: string;
    try {
      // Prefixing keeps "//x/y" a path (as http-proxy-3 forwards it), not a host.
      pathname = new URL(`http://proxy.invalid${url}`).pathname;
    } catch {
      ctx.outcome = "bad_request";
      refuse(simplePage(400, "Bad request", "The request target is not a valid path."), client);
      return undefined;
    }
    const template = templateForHost(client.host, routes);
    if (!template) {
      ctx.outcome = "unknown_host";
      refuse(unknownHostPage(client.host), client);
      return undefined;
    }
    ctx.template = template;
    const session = await sessions.fromRequest(req);
    if (!session) {
      ctx.outcome = "no_session";
      refuse("session", client);
      return undefined;
    }
    ctx.user = session.user;
    if (!cluster.synced()) {
      ctx.outcome = "starting";
      refuse(simplePage(503, "Starting up", "The platform is starting; try again in a few seconds."), client);
      return undefined;
    }
    return { session, template, client, pathname };
  }

  async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ctx: RequestContext = { kind: "http", start: performance.now(), peer: req.socket.remoteAddress };
    contexts.set(req, ctx);
    inFlightRequests++;
    if (closing) res.shouldKeepAlive = false;
    res.once("close", () => {
      inFlightRequests--;
      finish(ctx, req, res.statusCode);
    });
    const routed = await route(req, ctx, (page, client) =>
      page === "session" ? refuseSession(req, res, client) : sendPage(req, res, page),
    );
    if (!routed) return;
    const { session, template, client, pathname } = routed;
    if (pathname === "/_userland" || pathname.startsWith("/_userland/")) {
      await ownEndpoint(req, res, ctx, pathname, session, template, client);
      return;
    }
    const userland = cluster.findUserland(session.user, template);
    const env = environmentInfo(template, session.user);
    if (userland) ctx.userland = `${userland.metadata.namespace ?? ""}/${userland.metadata.name ?? ""}`;
    const page = await pageFor(userland, env, ctx, req.url ?? "/");
    if (page || !userland) {
      sendPage(req, res, page ?? missingPage(env));
      return;
    }
    const { namespace = "", name = "" } = userland.metadata;
    const service = userland.status?.service;
    const target = service && resolver.resolve(namespace, service.name, service.port);
    if (!target) {
      ctx.outcome = "unresolved";
      sendPage(req, res, upstreamErrorPage(502, env, req.url ?? "/"));
      return;
    }
    prepareUpstreamHeaders(req.headers, session.user, client, SESSION_COOKIE);
    activity.touch(namespace, name);
    proxy.web(req, res, { target }, (error: Error) => {
      const kind = classify(error);
      ctx.upstreamError = kind;
      metrics.upstreamErrors.inc({ kind: "http", error: kind });
      // Not req.destroyed: a request whose body was fully read is destroyed already.
      const socket = req.socket as Socket | null;
      if (res.destroyed || res.writableEnded || !socket || socket.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      log.warn(
        { userland: ctx.userland, err: error.message, code: (error as { code?: string }).code },
        "upstream failed",
      );
      sendPage(req, res, upstreamErrorPage(kind === "timeout" ? 504 : 502, env, req.url ?? "/"));
    });
  }

  function refuseUpgrade(
    socket: Socket,
    status: number,
    body: string,
    extra: Record<string, string> = {},
  ): void {
    if (socket.destroyed) return;
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      connection: "close",
      ...extra,
    };
    const head = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n");
    socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ""}\r\n${head}\r\n\r\n${body}`);
  }

  async function handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    const ctx: RequestContext = {
      kind: "websocket",
      start: performance.now(),
      peer: req.socket.remoteAddress,
    };
    contexts.set(req, ctx);
    socket.on("error", () => socket.destroy());
    let done = false;
    const end = (status: number) => {
      if (done) return;
      done = true;
      finish(ctx, req, status);
    };
    const refuse = (status: number, value: unknown) => {
      refuseUpgrade(socket, status, JSON.stringify(value));
      end(status);
    };
    if (closing) return refuse(503, { error: "shutting down" });
    if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket") {
      ctx.outcome = "bad_request";
      return refuse(400, { error: "only WebSocket upgrades are supported" });
    }
    const routed = await route(req, ctx, (page) =>
      page === "session" ? refuse(401, { error: "not signed in" }) : refuse(page.status, page.json),
    );
    if (!routed) return;
    const { session, template, client, pathname } = routed;
    if (!originAllowed(req.headers.origin, client, config.allowedOrigins)) {
      ctx.outcome = "forbidden_origin";
      return refuse(403, { error: "WebSocket from a foreign origin" });
    }
    if (pathname === "/_userland" || pathname.startsWith("/_userland/")) {
      ctx.outcome = "own_endpoint";
      return refuse(404, { error: "not found" });
    }
    const userland = cluster.findUserland(session.user, template);
    if (userland) ctx.userland = `${userland.metadata.namespace ?? ""}/${userland.metadata.name ?? ""}`;
    const page = await pageFor(userland, environmentInfo(template, session.user), ctx, "/");
    if (page || !userland) return refuse(page?.status ?? 404, page?.json ?? { state: "missing" });
    const { namespace = "", name = "" } = userland.metadata;
    const service = userland.status?.service;
    const target = service && resolver.resolve(namespace, service.name, service.port);
    if (!target) {
      ctx.outcome = "unresolved";
      return refuse(502, { state: "unreachable" });
    }
    prepareUpstreamHeaders(req.headers, session.user, client, SESSION_COOKIE);
    activity.touch(namespace, name);
    socket.once("close", () => end(ctx.status ?? 499));
    // No pooled agent: an upgraded connection never returns to a pool.
    proxy.ws(req, socket, head, { target, agent: false }, (error: Error) => {
      const kind = classify(error);
      ctx.upstreamError = kind;
      metrics.upstreamErrors.inc({ kind: "websocket", error: kind });
      if (ctx.status === 101) return;
      refuse(kind === "timeout" ? 504 : 502, { state: kind === "timeout" ? "timeout" : "unreachable" });
    });
  }

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    handleRequest(req, res).catch((error: unknown) => {
      log.error({ err: error }, "request failed");
      if (!res.headersSent)
        sendPage(req, res, simplePage(500, "Something went wrong", "The proxy failed; try again."));
      else res.destroy();
    });
  });
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    handleUpgrade(req, socket, head).catch((error: unknown) => {
      log.error({ err: error }, "upgrade failed");
      socket.destroy();
    });
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    // Too many or too large headers (request line included): 431, as Node itself would answer.
    const status =
      error.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });

  const admin = createServer((req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok\n");
    } else if (path === "/readyz") {
      const ready = cluster.synced() && !closing;
      sendJson(res, ready ? 200 : 503, { synced: cluster.synced(), closing, resolver: resolver.kind });
    } else if (path === "/metrics") {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": metrics.registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found\n");
    }
  });

  const listenOn = (s: Server, port: number, host: string) =>
    new Promise<string>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, host, () => {
        s.off("error", reject);
        const address = s.address() as AddressInfo;
        const h = address.family === "IPv6" ? `[${address.address}]` : address.address;
        resolve(`http://${h}:${address.port}`);
      });
    });

  return {
    server,
    admin,
    async listen(options) {
      const url = await listenOn(server, options.port, options.host);
      const adminUrl = await listenOn(admin, options.adminPort, options.adminHost);
      return { url, adminUrl };
    },
    async close(graceMs = 10_000) {
      closing = true;
      const closed = new Promise<void>((resolve) =>
        server.listening ? server.close(() => resolve()) : resolve(),
      );
      // Environments' editors reconnect on their own (to another replica); waiting would only
      // hold up the rollout.
      for (const socket of websockets) socket.destroy();
      const deadline = Date.now() + graceMs;
      while (inFlightRequests > 0 && Date.now() < deadline) {
        server.closeIdleConnections();
        await new Promise((r) => setTimeout(r, 50));
      }
      server.closeAllConnections();
      await closed;
      agent.destroy();
      await new Promise<void>((resolve) => (admin.listening ? admin.close(() => resolve()) : resolve()));
      admin.closeAllConnections();
    },
    inFlight: () => ({ requests: inFlightRequests, websockets: websockets.size }),
  };
}
