/**
 * JSON REST calls and watches to the Kubernetes API with one pooled connection agent, configured by
 * a KubeConnection (lib/kubeConnection.ts, or client-node's KubeConfig: server, CA, client
 * certificates, tokens and token refresh).
 *
 * Why not only the typed client: it returns class instances with Date fields while watches deliver
 * plain JSON, and comparing the two would make every object look changed; it also builds a new
 * connection agent (TLS handshake) for each call, which thousands of Userlands cannot afford.
 * Controllers here compare and write plain JSON, as the API server sends it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, fetch } from "undici";
import type { ConnectionOptions, KubeConnection } from "./kubeConnection.ts";

export class KubeError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly body: unknown;
  /** How long the API server asked to wait before trying again (Retry-After), if it said. */
  readonly retryAfterSeconds: number | undefined;
  constructor(code: number, reason: string, message: string, body: unknown, retryAfterSeconds?: number) {
    super(message);
    this.name = "KubeError";
    this.code = code;
    this.reason = reason;
    this.body = body;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A 429 means the request was not served: API Priority and Fairness sheds load this way, and a
 * CRD's storage answers 429 for a moment after the CRD is updated (an upgrade), so even a create is
 * safe to send again. It is, as often as this and never waiting longer than the cap per try, so a
 * caller sees a 429 only when the API server keeps refusing.
 */
export const TOO_MANY_REQUESTS_ATTEMPTS = 4;
const MAX_RETRY_AFTER_SECONDS = 2;
const MIN_RETRY_AFTER_SECONDS = 0.1;

export type PatchType = "merge" | "json" | "strategic";
const patchContentTypes: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface ListResult<T> {
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

/** The HTTP status of a failed API call (client-node's ApiException and KubeError carry `code`). */
export function statusCode(error: unknown): number | undefined {
  if (error && typeof error === "object" && "code" in error && typeof error.code === "number")
    return error.code;
  return undefined;
}

export const isNotFound = (error: unknown): boolean => statusCode(error) === 404;
export const isConflict = (error: unknown): boolean => statusCode(error) === 409;
/** A create found an object of that name: 409, as for a conflicting update, told apart by the call made. */
export const isAlreadyExists = (error: unknown): boolean => statusCode(error) === 409;
/** The API server refused an object as invalid (422), or the request as malformed (400). */
export const isInvalid = (error: unknown): boolean => {
  const code = statusCode(error);
  return code === 422 || code === 400;
};

/** One line of a watch: an object added, modified or deleted; a BOOKMARK; or an ERROR carrying a Status. */
export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

export interface WatchOptions {
  query?: RequestOptions["query"];
  /** Ends the watch. */
  signal?: AbortSignal;
  /** The watch ends when nothing arrived for this long: a silently stalled connection is not waited on forever. */
  idleMs?: number;
}

export class KubeRest {
  readonly kc: KubeConnection;
  private agent: Agent | undefined;
  private readonly userAgent: string;
  /** Called once per request with its verb and outcome, for metrics. */
  onRequest: ((method: string, code: number) => void) | undefined;

  constructor(kc: KubeConnection, userAgent = "userland") {
    this.kc = kc;
    this.userAgent = userAgent;
  }

  get server(): string {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    return cluster.server.replace(/\/$/, "");
  }

  /** One API call; a 429 is sent again after the Retry-After the API server gives (bounded). */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.send<T>(method, path, opts);
      } catch (error) {
        if (!(error instanceof KubeError) || error.code !== 429 || attempt >= TOO_MANY_REQUESTS_ATTEMPTS)
          throw error;
        const seconds = Math.min(
          Math.max(error.retryAfterSeconds ?? 1, MIN_RETRY_AFTER_SECONDS),
          MAX_RETRY_AFTER_SECONDS,
        );
        await sleep(seconds * 1000, undefined, { signal: opts.signal });
      }
    }
  }

  /** The URL and headers of one request, and the pooled agent (made on first use). */
  private async prepare(
    path: string,
    query: RequestOptions["query"],
  ): Promise<{ url: URL; headers: Record<string, string>; agent: Agent }> {
    const https: ConnectionOptions = {};
    // Re-applied per request: tokens (e.g. projected ServiceAccount tokens) are read again when rotated.
    await this.kc.applyToHTTPSOptions(https);
    this.agent ??= new Agent({
      connect: {
        ca: https.ca,
        cert: https.cert,
        key: https.key,
        rejectUnauthorized: https.rejectUnauthorized ?? true,
      },
      connections: 64,
      keepAliveTimeout: 30_000,
    });
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": this.userAgent,
      ...https.headers,
    };
    return { url, headers, agent: this.agent };
  }

  private async send<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const { url, headers, agent } = await this.prepare(path, opts.query);
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = opts.contentType ?? "application/json";
    }
    const signal = opts.signal ?? AbortSignal.timeout(opts.timeoutMs ?? 30_000);
    let response: Response;
    try {
      // undici's own fetch, so the pooled agent is accepted as dispatcher.
      response = await fetch(url, { method, headers, body, dispatcher: agent, signal });
    } catch (error) {
      this.onRequest?.(method, 0);
      throw new KubeError(0, "ConnectionFailed", `${method} ${path}: ${(error as Error).message}`, undefined);
    }
    this.onRequest?.(method, response.status);
    const text = await response.text();
    const parsed: unknown = text ? safeJson(text) : undefined;
    if (!response.ok) {
      const status = parsed as { reason?: string; message?: string } | undefined;
      throw new KubeError(
        response.status,
        status?.reason ?? String(response.status),
        `${method} ${path}: ${response.status} ${status?.message ?? text.slice(0, 500)}`,
        parsed,
        retryAfterSeconds(response.headers.get("retry-after"), parsed),
      );
    }
    return parsed as T;
  }

  get<T>(path: string, opts?: RequestOptions): Promise<T> {
    return this.request<T>("GET", path, opts);
  }
  list<T>(path: string, opts?: RequestOptions): Promise<ListResult<T>> {
    return this.request<ListResult<T>>("GET", path, opts);
  }
  create<T>(path: string, body: unknown, query?: RequestOptions["query"]): Promise<T> {
    return this.request<T>("POST", path, { body, query });
  }
  replace<T>(path: string, body: unknown, query?: RequestOptions["query"]): Promise<T> {
    return this.request<T>("PUT", path, { body, query });
  }
  patch<T>(
    path: string,
    patch: unknown,
    type: PatchType = "merge",
    query?: RequestOptions["query"],
  ): Promise<T> {
    return this.request<T>("PATCH", path, { body: patch, contentType: patchContentTypes[type], query });
  }
  delete<T>(path: string, body?: unknown, query?: RequestOptions["query"]): Promise<T> {
    return this.request<T>("DELETE", path, { body, query });
  }

  /**
   * Watches a collection (`watch=true`): `onEvent` gets each event in order until the API server
   * ends the watch (resolves), `signal` aborts it or nothing arrived for `idleMs` (both resolve
   * too), or the request or connection fails (rejects with a KubeError).
   */
  async watch<T>(
    path: string,
    onEvent: (event: WatchEvent<T>) => void,
    opts: WatchOptions = {},
  ): Promise<void> {
    const { url, headers, agent } = await this.prepare(path, { ...opts.query, watch: true });
    const idle = new AbortController();
    let idleTimer: NodeJS.Timeout | undefined;
    const stillAlive = () => {
      if (opts.idleMs === undefined) return;
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => idle.abort(), opts.idleMs);
      idleTimer.unref();
    };
    const signal = opts.signal ? AbortSignal.any([opts.signal, idle.signal]) : idle.signal;
    const ended = () => signal.aborted;
    try {
      stillAlive();
      let response: Response;
      try {
        response = await fetch(url, { method: "GET", headers, dispatcher: agent, signal });
      } catch (error) {
        if (ended()) return;
        this.onRequest?.("WATCH", 0);
        throw new KubeError(0, "ConnectionFailed", `WATCH ${path}: ${(error as Error).message}`, undefined);
      }
      this.onRequest?.("WATCH", response.status);
      if (!response.ok || !response.body) {
        const text = await response.text().catch(() => "");
        const status = safeJson(text) as { reason?: string; message?: string } | undefined;
        throw new KubeError(
          response.status,
          status?.reason ?? String(response.status),
          `WATCH ${path}: ${response.status} ${status?.message ?? text.slice(0, 500)}`,
          status,
        );
      }
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let pending = "";
      for (;;) {
        let chunk: { done: boolean; value?: Uint8Array };
        try {
          chunk = await reader.read();
        } catch (error) {
          if (ended()) return;
          throw new KubeError(0, "ConnectionFailed", `WATCH ${path}: ${(error as Error).message}`, undefined);
        }
        if (chunk.done) return;
        stillAlive();
        pending += decoder.decode(chunk.value, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim()) onEvent(JSON.parse(line) as WatchEvent<T>);
        }
      }
    } finally {
      clearTimeout(idleTimer);
      // Ends the response too when a handler threw or the stream ended early: the connection is not left reading.
      idle.abort();
    }
  }

  async close(): Promise<void> {
    await this.agent?.close();
    this.agent = undefined;
  }
}

/** Retry-After in seconds: the header, else the Status body's details.retryAfterSeconds. */
function retryAfterSeconds(header: string | null, body: unknown): number | undefined {
  const fromHeader = header === null ? NaN : Number(header);
  if (Number.isFinite(fromHeader) && fromHeader >= 0) return fromHeader;
  const details = (body as { details?: { retryAfterSeconds?: unknown } } | undefined)?.details;
  return typeof details?.retryAfterSeconds === "number" ? details.retryAfterSeconds : undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
