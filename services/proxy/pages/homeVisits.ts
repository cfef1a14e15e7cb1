/**
 * The visits a student's home lists (docs/decisions/0012-visits.md): every teacher's visit to any
 * of their environments in the last 30 days, newest first, read from the Userlands'
 * `userland.dev/visits` annotation in the proxy's cache (no API call), and a visit going on now
 * marked live. pages/homePage.ts shows them; its script follows them through the home's JSON.
 */
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import {
  consentState,
  parseVisitRequests,
  parseVisits,
  VISIT_HISTORY_MS,
  visitIsLive,
  visitMinutes,
} from "../../../api/visits.ts";
import { html, type Html } from "../../../lib/html.ts";
import { ALLOW_PATH } from "../route/visitTracker.ts";

export interface HomeVisit {
  visitor: string;
  /** The environment's title (its Template's display name). */
  environment: string;
  /** RFC 3339: the first request, the last one seen. */
  from: string;
  to: string;
  minutes: number;
  /** Going on now (not ended, seen within the quiet period). */
  live: boolean;
}

/**
 * The visits to `userlands` (one student's), newest first. `staleMs`: an open visit not seen for
 * this long counts as over even if no proxy said so (a replica that stopped mid-visit).
 */
export function homeVisits(
  userlands: readonly Userland[],
  titleOf: (userland: Userland) => string,
  now: Date,
  staleMs: number,
): HomeVisit[] {
  const oldest = now.getTime() - VISIT_HISTORY_MS;
  const visits: HomeVisit[] = [];
  for (const userland of userlands)
    for (const v of parseVisits(userland.metadata.annotations?.[UserlandAnnotations.visits]))
      if (Date.parse(v.to) >= oldest)
        visits.push({
          visitor: v.visitor,
          environment: titleOf(userland),
          from: v.from,
          to: v.to,
          minutes: visitMinutes(v),
          live: visitIsLive(v, now, staleMs),
        });
  return visits.sort((a, b) => Date.parse(b.from) - Date.parse(a.from));
}

/** A visitor waiting for the student's Allow (a Template that asks first). */
export interface HomeVisitRequest {
  /** The Userland, which the Allow form names. */
  name: string;
  environment: string;
  visitor: string;
  requestedAt: string;
}

/** The requests still waiting for an answer (not allowed, not lapsed), oldest first. */
export function homeVisitRequests(
  userlands: readonly Userland[],
  titleOf: (userland: Userland) => string,
  now: Date,
): HomeVisitRequest[] {
  const waiting: HomeVisitRequest[] = [];
  for (const userland of userlands) {
    const requests = parseVisitRequests(userland.metadata.annotations?.[UserlandAnnotations.visitRequests]);
    for (const r of requests)
      if (r.allowedAt === undefined && consentState(requests, r.visitor, now) === "pending")
        waiting.push({
          name: userland.metadata.name ?? "",
          environment: titleOf(userland),
          visitor: r.visitor,
          requestedAt: r.requestedAt,
        });
  }
  return waiting.sort((a, b) => Date.parse(a.requestedAt) - Date.parse(b.requestedAt));
}

/** What the home's script compares to notice a visit beginning or ending, or a request coming. */
export const visitsSignature = (visits: readonly HomeVisit[], requests: readonly HomeVisitRequest[]) =>
  visits.map((v) => `${v.visitor}@${v.from}:${String(v.live)}`).join(",") +
  "/" +
  requests.map((r) => `${r.name}?${r.visitor}`).join(",");

/** The same in the page's script (the JSON view's `visits` and `visitRequests`). */
export const VISITS_SIGN_JS = `(v.visits || []).map(function (x) { return x.visitor + "@" + x.from + ":" + x.live; }).join(",") + "/" + (v.visitRequests || []).map(function (x) { return x.name + "?" + x.visitor; }).join(",")`;

const dateFormat = new Intl.DateTimeFormat("en-GB", {
  day: "numeric",
  month: "short",
  hour: "2-digit",
  minute: "2-digit",
  timeZone: "UTC",
});

/** "3 Dec, 10:42 UTC" */
function when(iso: string): string {
  return `${dateFormat.format(new Date(iso)).replace(/ at /, ", ")} UTC`;
}

const minutesText = (n: number) => `${n} minute${n === 1 ? "" : "s"}`;

/** A request waiting for the student, with its Allow button (a plain form, like the home's others). */
function requestItem(r: HomeVisitRequest, returnPath: string): Html {
  return html`<li class="visit visit-request" role="status">
    <strong>Teacher ${r.visitor} asks to open your ${r.environment}</strong>
    <form method="post" action="${ALLOW_PATH}">
      <input type="hidden" name="userland" value="${r.name}" />
      <input type="hidden" name="visitor" value="${r.visitor}" />
      <input type="hidden" name="rd" value="${returnPath}" />
      <button type="submit" class="primary" aria-label="Allow ${r.visitor} to open your ${r.environment}">
        Allow
      </button>
    </form>
  </li>`;
}

/**
 * The home's "Visits" section: requests waiting for the student's Allow, then every visit of the
 * last 30 days, a live one first and marked.
 */
export function visitsSection(
  visits: readonly HomeVisit[],
  requests: readonly HomeVisitRequest[] = [],
  returnPath = "/",
): Html | "" {
  if (visits.length === 0 && requests.length === 0) return "";
  const item = (v: HomeVisit) =>
    v.live
      ? html`<li class="visit visit-live" role="status">
          <strong>Teacher ${v.visitor} is in your ${v.environment} now</strong>, since
          <time datetime="${v.from}">${when(v.from)}</time>.
        </li>`
      : html`<li class="visit">
          Teacher ${v.visitor} opened your ${v.environment} on
          <time datetime="${v.from}">${when(v.from)}</time>, for ${minutesText(v.minutes)}.
        </li>`;
  return html`<h2 id="visits">Visits to your environments</h2>
    <p class="muted">
      Teachers allowed to help may open your environments; every visit of the last 30 days is listed here.
    </p>
    <ul class="visits" aria-labelledby="visits">
      ${requests.map((r) => requestItem(r, returnPath))}${visits.map(item)}
    </ul>`;
}
