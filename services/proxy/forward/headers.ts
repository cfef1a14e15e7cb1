/**
 * What an environment may believe about a request. Environments trust `X-User` (the original
 * esc-proxy design; code-server, Jupyter and phpMyAdmin set-ups do the same), so the proxy is the
 * only one allowed to say who a request is from:
 *
 * - only an allow-list of headers reaches the environment (issue 41 item 10): the standard request
 *   headers, the browser's `Sec-*`, and an application's own `X-*` headers unless their name speaks
 *   of identity. Names are compared folded: lowercased, with every "-", "_", "." and "~" dropped
 *   (CGI/WSGI servers and nginx read X_User as X-User, and other servers and frameworks normalise
 *   other separators, issue 29 item 6). The names and name families of common auth proxies and
 *   platforms are refused whatever their spelling;
 * - `Authorization` passes with an application's token (Bearer, Jupyter's `token`), never with a
 *   scheme that names a person to the server (Basic, Digest, Negotiate, NTLM);
 * - the session cookie is removed (an environment could otherwise act as the student elsewhere);
 * - X-Forwarded-For/Proto/Host and Forwarded are believed only from PROXY_TRUSTED_PROXIES and are
 *   otherwise replaced with what this proxy saw itself;
 * - `X-User` is set from the verified session, last.
 */
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { isPlatformCookieName } from "../../../lib/session.ts";
import { addressSet, plainAddress } from "../../../lib/cidrs.ts";
import { foldHeaderName, forwardsFolded, isForwardingHeader, isIdentityFolded } from "./headerAllowList.ts";

/** How Node delivers a header sent in its usual spelling: lowercase letters, digits and "-". */
const CANONICAL_NAME = /^[a-z0-9-]+$/;

export interface TrustedProxies {
  readonly cidrs: readonly string[];
  trusts(address: string | undefined): boolean;
}

export function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  const set = addressSet(cidrs);
  return { cidrs, trusts: (address) => set.has(address) };
}

/** What the proxy believes about the client: from the socket, or from a trusted proxy's headers. */
export interface ClientInfo {
  /** The direct peer is a trusted proxy. */
  trusted: boolean;
  /** The direct peer's address. */
  peer: string;
  proto: "http" | "https";
  /** Host (and port) the client asked for, lowercase. */
  host: string;
}

function first(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  const item = v?.split(",")[0]?.trim();
  return item === "" ? undefined : item;
}

export function clientInfo(req: IncomingMessage, trusted: TrustedProxies): ClientInfo {
  const peer = plainAddress(req.socket.remoteAddress ?? "");
  const isTrusted = trusted.trusts(peer);
  const ownProto = (req.socket as Partial<TLSSocket>).encrypted ? "https" : "http";
  let proto: "http" | "https" = ownProto;
  let host = req.headers.host ?? "";
  if (isTrusted) {
    const fwdProto = first(req.headers["x-forwarded-proto"])?.toLowerCase();
    if (fwdProto === "https" || fwdProto === "http") proto = fwdProto;
    host = first(req.headers["x-forwarded-host"]) ?? host;
  }
  return { trusted: isTrusted, peer, proto, host: host.toLowerCase() };
}

function isSessionCookieName(name: string, sessionCookie: string): boolean {
  const n = name.trim().toLowerCase();
  const s = sessionCookie.toLowerCase();
  // Prefixed and case variants are not ours, but no environment has a reason to receive them.
  return n === s || n === `__host-${s}` || n === `__secure-${s}`;
}

/**
 * The Cookie header without the session cookie or any other of the platform's (a visit's session,
 * sign-in transactions): undefined when nothing else is left.
 */
export function withoutSessionCookie(cookie: string, sessionCookie: string): string | undefined {
  const kept = cookie
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => {
      const name = pair.split("=", 1)[0] ?? "";
      return pair !== "" && !isSessionCookieName(name, sessionCookie) && !isPlatformCookieName(name);
    });
  return kept.length > 0 ? kept.join("; ") : undefined;
}

/** Headers that frame the message or pick the environment: Node and the router own them, not `Connection`. */
const NEVER_HOP_BY_HOP: ReadonlySet<string> = new Set(["host", "content-length", "transfer-encoding"]);

/**
 * Removes the hop-by-hop headers: `Connection` itself, the names it lists and the usual ones. A
 * client listing `X-User` in `Connection` would otherwise have a proxy inside the environment drop
 * the proxy's X-User. A WebSocket handshake keeps `Connection: upgrade` and its `Upgrade`.
 */
function removeHopByHop(headers: IncomingHttpHeaders): void {
  const tokens = (headers.connection ?? "")
    .split(",")
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  const upgrade = tokens.includes("upgrade") && headers.upgrade?.toLowerCase() === "websocket";
  for (const name of tokens) if (!NEVER_HOP_BY_HOP.has(name)) delete headers[name];
  delete headers["keep-alive"];
  delete headers["proxy-connection"];
  delete headers.connection;
  if (upgrade) {
    headers.connection = "upgrade";
    headers.upgrade = "websocket";
  }
}

/**
 * Rewrites `headers` (a request's own header object, which http-proxy-3 copies) for the upstream.
 * Runs for every proxied request and WebSocket upgrade.
 */
export function prepareUpstreamHeaders(
  headers: IncomingHttpHeaders,
  user: string,
  client: ClientInfo,
  sessionCookie: string,
): void {
  const forwardedFor = client.trusted ? headers["x-forwarded-for"] : undefined;
  removeHopByHop(headers);
  for (const name of Object.keys(headers)) {
    const folded = foldHeaderName(name);
    if (isIdentityFolded(folded)) {
      delete headers[name];
    } else if (isForwardingHeader(folded)) {
      // From a trusted proxy only the canonical spellings pass; X_Forwarded_For never does.
      if (!client.trusted || !CANONICAL_NAME.test(name)) delete headers[name];
    } else if (!forwardsFolded(name, folded, headers[name])) {
      delete headers[name];
    }
  }
  // Node answers "Expect: 100-continue" itself; the upstream gets the body without it.
  delete headers.expect;
  if (headers.cookie !== undefined) {
    const cookie = withoutSessionCookie(headers.cookie, sessionCookie);
    if (cookie === undefined) delete headers.cookie;
    else headers.cookie = cookie;
  }
  const chain = Array.isArray(forwardedFor) ? forwardedFor.join(", ") : forwardedFor;
  headers["x-forwarded-for"] = chain ? `${chain}, ${client.peer}` : client.peer;
  headers["x-forwarded-proto"] = client.proto;
  if (client.host) headers["x-forwarded-host"] = client.host;
  // Last, after every removal: nothing the client sent can take it away or come after it.
  headers["x-user"] = user;
}

/** The request's Origin is this host (any scheme: TLS may end at an ingress) or explicitly allowed. */
export function originAllowed(
  origin: string | undefined,
  client: ClientInfo,
  allowed: readonly string[],
): boolean {
  // Browsers always send Origin on WebSocket handshakes and form posts; a client without one is
  // not a browser page, so cross-site WebSocket hijacking (what this check stops) does not apply.
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
