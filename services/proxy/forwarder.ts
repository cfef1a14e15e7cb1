/**
 * Forwards HTTP requests and WebSocket upgrades to an environment with http-proxy-3: pooled
 * keep-alive connections, upstream and idle timeouts, upstream latency and error metrics, the
 * session cookie kept out of environments' Set-Cookie, activity marks for WebSocket frames, and
 * the open WebSockets (closed on shutdown).
 */
import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ProxyServer } from "http-proxy-3";
import type { Logger } from "../../lib/logger.ts";
import { SESSION_COOKIE } from "../../lib/session.ts";
import type { ProxyConfig } from "./config.ts";
import type { ProxyMetrics, UpstreamError } from "./metrics.ts";
import type { RequestRecord } from "./requestLog.ts";

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

/** What a failed forward tells the student: 504 for timeouts, 502 for the rest. */
export function classifyUpstreamError(error: unknown): UpstreamError {
  const code = (error as { code?: string } | undefined)?.code;
  if (code === "EUPSTREAMTIMEOUT" || code === "ECONNECT_TIMEOUT" || code === "ETIMEDOUT") return "timeout";
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EHOSTUNREACH")
    return "refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "reset";
  return "other";
}

export class Forwarder {
  private readonly deps: ForwarderDeps;
  // Pooled keep-alive connections to environments; idle ones close after 30 s (sooner when the
  // upstream announces a shorter Keep-Alive timeout), so a pool never outlives an environment long.
  private readonly agent = new Agent({
    keepAlive: true,
    maxSockets: 512,
    maxFreeSockets: 64,
    timeout: 30_000,
    scheduling: "lifo",
  });
  private readonly proxy: ProxyServer;
  /** http-proxy-3's events name the request only; this finds its record. */
  private readonly records = new WeakMap<IncomingMessage, RequestRecord>();
  private readonly openWebSockets = new Set<Socket>();
  /** Requests whose environment may not widen a service worker's scope (a shared origin). */
  private readonly noServiceWorkers = new WeakSet<IncomingMessage>();

  constructor(deps: ForwarderDeps) {
    this.deps = deps;
    this.proxy = new ProxyServer({
      agent: this.agent,
      xfwd: false,
      changeOrigin: false,
      connectTimeout: deps.config.connectTimeoutMs,
    });
    this.proxy.on("error", (error, req) =>
      deps.log.warn({ err: error.message, url: req.url }, "proxy error without a handler"),
    );
    this.proxy.on("proxyReq", (proxyReq: ClientRequest, req: IncomingMessage) =>
      this.requestSent(proxyReq, req),
    );
    this.proxy.on("proxyRes", (proxyRes: IncomingMessage, req: IncomingMessage) =>
      this.responseReceived(proxyRes, req),
    );
    this.proxy.on("proxyReqWs", (proxyReq: ClientRequest, req: IncomingMessage, socket: Socket) =>
      this.upgradeSent(proxyReq, req, socket),
    );
  }

  get websockets(): number {
    return this.openWebSockets.size;
  }

  web(
    req: IncomingMessage,
    res: ServerResponse,
    target: URL,
    record: RequestRecord,
    serviceWorkers: boolean,
    onError: OnUpstreamError,
  ): void {
    this.records.set(req, record);
    if (!serviceWorkers) this.noServiceWorkers.add(req);
    const failed = (error: Error) => this.failed(record, error, onError);
    // http-proxy-3 throws for a target it cannot parse: that is the request's fault, answered
    // like any other failed forward (a warning), not a crash of the proxy's (an error and a 500).
    try {
      this.proxy.web(req, res, { target }, failed);
    } catch (error) {
      failed(error as Error);
    }
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
    this.agent.destroy();
  }

  private failed(record: RequestRecord, error: Error, onError: OnUpstreamError): void {
    const kind = classifyUpstreamError(error);
    record.upstreamError = kind;
    this.deps.metrics.upstreamErrors.inc({ kind: record.kind, error: kind });
    onError(kind, error);
  }

  // Every outgoing request (Expect was removed from the headers, so this always fires).
  private requestSent(proxyReq: ClientRequest, req: IncomingMessage): void {
    const record = this.records.get(req);
    if (record) record.upstreamStart = performance.now();
    proxyReq.setTimeout(this.deps.config.upstreamTimeoutMs, () =>
      proxyReq.destroy(new UpstreamTimeout("upstream timed out")),
    );
  }

  private responseReceived(proxyRes: IncomingMessage, req: IncomingMessage): void {
    const record = this.records.get(req);
    if (record?.upstreamStart !== undefined)
      this.deps.metrics.upstreamLatency.observe(
        { kind: "http" },
        (performance.now() - record.upstreamStart) / 1000,
      );
    // An environment must not replace or clear the platform's session cookie.
    const setCookie = proxyRes.headers["set-cookie"];
    if (setCookie) {
      const kept = setCookie.filter((c) => c.split("=", 1)[0]?.trim().toLowerCase() !== SESSION_COOKIE);
      if (kept.length !== setCookie.length) proxyRes.headers["set-cookie"] = kept;
    }
    // On a shared origin a service worker would outlive its student's session on that browser.
    if (this.noServiceWorkers.has(req)) delete proxyRes.headers["service-worker-allowed"];
  }

  private upgradeSent(proxyReq: ClientRequest, req: IncomingMessage, socket: Socket): void {
    const { config, metrics } = this.deps;
    const record = this.records.get(req);
    if (record) record.upstreamStart = performance.now();
    let upgraded = false;
    proxyReq.setTimeout(config.upstreamTimeoutMs, () => {
      if (!upgraded) proxyReq.destroy(new UpstreamTimeout("upstream timed out"));
    });
    proxyReq.on("upgrade", (_res: IncomingMessage, proxySocket: Socket) => {
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
