/**
 * The visits a student's home lists (docs/decisions/0012-visits.md): every teacher's visit to any
 * of their environments in the last 30 days, newest first, read from the Userlands'
 * `userland.dev/visits` annotation in the proxy's cache (no API call), and a visit going on now
 * marked live. homePage.ts shows them; its script follows them through the home's JSON.
 */
import { UserlandAnnotations, type Userland } from "../../api/v1alpha1/index.ts";
import { parseVisits, VISIT_HISTORY_MS, visitIsLive, visitMinutes } from "../../api/visits.ts";
import { html, type Html } from "../../lib/html.ts";

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

/** What the home's script compares to notice a visit beginning or ending. */
export const visitsSignature = (visits: readonly HomeVisit[]) =>
  visits.map((v) => `${v.visitor}@${v.from}:${String(v.live)}`).join(",");

/** The same in the page's script (the JSON view's `visits`). */
export const VISITS_SIGN_JS = `(v.visits || []).map(function (x) { return x.visitor + "@" + x.from + ":" + x.live; }).join(",")`;

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

/** The home's "Visits" section: every visit of the last 30 days, a live one first and marked. */
export function visitsSection(visits: readonly HomeVisit[]): Html | "" {
  if (visits.length === 0) return "";
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
      ${visits.map(item)}
    </ul>`;
}
