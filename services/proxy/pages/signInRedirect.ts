/**
 * What the proxy does for a request without a session: browsers navigating are sent to the login
 * page, everyone else gets a 401. The session itself is lib/requestSessions.ts.
 */
import type { IncomingMessage } from "node:http";
import type { ClientInfo } from "../forward/headers.ts";

/** Browsers navigating get the login page; scripts, API clients and WebSockets get a 401. */
export function wantsLoginRedirect(req: IncomingMessage): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  if (req.headers.upgrade) return false;
  return /\btext\/html\b/i.test(req.headers.accept ?? "");
}

/** PROXY_LOGIN_URL?rd=<the absolute URL the browser asked for>. */
export function loginLocation(loginUrl: URL, client: ClientInfo, path: string): string {
  const target = new URL(loginUrl);
  target.searchParams.set("rd", `${client.proto}://${client.host}${path}`);
  return target.href;
}
