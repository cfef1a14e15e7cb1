/**
 * An environment's response headers as the client may see them (HTTP answers, a WebSocket's 101
 * and a refused upgrade alike): no hop-by-hop headers, no Set-Cookie for a platform cookie, no
 * Service-Worker-Allowed on a shared origin, and on a shared origin validators tied to the session.
 */
import { isPlatformCookieName } from "../../../lib/session.ts";
import { sessionResponseValidators } from "./sharedCache.ts";

/** Response headers that describe the connection to the environment, not the one to the client. */
const HOP_BY_HOP_RESPONSE: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

export type ResponseHeaders = Record<string, string | string[] | undefined>;

/**
 * The name a Set-Cookie sets, as the browser will send it: "=userland_session=x" (and "==…") sets
 * a nameless cookie that browsers send as "userland_session=x".
 */
function setCookieName(header: string): string {
  const pair = (header.split(";", 1)[0] ?? "").replace(/^[\s=]+/, "");
  return pair.split("=", 1)[0] ?? "";
}

/**
 * Removes from `headers` (in place) every Set-Cookie for one of the platform's cookies: an
 * environment must not set, replace or clear the session, a visit, a sign-in transaction or the
 * signed-out mark planted for the auth service (login CSRF). Every answer an environment gives
 * passes here: an HTTP response, a WebSocket's 101 and a refused upgrade alike.
 */
export function dropPlatformCookies(headers: ResponseHeaders): void {
  const setCookie = headers["set-cookie"];
  if (setCookie === undefined) return;
  const all = typeof setCookie === "string" ? [setCookie] : setCookie;
  const cookies = all.filter((c) => !isPlatformCookieName(setCookieName(c)));
  if (cookies.length !== all.length) headers["set-cookie"] = cookies;
}

/**
 * The environment's response headers as the client may see them: without hop-by-hop headers (Node
 * frames the response to the client itself) and the names `Connection` lists, without a
 * Set-Cookie for any of the platform's cookies, and on a shared origin without
 * Service-Worker-Allowed; with `cacheTag` (a shared origin), not reusable by another session
 * (forward/sharedCache.ts). A new object: deleting keys would slow every later use of the headers.
 */
export function clientResponseHeaders(
  headers: ResponseHeaders,
  serviceWorkers: boolean,
  cacheTag?: string,
): ResponseHeaders {
  const connection = headers.connection;
  const listed =
    typeof connection === "string" && connection !== "keep-alive" ? connection.toLowerCase() : "";
  const kept: ResponseHeaders = {};
  for (const name in headers) {
    if (HOP_BY_HOP_RESPONSE.has(name) || (listed && listed.split(",").some((t) => t.trim() === name)))
      continue;
    // On a shared origin a service worker would outlive its student's session on that browser.
    if (name === "service-worker-allowed" && !serviceWorkers) continue;
    kept[name] = headers[name];
  }
  dropPlatformCookies(kept);
  if (cacheTag !== undefined) sessionResponseValidators(kept, cacheTag);
  return kept;
}
