/**
 * Cross-site request forgery check for the services' own state-changing forms (the auth
 * service's sign-out, the proxy's Start button): a form another site's page posts must not act
 * with the student's cookies.
 *
 * Browsers send `Origin` on every POST, but as "null" when the page's referrer policy is
 * `no-referrer`, or `same-origin` and the form posts to another origin. The pages with forms (the
 * proxy's, the console's) are `same-origin`: their own forms carry their real Origin. Current
 * browsers also send `Sec-Fetch-Site`, which no referrer policy changes, so it decides when the
 * Origin is "null" or missing; but only to https and loopback origins: on a plain-http site (the
 * chart's `publicScheme: http`) a `no-referrer` page's own form arrives with `Origin: null` and
 * nothing else, and is refused (the real-node browser test found the console's forms refused so).
 * A request with neither header is not from a browser page (curl, API clients), so forgery does
 * not apply to it.
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
