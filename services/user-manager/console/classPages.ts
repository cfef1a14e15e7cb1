/** The console's class pages: the Templates and classes the teacher may see, one class, its actions. */
import { html } from "../../../lib/html.ts";
import { assignmentsUrl } from "./assignmentPages.ts";
import { examsUrl } from "./examPages.ts";
import { CONSOLE_PATH, classUrl, consolePage, rosterUrl, type Viewer } from "./layout.ts";
import { endOfTermUrl } from "./endOfTermPages.ts";

export interface ClassSummary {
  template: string;
  /** Userlands of the Template the viewer may see, by class label value ("" when unlabelled). */
  classes: Map<string, number>;
  total: number;
}

/** `where`: the namespaces served, as a phrase (`namespace "ide"`, `any namespace`). */
export function indexPage(
  viewer: Viewer,
  where: string,
  summaries: ClassSummary[],
  classLabel: string,
): string {
  const rows = summaries.map(
    (s) =>
      html`<tr>
        <th scope="row"><a href="${classUrl(s.template)}">${s.template}</a></th>
        <td>${s.total}</td>
        <td>
          ${[...s.classes.entries()]
            .filter(([value]) => value !== "")
            .map(([value, count]) => html`<a href="${classUrl(s.template, value)}">${value}</a> (${count}) `)}
        </td>
      </tr>`,
  );
  return consolePage(
    "Your classes",
    viewer,
    html`<p class="muted">Environments in ${where} that you may manage, by Template.</p>
      ${
        summaries.length > 0
          ? html`<table>
              <caption class="sr-only">
                Templates and their classes
              </caption>
              <thead>
                <tr>
                  <th scope="col">Template</th>
                  <th scope="col">Environments</th>
                  <th scope="col">Classes (label <code>${classLabel}</code>)</th>
                </tr>
              </thead>
              <tbody>
                ${rows}
              </tbody>
            </table>`
          : html`<p class="notice">No environments yet.</p>`
      }
      <h2>Open a class</h2>
      <form method="get" action="${CONSOLE_PATH}/class" class="toolbar">
        <label for="template">Template</label>
        <input type="text" id="template" name="template" required placeholder="e.g. code" />
        <button type="submit">Open</button>
      </form>`,
  );
}

export interface Row {
  name: string;
  user: string;
  state: string;
  /** Why it is stopped or failing, when the platform says; where a start is. */
  detail: string;
  /** The start cannot get further by itself: the detail says why, and stands out. */
  stalled: boolean;
  lastActivity: Date | undefined;
  /** The proxy's address that opens this environment for a visitor (console/visitLink.ts). */
  openUrl?: string;
}

const ago = (then: Date, now: Date): string => {
  const s = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000));
  if (s < 90) return "just now";
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
};

import { openLink } from "./visitLink.ts";

/**
 * Rows one class page shows: a class of 1,000 is ten pages, and one student is a search away
 * (issue 31: a single page of 1,000 rows was 1.7 MB for a teacher to scroll).
 */
export const ROWS_PER_PAGE = 100;

/** What a teacher narrowed the class to: a part of a student's name or id, a state, a page (from 1). */
export interface RowQuery {
  search: string;
  state: string;
  page: number;
}

/** The rows `query` keeps, and the page of them to show. */
export function pageOfRows(
  rows: readonly Row[],
  query: RowQuery,
): { shown: Row[]; matching: number; page: number; pages: number } {
  const needle = query.search.trim().toLowerCase();
  const kept = rows.filter(
    (r) =>
      (needle === "" || r.user.toLowerCase().includes(needle) || r.name.includes(needle)) &&
      (query.state === "" || r.state === query.state),
  );
  const pages = Math.max(1, Math.ceil(kept.length / ROWS_PER_PAGE));
  const page = Math.min(pages, Math.max(1, Number.isInteger(query.page) ? query.page : 1));
  return {
    shown: kept.slice((page - 1) * ROWS_PER_PAGE, page * ROWS_PER_PAGE),
    matching: kept.length,
    page,
    pages,
  };
}

