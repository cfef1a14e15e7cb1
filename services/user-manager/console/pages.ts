/**
 * The teachers' console pages: plain HTML forms, no script at all (the Content-Security-Policy
 * allows none), every interpolated value escaped by the `html` tag (lib/html.ts). Keyboard use is
 * the browser's own: real links, buttons, labels and table headers, and a visible focus ring.
 */
import { html, pageDocument, type Html } from "../../../lib/html.ts";
import type { ImportResult } from "../rosterImport.ts";

export const CONSOLE_PATH = "/console";

/** Headers of every console page: never cached (it shows live state), no framing, no scripts. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};

const style = `
  :root { color-scheme: light dark; --bg: #f4f5f7; --card: #fff; --fg: #1d2430; --muted: #5b6474; --accent: #2456c7; --line: rgba(127,127,127,.28); --danger: #b42318; }
  @media (prefers-color-scheme: dark) { :root { --bg: #14171c; --card: #1f232a; --fg: #e6e8eb; --muted: #9aa3af; --accent: #6d95f0; --danger: #f97066; } }
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; background: var(--bg); color: var(--fg); }
  nav { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .5rem 1rem; align-items: baseline;
        font-size: .92rem; color: var(--muted); border-bottom: 1px solid var(--line); padding-bottom: .6rem; margin-bottom: 1rem; }
  main { max-width: 64rem; margin: 2rem auto 3rem; background: var(--card); padding: 1.5rem 2rem 2rem; border-radius: 12px;
         box-shadow: 0 1px 3px rgba(0,0,0,.12), 0 8px 24px rgba(0,0,0,.06); }
  h1 { font-size: 1.4rem; margin: 0 0 .75rem; }
  h2 { font-size: 1.1rem; margin: 1.75rem 0 .5rem; }
  a { color: var(--accent); }
  .muted { color: var(--muted); font-size: .92rem; }
  .notice { border-left: 4px solid var(--accent); padding: .5rem .9rem; background: rgba(127,127,127,.08); }
  .error { border-left-color: var(--danger); }
  table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: .95rem; }
  th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-weight: 600; }
  td.actions { white-space: nowrap; }
  td.actions button + button { margin-left: .35rem; }
  code, .mono { font-family: ui-monospace, monospace; font-size: .88rem; }
  .state { font-size: .85rem; font-weight: 600; padding: .05rem .5rem; border-radius: 999px; border: 1px solid currentColor; white-space: nowrap; }
  .state-Ready { color: #1a7f37; } .state-Starting, .state-Pending { color: #9a6700; } .state-Stopped { color: var(--muted); } .state-Failed { color: var(--danger); }
  .toolbar { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center; margin: .75rem 0; }
  button, a.button { font: inherit; font-size: .92rem; padding: .35rem .9rem; border-radius: 6px; border: 1px solid var(--accent);
         background: var(--accent); color: #fff; text-decoration: none; cursor: pointer; }
  button.secondary { background: transparent; color: var(--accent); }
  button.danger { background: transparent; color: var(--danger); border-color: var(--danger); }
  input[type=text], input[type=file], textarea { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: transparent; color: inherit; }
  textarea { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; font-size: .88rem; }
  label { font-weight: 600; }
  fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0; }
  a:focus-visible, button:focus-visible, input:focus-visible, textarea:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

/** Who is signed in, as the page header shows it. */
export interface Viewer {
  /** The identity the auth service signed in (the session's user). */
  user: string;
  /** The Kubernetes user RBAC sees (prefixed). */
  kubernetesUser: string;
  groups: string[];
  /** Where "Sign out" goes (the auth service's sign-out page). */
  signOutUrl: string;
}

export function consolePage(title: string, viewer: Viewer | undefined, body: Html): string {
  const nav = html`<nav aria-label="Console">
    <a href="${CONSOLE_PATH}/">All classes</a>
    ${
      viewer
        ? html`<span
            >Signed in as <strong id="signed-in-as">${viewer.user}</strong>
            <span class="muted">(RBAC: <code>${viewer.kubernetesUser}</code>)</span> ·
            <a href="${viewer.signOutUrl}">Sign out</a></span
          >`
        : ""
    }
  </nav>`;
  return pageDocument({
    title: `${title} · Userland console`,
    style,
    heading: title,
    head: html`<meta name="robots" content="noindex" />`,
    body: html`${nav}${body}`,
  });
}

export interface ClassSummary {
  template: string;
  /** Userlands of the Template the viewer may see, by class label value ("" when unlabelled). */
  classes: Map<string, number>;
  total: number;
}

