/**
 * How long a client may take to send a request, for every listener of the platform (the auth
 * service, the user-manager, the proxy): a client trickling its headers or its body a byte at a
 * time (slow loris) must not hold a connection forever. fastify turns Node's request timeout off
 * by default, so without this the auth service and the user-manager never closed such connections.
 *
 * Each component declares the two settings in its own table with `timeoutSettings(prefix, ...)`.
 */
import type { ServerOptions } from "node:http";
import { formatDuration } from "../api/duration.ts";
import { parse, type Setting } from "./config.ts";

export interface ServerTimeouts {
  /** The request line and headers must have arrived within this long. */
  headersMs: number;
  /** The whole request, body included, must have arrived within this long. */
  requestMs: number;
}

/** The two settings of a component, e.g. AUTH_HEADERS_TIMEOUT and AUTH_REQUEST_TIMEOUT. */
export function timeoutSettings(
  prefix: string,
  defaults: ServerTimeouts,
  bodyNote = "",
): { headersTimeout: Setting<number>; requestTimeout: Setting<number> } {
  return {
    headersTimeout: {
      env: `${prefix}_HEADERS_TIMEOUT`,
      description:
        "A client must have sent a request's headers within this long, or its connection is closed",
      parse: parse.positiveDuration,
      default: defaults.headersMs,
      show: formatDuration,
    },
    requestTimeout: {
      env: `${prefix}_REQUEST_TIMEOUT`,
      description: `A client must have sent a whole request, body included, within this long, or its connection is closed${bodyNote}`,
      parse: parse.positiveDuration,
      default: defaults.requestMs,
      show: formatDuration,
    },
  };
}

/**
 * Options for `http.createServer`. Node checks the timeouts every `connectionsCheckingInterval`
 * (30 s by default, longer than a short timeout), so the check runs four times per shortest timeout.
 */
export function serverTimeoutOptions(t: ServerTimeouts): ServerOptions {
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(t.headersMs, t.requestMs);
  return {
    headersTimeout,
    requestTimeout: t.requestMs,
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(headersTimeout / 4))),
  };
}

/** The same for fastify, which sets the server's request timeout itself (0, "never", by default). */
export function fastifyTimeoutOptions(t: ServerTimeouts): { requestTimeout: number; http: ServerOptions } {
  const http = serverTimeoutOptions(t);
  return { requestTimeout: t.requestMs, http };
}