export interface ClassView {
  template: string;
  klass: string | undefined;
  /** Every row of the class, sorted; the page shows those `query` keeps, ROWS_PER_PAGE at a time. */
  rows: Row[];
  query: RowQuery;
  /** A line about what was just done (after a redirect). */
  notice: string | undefined;
  /** Whether the list is every Userland of the Template or only those the viewer may each get. */
  complete: boolean;
  now: Date;
}

export function classPage(viewer: Viewer, view: ClassView): string {
  const { template, klass, query } = view;
  const title = klass ? `Class ${klass} (${template})` : `Class ${template}`;
  const { shown: rows, matching, page, pages } = pageOfRows(view.rows, query);
  const filtered = query.search.trim() !== "" || query.state !== "";
  const pageUrl = (n: number) =>
    classUrl(template, klass, {
      ...(query.search.trim() ? { q: query.search.trim() } : {}),
      ...(query.state ? { state: query.state } : {}),
      ...(n > 1 ? { page: String(n) } : {}),
    });
  const states = [...new Set(view.rows.map((r) => r.state))].sort();
  const first = (page - 1) * ROWS_PER_PAGE + 1;
  const pager =
    pages > 1
      ? html`<p class="toolbar" role="navigation" aria-label="Pages of the class">
          <span>${first}–${first + rows.length - 1} of ${matching}:</span>
          ${page > 1 ? html`<a href="${pageUrl(page - 1)}" rel="prev">Previous</a>` : ""}
          ${
            pages <= 20
              ? Array.from({ length: pages }, (_, i) =>
                  i + 1 === page
                    ? html`<strong aria-current="page">${i + 1}</strong> `
                    : html`<a href="${pageUrl(i + 1)}">${i + 1}</a> `,
                )
              : html`<span>page ${page} of ${pages}</span>`
          }
          ${page < pages ? html`<a href="${pageUrl(page + 1)}" rel="next">Next</a>` : ""}
        </p>`
      : "";
  const hidden = html`<input type="hidden" name="template" value="${template}" />${
      klass ? html`<input type="hidden" name="class" value="${klass}" />` : ""
    }`;
  const finder = html`<form method="get" action="${CONSOLE_PATH}/class" class="toolbar" role="search">
    ${hidden}
    <label for="find">Find a student</label>
    <input type="text" id="find" name="q" value="${query.search}" placeholder="name or id" />
    <label for="state">State</label>
    <select id="state" name="state">
      <option value="">any</option>
      ${states.map((s) => html`<option value="${s}" ${s === query.state ? "selected" : ""}>${s}</option>`)}
    </select>
    <button type="submit" class="secondary">Show</button>
    ${filtered ? html`<a href="${classUrl(template, klass)}">Show all</a>` : ""}
  </form>`;
  const table = html`<table>
    <caption class="sr-only">
      Students of ${title}
    </caption>
    <thead>
      <tr>
        <th scope="col"><span class="sr-only">Select</span></th>
        <th scope="col">Student</th>
        <th scope="col">State</th>
        <th scope="col">Last activity</th>
        <th scope="col">Actions</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r, i) =>
          html`<tr id="row-${r.name}">
            <td>
              <input type="checkbox" name="name" value="${r.name}" id="select-${i}" /><label
                class="sr-only"
                for="select-${i}"
                >Select ${r.user}</label
              >
            </td>
            <td><span class="user">${r.user}</span><br /><span class="muted mono">${r.name}</span></td>
            <td>
              <span class="state state-${r.state}">${r.state}</span>${
                r.detail
                  ? html`<br /><span class="${r.stalled ? "problem" : "muted"}">${r.detail}</span>`
                  : ""
              }
            </td>
            <td>
              ${
                r.lastActivity
                  ? html`<time datetime="${r.lastActivity.toISOString()}"
                      >${ago(r.lastActivity, view.now)}</time
                    >`
                  : html`<span class="muted">never</span>`
              }
            </td>
            <td class="actions">
              ${openLink(r)}<button
                type="submit"
                name="row"
                value="start:${r.name}"
                class="secondary"
                aria-label="Start ${r.user}"
              >
                Start</button
              ><button
                type="submit"
                name="row"
                value="stop:${r.name}"
                class="secondary"
                aria-label="Stop ${r.user}"
              >
                Stop</button
              ><button
                type="submit"
                name="row"
                value="delete:${r.name}"
                class="danger"
                aria-label="Delete ${r.user}"
              >
                Delete
              </button>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
  return consolePage(
    title,
    viewer,
    html`${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ""}
      <p class="muted">
        ${view.rows.length} environment${view.rows.length === 1 ? "" : "s"} of Template
        <code>${template}</code>${
          klass ? html` labelled with class <code>${klass}</code>` : ""
        }${view.complete ? "" : " that you may see one by one (your role names them)"}.
        <a href="${classUrl(template, klass)}">Refresh</a> ·
        <a href="${rosterUrl(template)}">Upload a roster</a> ·
        <a href="${assignmentsUrl(template)}">Assignments</a> ·
        <a href="${endOfTermUrl(template, klass)}">End of term</a>
        ·
        <a href="${examsUrl(template)}">Exams</a>
      </p>
      ${view.rows.length > ROWS_PER_PAGE || filtered ? finder : ""}
      ${filtered ? html`<p class="muted" role="status">${matching} match.</p>` : ""} ${pager}
      ${
        view.rows.length === 0
          ? html`<p class="notice">No environments here yet. Upload a roster to add the students.</p>`
          : rows.length === 0
            ? html`<p class="notice">No student matches.</p>`
            : html`<form method="post" action="${CONSOLE_PATH}/class/actions">
                ${hidden}
                <div class="toolbar" role="group" aria-label="Selected students">
                  <span>Selected:</span>
                  <button type="submit" name="action" value="start">Start</button>
                  <button type="submit" name="action" value="stop" class="secondary">Stop</button>
                  <button type="submit" name="action" value="delete" class="danger">Delete</button>
                  <button type="submit" name="action" value="end-sessions" class="secondary">
                    Sign out everywhere
                  </button>
                </div>
                ${table}
              </form>`
      }
      ${rows.length > 20 ? pager : ""}`,
  );
}

