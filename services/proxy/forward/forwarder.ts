/**
 * Forwards HTTP requests and WebSocket upgrades to an environment. HTTP goes through undici's
 * pooled keep-alive connections, driven by its dispatch handler (no stream objects per request:
 * the ceiling experiment in docs/decisions/0003 found it about half the CPU per request of
 * http-proxy-3); WebSocket upgrades go through http-proxy-3. Here: upstream and idle timeouts,
 * upstream latency and error metrics, the session cookie kept out of environments' Set-Cookie,
 * activity marks for WebSocket frames, and the open WebSockets (closed on shutdown).
 */
import type { ClientRequest, IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ProxyServer } from "http-proxy-3";
import { Agent as UpstreamPool, type Dispatcher } from "undici";
import type { Logger } from "../../../lib/logger.ts";
import type { ProxyConfig } from "../config.ts";
import type { ProxyMetrics, UpstreamError } from "../metrics.ts";
import type { RequestRecord } from "../requestLog.ts";
import { clientResponseHeaders, dropPlatformCookies } from "./responseHeaders.ts";

export type ForwarderConfig = Pick<
  ProxyConfig,
  "upstreamTimeoutMs" | "connectTimeoutMs" | "websocketIdleTimeoutMs"
>;

export interface ActivitySink {
  touch(namespace: string, name: string, now?: number): void;
}

export interface ForwarderDeps {
  config: ForwarderConfig;
  metrics: ProxyMetrics;
  log: Logger;
  activity: ActivitySink;
}

/** Called when forwarding fails; the error is already counted and kept in the request's record. */
type OnUpstreamError = (kind: UpstreamError, error: Error) => void;

class UpstreamTimeout extends Error {
  readonly code = "EUPSTREAMTIMEOUT";
}

/** The client went away before the environment's answer was complete: nobody to answer. */
class ClientGone extends Error {
  readonly code = "ECLIENTGONE";
}

/** What a failed forward tells the student: 504 for timeouts, 502 for the rest. */
export function classifyUpstreamError(error: unknown): UpstreamError {
  const code = (error as { code?: string } | undefined)?.code;
  if (
    code === "EUPSTREAMTIMEOUT" ||
    code === "ECONNECT_TIMEOUT" ||
    code === "ETIMEDOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT" ||
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT"
  )
    return "timeout";
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EHOSTUNREACH")
    return "refused";
  // UND_ERR_SOCKET: the environment closed the connection before its answer was complete.
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET") return "reset";
  return "other";
}

/** How long a WebSocket the client half-closed waits for the environment to close its side. */
const HALF_CLOSED_GRACE_MS = 1000;

export class Forwarder {
  private readonly deps: ForwarderDeps;
  // Pooled keep-alive connections to environments, one pool per environment; idle ones close
  // after 30 s (sooner when the upstream announces a shorter Keep-Alive timeout), so a pool never
  // outlives an environment long. An environment silent for upstreamTimeoutMs, before its headers
  // or between two parts of its body, fails the request (504 when nothing was sent yet).
  private readonly pool: UpstreamPool;
  private readonly proxy: ProxyServer;
  /** http-proxy-3's events name the request only; this finds its record (WebSockets). */
  private readonly records = new WeakMap<IncomingMessage, RequestRecord>();
  private readonly openWebSockets = new Set<Socket>();

  constructor(deps: ForwarderDeps) {
    this.deps = deps;
    const { upstreamTimeoutMs, connectTimeoutMs } = deps.config;
    this.pool = new UpstreamPool({
      connections: 512,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 30_000,
      headersTimeout: upstreamTimeoutMs,
      bodyTimeout: upstreamTimeoutMs,
      connect: { timeout: connectTimeoutMs },
    });
    this.proxy = new ProxyServer({ xfwd: false, changeOrigin: false, connectTimeout: connectTimeoutMs });
    this.proxy.on("error", (error, req) =>
      deps.log.warn({ err: error.message, url: req.url }, "proxy error without a handler"),
    );
    this.proxy.on("proxyReqWs", (proxyReq: ClientRequest, req: IncomingMessage, socket: Socket) =>
      this.upgradeSent(proxyReq, req, socket),
    );
  }

  get websockets(): number {
    return this.openWebSockets.size;
  }

