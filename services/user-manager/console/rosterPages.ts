/** The console's roster pages: the upload form, the dry-run diff to confirm, and the result. */
import { html, type Html } from "../../../lib/html.ts";
import type { ImportResult } from "../schemas.ts";
import { CONSOLE_PATH, classUrl, consolePage, rosterUrl, type Viewer } from "./layout.ts";

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

/** A list's column: its header, and what a row shows in it. */
interface Column<T> {
  header: string;
  cell: (item: T) => string;
  /** Names, shown in a fixed-width font. */
  mono?: boolean;
}

const LINE: Column<{ line?: number | undefined }> = {
  header: "Line",
  cell: (r) => (r.line === undefined ? "" : String(r.line)),
};
const STUDENT: Column<{ user: string }> = { header: "Student", cell: (r) => r.user };
const TEMPLATE: Column<{ templateName: string }> = { header: "Template", cell: (r) => r.templateName };
const ENVIRONMENT: Column<{ name: string }> = { header: "Environment", cell: (r) => r.name, mono: true };
const WHY: Column<{ reason: string }> = { header: "Why", cell: (r) => r.reason };

/** A cell, and a space after it: a row's text (copied, or read by a screen reader) keeps its words apart. */
function td<T>(column: Column<T>, item: T): Html {
  const text = column.cell(item);
  return column.mono ? html`<td class="mono">${text}</td> ` : html`<td>${text}</td> `;
}

function section<T>(
  id: string,
  title: string,
  items: readonly T[],
  columns: readonly Column<NoInfer<T>>[],
): Html {
  return html`<section id="${id}" aria-labelledby="${id}-title">
    <h2 id="${id}-title">${title} (${items.length})</h2>
    ${
      items.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table>
            <thead>
              <tr>
                ${columns.map((c) => html`<th scope="col">${c.header}</th>`)}
              </tr>
            </thead>
            <tbody>
              ${items.map(
                (item) =>
                  html`<tr>
                    ${columns.map((column) => td(column, item))}
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

function rejectedSections(report: ImportReport): Html {
  return html`${section("rejected", "Rejected rows", report.invalid, [LINE, STUDENT, WHY])}
  ${
    report.duplicates.length > 0
      ? section("duplicates", "Listed more than once (used once)", report.duplicates, [
          STUDENT,
          TEMPLATE,
          { header: "Lines", cell: (d) => d.lines.join(", ") },
        ])
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
      ${section("to-add", "To add", toCreate, [LINE, STUDENT, TEMPLATE])}
      ${
        roster.prune
          ? html`${section("to-remove", "To remove (not on the roster)", report.toDelete, [
                STUDENT,
                TEMPLATE,
                ENVIRONMENT,
              ])}
              <p class="muted" id="prune-scope">
                Only environments of ${templateList(report.pruneTemplates ?? [template])} are removed; other
                Templates' are never touched.
              </p>`
          : ""
      }
      ${section("unchanged", "Unchanged (already have an environment)", report.existing, [
        LINE,
        STUDENT,
        TEMPLATE,
      ])}
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
      ${section("added", "Added", report.created, [LINE, STUDENT, TEMPLATE, ENVIRONMENT])}
      ${
        report.deleted.length > 0
          ? section("removed", "Removed", report.deleted, [STUDENT, TEMPLATE, ENVIRONMENT])
          : ""
      }
      ${report.failed.length > 0 ? section("failed", "Failed", report.failed, [LINE, STUDENT, WHY]) : ""}
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
