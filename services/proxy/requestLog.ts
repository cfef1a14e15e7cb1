/**
 * What the proxy learned about one request or WebSocket handshake, and what is made of it when it
 * ends: the request metrics and, with PROXY_ACCESS_LOG, one JSON access-log line (written in batches,
 * at least once a second).
 */
import type { IncomingMessage } from "node:http";
import { performance } from "node:perf_hooks";
import { batchedLike, type Logger } from "../../lib/logger.ts";
import { statusClass, type ProxyMetrics, type RouteOutcome, type UpstreamError } from "./metrics.ts";

export type RequestKind = "http" | "websocket";

export interface RequestRecord {
  kind: RequestKind;
  start: number;
  /** The client's address, read at the start: `req.socket` is null once the connection is gone. */
  peer: string | undefined;
  outcome?: RouteOutcome;
  user?: string;
  /** A visit: the environment's owner (`user` is the visitor). */
  owner?: string;
  template?: string;
  /** "<namespace>/<name>" */
  userland?: string;
  upstreamStart?: number;
  upstreamError?: UpstreamError;
  status?: number;
}

export function startRecord(kind: RequestKind, req: IncomingMessage): RequestRecord {
  return { kind, start: performance.now(), peer: req.socket.remoteAddress };
}

export interface RequestLog {
  finished(record: RequestRecord, req: IncomingMessage, status: number): void;
}

export function requestLog(options: { metrics: ProxyMetrics; log: Logger; accessLog: boolean }): RequestLog {
  const { metrics } = options;
  const log = options.accessLog && options.log.isLevelEnabled("info") ? batchedLike(options.log) : undefined;
  return {
    finished(record, req, status) {
      record.status = status;
      metrics.requests.inc({ kind: record.kind, status_class: statusClass(status) });
      metrics.routes.inc({ kind: record.kind, outcome: record.outcome ?? "bad_request" });
      if (!log) return;
      // Without the query: it may carry tokens.
      const path = (req.url ?? "").split("?", 1)[0];
      log.info(
        {
          kind: record.kind,
          method: req.method,
          host: req.headers.host,
          path,
          status,
          ms: Math.round((performance.now() - record.start) * 10) / 10,
          user: record.user,
          owner: record.owner,
          template: record.template,
          userland: record.userland,
          outcome: record.outcome,
          upstreamError: record.upstreamError,
          peer: record.peer,
        },
        "request",
      );
    },
  };
}