  /**
   * Sends the request (its headers already prepared, `req.url` the routed path) to `target` and
   * its answer back, streaming both bodies with backpressure; either side going away ends the other.
   */
  web(
    req: IncomingMessage,
    res: ServerResponse,
    target: URL,
    record: RequestRecord,
    answer: { serviceWorkers: boolean; cacheTag: string | undefined },
    onError: OnUpstreamError,
  ): void {
    const { metrics } = this.deps;
    const headers = req.headers;
    // undici frames the body itself (chunked when its length is unknown).
    const body =
      headers["transfer-encoding"] !== undefined || Number(headers["content-length"]) > 0 ? req : null;
    delete headers["transfer-encoding"];
    let controller: Dispatcher.DispatchController | undefined;
    let ended = false;
    const fail = (error: Error) => {
      if (ended) return;
      ended = true;
      // Nobody to answer, and not the environment's failure: the client aborted, or its upload broke off.
      if (gone || error instanceof ClientGone || res.destroyed || req.socket?.destroyed) return;
      this.failed(record, error, onError);
    };
    let gone = false;
    res.on("drain", () => controller?.resume());
    res.once("close", () => {
      if (ended) return;
      gone = true;
      controller?.abort(new ClientGone("the client went away"));
    });
    record.upstreamStart = performance.now();
    this.pool.dispatch(
      { origin: target.origin, path: req.url ?? "/", method: req.method ?? "GET", headers, body },
      {
        onRequestStart: (c) => {
          controller = c;
          // Gone while the request waited for a connection: not sent at all.
          if (gone) c.abort(new ClientGone("the client went away"));
        },
        onResponseStart: (_c, status, upstreamHeaders, statusMessage) => {
          metrics.upstreamLatency.observe(
            { kind: "http" },
            (performance.now() - (record.upstreamStart ?? 0)) / 1000,
          );
          // Throws for a status or header Node will not send: undici then fails the request (502).
          res.writeHead(
            status,
            statusMessage,
            clientResponseHeaders(upstreamHeaders, answer.serviceWorkers, answer.cacheTag),
          );
        },
        onResponseData: (c, chunk) => {
          if (!res.write(chunk)) c.pause();
        },
        onResponseEnd: () => {
          ended = true;
          res.end();
        },
        onResponseError: (_c, error) => fail(error),
      },
    );
  }

  ws(
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
    target: URL,
    record: RequestRecord,
    onError: OnUpstreamError,
  ): void {
    this.records.set(req, record);
    const failed = (error: Error) => this.failed(record, error, onError);
    try {
      // No pooled agent: an upgraded connection never returns to a pool.
      this.proxy.ws(req, socket, head, { target, agent: false }, failed);
    } catch (error) {
      failed(error as Error);
    }
  }

  /** Environments' editors reconnect on their own (to another replica); waiting would only hold up a rollout. */
  closeWebSockets(): void {
    for (const socket of this.openWebSockets) socket.destroy();
  }

  close(): void {
    void this.pool.destroy();
  }

  private failed(record: RequestRecord, error: Error, onError: OnUpstreamError): void {
    const kind = classifyUpstreamError(error);
    record.upstreamError = kind;
    this.deps.metrics.upstreamErrors.inc({ kind: record.kind, error: kind });
    onError(kind, error);
  }

  private upgradeSent(proxyReq: ClientRequest, req: IncomingMessage, socket: Socket): void {
    const { config, metrics } = this.deps;
    const record = this.records.get(req);
    if (record) record.upstreamStart = performance.now();
    let upgraded = false;
    proxyReq.setTimeout(config.upstreamTimeoutMs, () => {
      if (!upgraded) proxyReq.destroy(new UpstreamTimeout("upstream timed out"));
    });
    // These listeners run before http-proxy-3's, which writes the environment's headers to the
    // client as they are: a 101, or the answer of an environment that refused the upgrade.
    proxyReq.on("response", (res: IncomingMessage) => dropPlatformCookies(res.headers));
    proxyReq.on("upgrade", (res: IncomingMessage, proxySocket: Socket) => {
      dropPlatformCookies(res.headers);
      upgraded = true;
      if (record?.upstreamStart !== undefined)
        metrics.upstreamLatency.observe(
          { kind: "websocket" },
          (performance.now() - record.upstreamStart) / 1000,
        );
      if (record) {
        record.status = 101;
        record.outcome = "proxied";
      }
      this.upgraded(socket, proxySocket, record);
    });
  }

  /** An open WebSocket: closed together, on idleness and at shutdown; its frames are activity. */
  private upgraded(socket: Socket, proxySocket: Socket, record: RequestRecord | undefined): void {
    const { config, metrics, log, activity } = this.deps;
    this.openWebSockets.add(socket);
    metrics.openWebSockets.inc();
    socket.once("close", () => {
      this.openWebSockets.delete(socket);
      metrics.openWebSockets.dec();
      proxySocket.destroy();
    });
    proxySocket.once("close", () => socket.destroy());
    // The client is done (its FIN): the environment gets its FIN too (http-proxy-3's pipe) and a
    // moment to finish, then both close. An environment that never closes its side (half-open)
    // would otherwise hold the student's slot until the idle timeout (issue 29 item 6).
    socket.once("end", () => {
      const timer = setTimeout(() => {
        proxySocket.destroy();
        socket.destroy();
      }, HALF_CLOSED_GRACE_MS);
      timer.unref();
      socket.once("close", () => clearTimeout(timer));
    });
    // http-proxy-3 clears socket timeouts right after this listener; set ours after it. One
    // timer covers both directions: a socket's timer restarts on reads and on writes.
    queueMicrotask(() =>
      proxySocket.setTimeout(config.websocketIdleTimeoutMs, () => {
        log.info({ user: record?.user, userland: record?.userland }, "closing idle WebSocket");
        proxySocket.destroy();
        socket.destroy();
      }),
    );
    const [namespace, name] = (record?.userland ?? "/").split("/") as [string, string];
    // At most once a second per socket: a busy editor sends many frames.
    let last = 0;
    const touch = () => {
      const now = Date.now();
      if (now - last < 1000) return;
      last = now;
      activity.touch(namespace, name, now);
    };
    socket.on("data", touch);
    proxySocket.on("data", touch);
  }
}
