/**
 * The proxy's servers, put together: student traffic (HTTP and WebSocket) and the admin server.
 * `createProxyServer` takes every dependency as an argument, so tests run it in-process on
 * 127.0.0.1:0 against the real control plane; app.ts wires it for production.
 *
 * Each request or handshake is routed (route/router.ts), and the Route is acted on in one place
 * (`act`), through a Reply for its kind of connection: a ServerResponse for HTTP, the raw socket
 * for a WebSocket handshake.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { SESSION_COOKIE } from "../../lib/session.ts";
import { createAdminServer } from "../../lib/adminServer.ts";
import { listenOn } from "../../lib/listen.ts";
import { serverTimeoutOptions } from "../../lib/serverTimeouts.ts";
import { Forwarder } from "./forward/forwarder.ts";
import { prepareUpstreamHeaders, type ClientInfo } from "./forward/headers.ts";
import { UserLimits } from "./forward/limits.ts";
import { serveOwnEndpoint } from "./endpoints/studentEndpoints.ts";
import { simplePage, tooManyPage, upstreamErrorPage } from "./pages/environmentPages.ts";
import type { Page } from "./pages/pageShell.ts";
import { forwardHttp } from "./forward/httpForward.ts";
import { requestLog, startRecord, type RequestRecord } from "./requestLog.ts";
import { refuseUpgrade, sendPage, sendSignIn } from "./pages/send.ts";
import { Router } from "./route/router.ts";
import type { OwnEndpointRoute, Route } from "./route/routes.ts";
import { SessionSockets } from "./forward/sessionSockets.ts";
import { closeAtExamEnd, ExamSockets } from "./forward/examSockets.ts";
import { serveSignedOut } from "./endpoints/signedOut.ts";
import { Coursework } from "./endpoints/coursework.ts";
import { Starter } from "./endpoints/starter.ts";
import { isVisitPath, serveVisitEndpoint } from "./endpoints/visitEndpoints.ts";
import { enterVisit } from "./endpoints/visitHost.ts";
import { VISITOR_HEADER, type VisitEndpointDeps } from "./endpoints/visitDeps.ts";
import { VisitTracker } from "./route/visitTracker.ts";
import type { ProxyDeps, RunningProxy } from "./serverTypes.ts";

/** How a Route is answered on one kind of connection. */
interface Reply {
  page(page: Page): void;
  signIn(client: ClientInfo, conflicting: boolean): void;
  redirect(location: string): void;
  signedOut(route: Extract<Route, { kind: "signedOut" }>): void;
  ownEndpoint(route: OwnEndpointRoute): Promise<void> | void;
  visitEnter(route: Extract<Route, { kind: "visitEnter" }>): Promise<void> | void;
  forward(route: Extract<Route, { kind: "forward" }>): void;
  /** Runs `fn` once the request or WebSocket is over. */
  onEnd(fn: () => void): void;
}