export function confirmDeletePage(
  viewer: Viewer,
  template: string,
  klass: string | undefined,
  targets: { name: string; user: string }[],
): string {
  return consolePage(
    `Delete ${targets.length} environment${targets.length === 1 ? "" : "s"}?`,
    viewer,
    html`<p>
        These students lose their environment; their files follow the Template's reclaim policy (kept unless
        it says Delete).
      </p>
      <ul>
        ${targets.map((t) => html`<li>${t.user} <span class="muted mono">${t.name}</span></li>`)}
      </ul>
      <form method="post" action="${CONSOLE_PATH}/class/actions" class="toolbar">
        <input type="hidden" name="template" value="${template}" />
        ${klass ? html`<input type="hidden" name="class" value="${klass}" />` : ""}
        ${targets.map((t) => html`<input type="hidden" name="name" value="${t.name}" />`)}
        <input type="hidden" name="confirm" value="yes" />
        <button type="submit" name="action" value="delete" class="danger">Delete</button>
        <a href="${classUrl(template, klass)}">Cancel</a>
      </form>`,
  );
}

export interface ActionOutcome {
  name: string;
  status: number;
  message: string;
}

export function actionFailedPage(
  viewer: Viewer,
  template: string,
  klass: string | undefined,
  action: string,
  outcomes: ActionOutcome[],
): string {
  const failed = outcomes.filter((o) => o.status >= 400);
  return consolePage(
    `${failed.length} of ${outcomes.length} could not ${action}`,
    viewer,
    html`<p class="notice error" role="alert">
        ${outcomes.length - failed.length} done; these were refused or failed:
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Environment</th>
            <th scope="col">Answer</th>
          </tr>
        </thead>
        <tbody>
          ${failed.map(
            (o) =>
              html`<tr>
                <td class="mono">${o.name}</td>
                <td>${o.status}: ${o.message}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <p><a href="${classUrl(template, klass)}">Back to the class</a></p>`,
  );
}
