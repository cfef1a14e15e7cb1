/**
 * Answers the proxy gives itself, on a response (HTML page or JSON, by the client's Accept) or on
 * a raw socket (a refused WebSocket handshake, which has no ServerResponse).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { ClientInfo } from "../forward/headers.ts";
import { pageHeaders, type Page } from "./pageShell.ts";
import { loginLocation, wantsLoginRedirect } from "./signInRedirect.ts";

/** API clients asking for JSON (and not also for HTML) get a page's information as JSON. */
export function prefersJson(req: IncomingMessage): boolean {
  const accept = req.headers.accept ?? "";
  return /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);
}

/**
 * An answer given before the request's body arrived (a refusal, a sign-in, a page) closes the
 * connection after it: otherwise Node reads, and throws away, whatever the client still sends
 * (forever, for an endless chunked body).
 */
function closeIfBodyUnread(req: IncomingMessage, res: ServerResponse): void {
  if (!req.complete) res.shouldKeepAlive = false;
}

export function sendPage(req: IncomingMessage, res: ServerResponse, page: Page): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  closeIfBodyUnread(req, res);
  const json = prefersJson(req);
  const body = json ? JSON.stringify(page.json) : page.body;
  const headers = json
    ? { "content-type": "application/json", "cache-control": "no-store" }
    : pageHeaders(page.script, page.formTargets);
  res.writeHead(page.status, { ...headers, ...page.headers, "content-length": Buffer.byteLength(body) });
  res.end(req.method === "HEAD" ? undefined : body);
}

/** 303 See Other to `location` (after a form, or on to another page), never cached; with a cookie to set. */
export function sendRedirect(res: ServerResponse, location: string, cookie?: string): void {
  res.writeHead(303, {
    location,
    "cache-control": "no-store",
    "content-length": 0,
    ...(cookie ? { "set-cookie": cookie } : {}),
  });
  res.end();
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * No valid session: a browser navigating goes to the login page, anything else gets 401. When the
 * cookies named different users (one of them planted by an environment's script), the browser is
 * also told to drop every cookie of the site, the planted one included, so signing in again works.
 */
export function sendSignIn(
  req: IncomingMessage,
  res: ServerResponse,
  loginUrl: URL,
  client: ClientInfo,
  conflicting = false,
): void {
  closeIfBodyUnread(req, res);
  const clear: Record<string, string> = conflicting ? { "clear-site-data": '"cookies"' } : {};
  if (wantsLoginRedirect(req)) {
    res.writeHead(302, {
      location: loginLocation(loginUrl, client, req.url ?? "/"),
      "cache-control": "no-store",
      "content-length": 0,
      ...clear,
    });
    res.end();
    return;
  }
  res.writeHead(401, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "www-authenticate": 'Cookie realm="userland"',
    ...clear,
  });
  res.end(JSON.stringify({ error: "not signed in", login: loginUrl.href }));
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  429: "Too Many Requests",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** Refuses a WebSocket handshake with a JSON body and closes the connection. */
export function refuseUpgrade(socket: Socket, status: number, value: unknown): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(value);
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    connection: "close",
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n");
  socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ""}\r\n${head}\r\n\r\n${body}`);
}