export function indexPage(
  viewer: Viewer,
  namespace: string,
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
    html`<p class="muted">
        Environments in namespace <code>${namespace}</code> that you may manage, by Template.
      </p>
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

export function classUrl(template: string, klass?: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ template, ...(klass ? { class: klass } : {}), ...extra });
  return `${CONSOLE_PATH}/class?${query.toString()}`;
}

export function rosterUrl(template: string): string {
  return `${CONSOLE_PATH}/roster?${new URLSearchParams({ template }).toString()}`;
}

export interface Row {
  name: string;
  user: string;
  state: string;
  /** Why it is stopped or failing, when the platform says. */
  detail: string;
  lastActivity: Date | undefined;
}

const ago = (then: Date, now: Date): string => {
  const s = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000));
  if (s < 90) return "just now";
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
};

export interface ClassView {
  template: string;
  klass: string | undefined;
  rows: Row[];
  /** A line about what was just done (after a redirect). */
  notice: string | undefined;
  /** Whether the list is every Userland of the Template or only those the viewer may each get. */
  complete: boolean;
  now: Date;
}

export function classPage(viewer: Viewer, view: ClassView): string {
  const { template, klass, rows } = view;
  const title = klass ? `Class ${klass} (${template})` : `Class ${template}`;
  const hidden = html`<input type="hidden" name="template" value="${template}" />${
      klass ? html`<input type="hidden" name="class" value="${klass}" />` : ""
    }`;
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
                r.detail ? html`<br /><span class="muted">${r.detail}</span>` : ""
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
              <button
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
        ${rows.length} environment${rows.length === 1 ? "" : "s"} of Template <code>${template}</code>${
          klass ? html` labelled with class <code>${klass}</code>` : ""
        }${view.complete ? "" : " that you may see one by one (your role names them)"}.
        <a href="${classUrl(template, klass)}">Refresh</a> ·
        <a href="${rosterUrl(template)}">Upload a roster</a>
      </p>
      ${
        rows.length === 0
          ? html`<p class="notice">No environments here yet. Upload a roster to add the students.</p>`
          : html`<form method="post" action="${CONSOLE_PATH}/class/actions">
              ${hidden}
              <div class="toolbar" role="group" aria-label="Selected students">
                <span>Selected:</span>
                <button type="submit" name="action" value="start">Start</button>
                <button type="submit" name="action" value="stop" class="secondary">Stop</button>
                <button type="submit" name="action" value="delete" class="danger">Delete</button>
              </div>
              ${table}
            </form>`
      }`,
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

export function rosterFormPage(viewer: Viewer, template: string, maxBytes: number): string {
  return consolePage(
    `Upload a roster for ${template}`,
    viewer,
    html`<p>
        A CSV file with a header row and a <code>user</code> column (optional <code>template</code> and
        <code>enabled</code> columns; others are ignored), or JSON
        <code>{"users": ["alice", {"user": "bob", "templateName": "jupyter"}]}</code>. You see what would
        change before anything is done.
      </p>
      <p>
        Each row gives its student an environment of the row's Template, or of <code>${template}</code> when
        it names none: a student in two classes is on two rows.
      </p>
      <form method="post" action="${CONSOLE_PATH}/roster/preview" enctype="multipart/form-data">
        <input type="hidden" name="template" value="${template}" />
        <p>
          <label for="file">Roster file</label><br />
          <input type="file" id="file" name="file" accept=".csv,.json,text/csv,application/json" />
        </p>
        <p>
          <label for="text">…or paste it</label><br />
          <textarea
            id="text"
            name="text"
            rows="8"
            placeholder="user&#10;alice@uni.example&#10;bob@uni.example"
          ></textarea>
        </p>
        <p>
          <input type="checkbox" id="prune" name="prune" value="true" />
          <label for="prune"
            >Also remove environments of ${template} whose student is not on the roster (other Templates' are
            never touched)</label
          >
        </p>
        <p class="muted">At most ${maxBytes} bytes.</p>
        <div class="toolbar">
          <button type="submit">Show the changes</button>
          <a href="${classUrl(template)}">Cancel</a>
        </div>
      </form>`,
  );
}

/** What the roster import answers: its own type, so the console cannot drift from the API. */
export type ImportReport = ImportResult;

function section<T>(
  id: string,
  title: string,
  items: readonly T[],
  columns: string[],
  cells: (item: T) => Html,
): Html {
  return html`<section id="${id}" aria-labelledby="${id}-title">
    <h2 id="${id}-title">${title} (${items.length})</h2>
    ${
      items.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table>
            <thead>
              <tr>
                ${columns.map((c) => html`<th scope="col">${c}</th>`)}
              </tr>
            </thead>
            <tbody>
              ${items.map(
                (item) =>
                  html`<tr>
                    ${cells(item)}
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

const line = (n: number | undefined) => html`<td>${n === undefined ? "" : String(n)}</td>`;

function rejectedSections(report: ImportReport): Html {
  return html`${section(
    "rejected",
    "Rejected rows",
    report.invalid,
    ["Line", "Student", "Why"],
    (r) =>
      html`${line(r.line)}
        <td>${r.user}</td>
        <td>${r.reason}</td>`,
  )}
  ${
    report.duplicates.length > 0
      ? section(
          "duplicates",
          "Listed more than once (used once)",
          report.duplicates,
          ["Student", "Template", "Lines"],
          (d) =>
            html`<td>${d.user}</td>
              <td>${d.templateName}</td>
              <td>${d.lines.join(", ")}</td>`,
        )
      : ""
  }`;
}

export function rosterPreviewPage(
  viewer: Viewer,
  template: string,
  report: ImportReport,
  roster: { text: string; format: "csv" | "json"; prune: boolean },
): string {
  const toCreate = report.toCreate ?? [];
  const changes = toCreate.length + (roster.prune ? report.toDelete.length : 0);
  return consolePage(
    `Roster for ${template}: review the changes`,
    viewer,
    html`<p class="notice" role="status">Nothing has changed yet. Check the lists, then confirm.</p>
      ${section(
        "to-add",
        "To add",
        toCreate,
        ["Line", "Student", "Template"],
        (r) =>
          html`${line(r.line)}
            <td>${r.user}</td>
            <td>${r.templateName}</td>`,
      )}
      ${
        roster.prune
          ? html`${section(
                "to-remove",
                "To remove (not on the roster)",
                report.toDelete,
                ["Student", "Template", "Environment"],
                (r) =>
                  html`<td>${r.user}</td>
                    <td>${r.templateName}</td>
                    <td class="mono">${r.name}</td>`,
              )}
              <p class="muted" id="prune-scope">
                Only environments of ${templateList(report.pruneTemplates ?? [template])} are removed; other
                Templates' are never touched.
              </p>`
          : ""
      }
      ${section(
        "unchanged",
        "Unchanged (already have an environment)",
        report.existing,
        ["Line", "Student", "Template"],
        (r) =>
          html`${line(r.line)}
            <td>${r.user}</td>
            <td>${r.templateName}</td>`,
      )}
      ${rejectedSections(report)}
      ${
        roster.prune && report.invalid.length > 0
          ? html`<p class="notice error">
              The roster has rejected rows, so nobody will be removed: fix them and upload it again.
            </p>`
          : ""
      }
      <form method="post" action="${CONSOLE_PATH}/roster/apply" class="toolbar">
        <input type="hidden" name="template" value="${template}" />
        <input type="hidden" name="format" value="${roster.format}" />
        <input type="hidden" name="roster" value="${roster.text}" />
        ${roster.prune ? html`<input type="hidden" name="prune" value="true" />` : ""}
        <button type="submit" ${changes === 0 ? html`disabled` : ""}>
          Confirm: add ${toCreate.length}${roster.prune ? html`, remove ${report.toDelete.length}` : ""}
        </button>
        <a href="${rosterUrl(template)}">Upload another</a>
        <a href="${classUrl(template)}">Cancel</a>
      </form>`,
  );
}

export function rosterResultPage(viewer: Viewer, template: string, report: ImportReport): string {
  return consolePage(
    `Roster for ${template}: done`,
    viewer,
    html`<p class="notice" role="status">
        Added ${report.created.length}, removed ${report.deleted.length}, ${report.failed.length} failed.
        ${report.message ?? ""}
      </p>
      ${section(
        "added",
        "Added",
        report.created,
        ["Line", "Student", "Template", "Environment"],
        (r) =>
          html`${line(r.line)}
            <td>${r.user}</td>
            <td>${r.templateName}</td>
            <td class="mono">${r.name}</td>`,
      )}
      ${
        report.deleted.length > 0
          ? section(
              "removed",
              "Removed",
              report.deleted,
              ["Student", "Template", "Environment"],
              (r) =>
                html`<td>${r.user}</td>
                  <td>${r.templateName}</td>
                  <td class="mono">${r.name}</td>`,
            )
          : ""
      }
      ${
        report.failed.length > 0
          ? section(
              "failed",
              "Failed",
              report.failed,
              ["Line", "Student", "Why"],
              (r) =>
                html`${line(r.line)}
                  <td>${r.user}</td>
                  <td>${r.reason}</td>`,
            )
          : ""
      }
      ${rejectedSections(report)}
      <p><a href="${classUrl(template)}">Go to the class</a></p>`,
  );
}

/** "a", "a and b", "a, b and c", each as code. */
function templateList(names: readonly string[]): Html {
  return html`${names.map(
    (n, i) => html`${i === 0 ? "" : i === names.length - 1 ? " and " : ", "}<code>${n}</code>`,
  )}`;
}

/** A page for an error; `advice` says what to do about it. */
export function errorPage(viewer: Viewer | undefined, title: string, message: string, advice?: Html): string {
  return consolePage(
    title,
    viewer,
    html`<p class="notice error" role="alert">${message}</p>
      ${advice ?? ""}
      <p><a href="${CONSOLE_PATH}/">Back to the console</a></p>`,
  );
}
