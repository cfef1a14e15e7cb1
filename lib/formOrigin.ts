/**
 * Cross-site request forgery check for the services' own state-changing forms (the auth
 * service's sign-out, the proxy's Start button): a form another site's page posts must not act
 * with the student's cookies.
 *
 * Browsers send `Origin` on every POST, but as "null" when the page's referrer policy is
 * `no-referrer` (every page of the platform's: chromium sends `Origin: null` for a form on its
 * own site then). Current browsers also send `Sec-Fetch-Site`, which no referrer policy changes,
 * so it decides when the Origin is "null" or missing. A request with neither header is not from a
 * browser page (curl, API clients), so forgery does not apply to it.
 */
import type { IncomingHttpHeaders } from "node:http";

/** Whether the form was sent by one of the site's own pages; `ownOrigin` judges an Origin value. */
export function formFromOwnSite(
  headers: IncomingHttpHeaders,
  ownOrigin: (origin: string) => boolean,
): boolean {
  const origin = headers.origin;
  if (origin !== undefined && origin !== "null") return ownOrigin(origin);
  const site = headers["sec-fetch-site"];
  // "same-site" is another host of the same domain: another Template's environment, so not ours.
  if (site !== undefined) return site === "same-origin" || site === "none";
  // "null" without fetch metadata: an opaque origin (a sandboxed frame), never one of our pages.
  return origin === undefined;
}