export function createProxyServer(deps: ProxyDeps): RunningProxy {
  const { config, cluster, resolver, activity, metrics, log } = deps;
  const starter = new Starter(deps.userManager, metrics, log);
  const coursework = new Coursework(deps.userManager, metrics, log);
  const visits = new VisitTracker({ userManager: deps.userManager, quietMs: config.visitQuietMs, log });
  const router = new Router({ config, cluster, sessions: deps.sessions, resolver, starter, visits });
  const visitDeps: VisitEndpointDeps = {
    cluster,
    visits,
    config,
    allowedOrigins: config.allowedOrigins,
    userManager: deps.userManager,
    sessions: deps.sessions,
  };
  const forwarder = new Forwarder({ config, metrics, log, activity });
  const sessionSockets = new SessionSockets();
  const examSockets = new ExamSockets();
  const requests = requestLog({ metrics, log, accessLog: config.accessLog });
  const limits = new UserLimits(config.limits);
  let inFlightRequests = 0;
  let closing = false;

  /** The one place a Route is acted on. */
  async function act(req: IncomingMessage, route: Route, record: RequestRecord, reply: Reply): Promise<void> {
    record.outcome = route.outcome;
    switch (route.kind) {
      case "page":
        return reply.page(route.page);
      case "signIn":
        return reply.signIn(route.client, route.conflicting);
      case "redirect":
        return reply.redirect(route.location);
      case "signedOut":
        return reply.signedOut(route);
      case "ownEndpoint":
        return reply.ownEndpoint(route);
      case "visitEnter":
        return reply.visitEnter(route);
      case "start": {
        const sent = await starter.request(route.userland, route.user);
        if (!sent) record.outcome = "stopped";
        return reply.page(sent ? route.starting : route.stopped);
      }
      case "forward": {
        const release = limits.acquire(record.kind, route.session.user);
        if (!release) {
          record.outcome = "limited";
          return reply.page(tooManyPage(record.kind, limits.limit(record.kind)));
        }
        reply.onEnd(release);
        const { namespace, name } = route.userland;
        if (route.visitOf === undefined) {
          prepareUpstreamHeaders(req.headers, route.session.user, route.client, SESSION_COOKIE);
        } else {
          // The environment is its owner's: X-User stays theirs; the visitor is named beside it.
          prepareUpstreamHeaders(req.headers, route.visitOf, route.client, SESSION_COOKIE);
          req.headers[VISITOR_HEADER] = route.session.user;
          visits.touch(namespace, route.userland.name, route.session.user);
          if (record.kind === "websocket")
            reply.onEnd(visits.socketOpened(namespace, name, route.session.user));
        }
        // The environment gets the path that was routed, not a second parse of the raw target.
        req.url = route.path;
        activity.touch(route.userland.namespace, route.userland.name);
        return reply.forward(route);
      }
    }
  }

  async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record = startRecord("http", req);
    inFlightRequests++;
    if (closing) res.shouldKeepAlive = false;
    res.once("close", () => {
      inFlightRequests--;
      requests.finished(record, req, res.statusCode);
    });
    const reply: Reply = {
      page: (page) => sendPage(req, res, page),
      signIn: (client, conflicting) => sendSignIn(req, res, config.loginUrl, client, conflicting),
      redirect: (location) => {
        res.shouldKeepAlive = req.complete;
        res.writeHead(302, { location, "cache-control": "no-store", "content-length": 0 });
        res.end();
      },
      signedOut: (route) => serveSignedOut(config, cluster, req, res, route.client, route.query),
      visitEnter: (route) => enterVisit(visitDeps, req, res, route, record),
      ownEndpoint: (route) =>
        isVisitPath(route.pathname)
          ? serveVisitEndpoint(visitDeps, req, res, route, record)
          : serveOwnEndpoint(
              {
                cluster,
                starter,
                coursework,
                allowedOrigins: config.allowedOrigins,
                config,
                userManager: deps.userManager,
              },
              req,
              res,
              route,
              record,
            ),
      forward: (route) => forwardHttp({ forwarder, config, log }, req, res, route, record),
      onEnd: (fn) => res.once("close", fn),
    };
    await act(req, await router.route(req, "http", record), record, reply);
  }

  async function handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    const record = startRecord("websocket", req);
    socket.on("error", () => socket.destroy());
    let done = false;
    const end = (status: number) => {
      if (done) return;
      done = true;
      requests.finished(record, req, status);
    };
    const refuse = (status: number, value: unknown) => {
      refuseUpgrade(socket, status, value);
      end(status);
    };
    if (closing) return refuse(503, { error: "shutting down" });
    if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket") {
      record.outcome = "bad_request";
      return refuse(400, { error: "only WebSocket upgrades are supported" });
    }
    const reply: Reply = {
      page: (page) => refuse(page.status, page.json),
      signIn: () => refuse(401, { error: "not signed in" }),
      redirect: (location) => refuse(404, { error: "served at another address", location }),
      signedOut: () => refuse(404, { error: "not found" }),
      ownEndpoint: () => refuse(404, { error: "not found" }),
      visitEnter: () => refuse(404, { error: "not found" }),
      forward: (route) => {
        socket.once("close", () => end(record.status ?? 499));
        sessionSockets.add(socket, route.session);
        if (route.examEnd !== undefined) closeAtExamEnd(socket, route.examEnd);
        if (route.exam !== undefined) examSockets.add(socket, route.exam);
        forwarder.ws(req, socket, head, route.target, record, (kind) => {
          if (record.status === 101) return;
          const page = upstreamErrorPage(kind === "timeout" ? 504 : 502, route.env, "/");
          refuse(page.status, page.json);
        });
      },
      onEnd: (fn) => socket.once("close", fn),
    };
    await act(req, await router.route(req, "websocket", record), record, reply);
  }

  const server = createServer(
    { keepAliveTimeout: 65_000, ...serverTimeoutOptions(config.timeouts) },
    (req, res) => {
      handleRequest(req, res).catch((error: unknown) => {
        log.error({ err: error }, "request failed");
        if (!res.headersSent)
          sendPage(req, res, simplePage(500, "Something went wrong", "The proxy failed; try again."));
        else res.destroy();
      });
    },
  );
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

  // Not ready while closing, so no new traffic is sent here during shutdown.
  const admin = createAdminServer({
    registry: metrics.registry,
    readiness: () => ({
      ready: cluster.synced() && !closing,
      details: { synced: cluster.synced(), closing, resolver: resolver.kind },
    }),
  });

  return {
    server,
    admin: admin.server,
    async listen(options) {
      const names = options.socketNames;
      const url = await listenOn(server, options.port, options.host, names?.main);
      const adminUrl = await admin.listen(options.adminPort, options.adminHost, names?.admin);
      return { url, adminUrl };
    },
    async close(graceMs = 10_000) {
      closing = true;
      const closed = new Promise<void>((resolve) =>
        server.listening ? server.close(() => resolve()) : resolve(),
      );
      forwarder.closeWebSockets();
      const deadline = Date.now() + graceMs;
      while (inFlightRequests > 0 && Date.now() < deadline) {
        server.closeIdleConnections();
        await new Promise((r) => setTimeout(r, 50));
      }
      server.closeAllConnections();
      await closed;
      forwarder.close();
      visits.stop();
      await admin.close();
    },
    inFlight: () => ({ requests: inFlightRequests, websockets: forwarder.websockets }),
    visits,
    closeEndedWebSockets: (user) => sessionSockets.closeEnded(user, cluster),
    closeExamWebSockets: (exam) => examSockets.close(exam),
  };
}
