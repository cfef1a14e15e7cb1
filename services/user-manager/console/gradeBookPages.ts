/**
 * The console's grade book page (docs/decisions/0015-grading.md): students × assignments of one
 * Template with each score (after the late penalty), late, missing and extension marked, sortable
 * by any column, the CSV files for Canvas and Moodle, and the form that gives one student their own
 * deadline.
 */
import { html, type Html } from "../../../lib/html.ts";
import type { GradeBook, GradeBookCell } from "../gradebook.ts";
import { assignmentsUrl, formatTime } from "./assignmentPages.ts";
import { CONSOLE_PATH, consolePage, gradeBookUrl, type Viewer } from "./layout.ts";
import { reviewUrl, rubricUrl } from "./reviewPages.ts";

export const gradeBookCsvUrl = (template: string, format: "canvas" | "moodle") =>
  `${CONSOLE_PATH}/gradebook.csv?${new URLSearchParams({ template, format }).toString()}`;

export interface GradeBookView {
  template: string;
  book: GradeBook;
  /** "user" or an assignment's name, and the direction. */
  sort: { by: string; descending: boolean };
  notice: string | undefined;
}

/** Rows in the order asked for: by user, or by an assignment's score (ungraded last either way). */
export function sortRows(book: GradeBook, by: string, descending: boolean): GradeBook["students"] {
  const rows = [...book.students];
  const sign = descending ? -1 : 1;
  if (by === "user" || !book.assignments.some((a) => a.name === by))
    return rows.sort((a, b) => sign * a.user.localeCompare(b.user));
  const score = (r: GradeBook["students"][number]) => r.cells[by]?.score ?? null;
  return rows.sort((a, b) => {
    const x = score(a);
    const y = score(b);
    if (x === null || y === null) return x === y ? a.user.localeCompare(b.user) : x === null ? 1 : -1;
    return sign * (x - y) || a.user.localeCompare(b.user);
  });
}

function cell(c: GradeBookCell | undefined, review: string): Html {
  if (!c) return html`<td></td>`;
  const marks = [
    c.late ? (c.latePenaltyPercent ? `late −${c.latePenaltyPercent}%` : "late") : "",
    c.missing ? "missing" : "",
    c.extended ? "extension" : "",
    c.versions > 1 ? `version ${c.countedVersion ?? ""} of ${c.versions}` : "",
    c.regradedFrom !== null ? `was ${c.regradedFrom} before the autograder changed` : "",
  ].filter(Boolean);
  return html`<td title="${c.summary}">
    <a href="${review}"
      >${c.score === null ? html`<span class="muted">${c.state === "missing" ? "—" : "not graded"}</span>` : String(c.score)}</a
    >
    ${marks.length ? html`<br /><span class="muted">${marks.join(", ")}</span>` : ""}
  </td>`;
}

export function gradeBookPage(viewer: Viewer, view: GradeBookView): string {
  const { template, book, sort } = view;
  const sortLink = (by: string, label: string) => {
    const descending = sort.by === by ? !sort.descending : by !== "user";
    const arrow = sort.by === by ? (sort.descending ? " ↓" : " ↑") : "";
    return html`<a href="${gradeBookUrl(template, { sort: by, dir: descending ? "desc" : "asc" })}"
      >${label}${arrow}</a
    >`;
  };
  const table = html`<table>
    <caption class="sr-only">
      Grade book of ${template}
    </caption>
    <thead>
      <tr>
        <th scope="col">${sortLink("user", "Student")}</th>
        ${book.assignments.map(
          (a) =>
            html`<th scope="col">
              ${sortLink(a.name, a.title)}<br /><span class="muted"
                >${a.points === null ? "" : `of ${a.points}`}${a.deadline ? ` · due ${formatTime(a.deadline)}` : ""}</span
              >
              <form method="post" action="${CONSOLE_PATH}/gradebook/release">
                <input type="hidden" name="template" value="${template}" />
                <input type="hidden" name="assignment" value="${a.name}" />
                <input type="hidden" name="released" value="${a.released ? "false" : "true"}" />
                <button
                  type="submit"
                  class="secondary"
                  aria-label="${a.released ? "Hide" : "Release"} the grades of ${a.title}"
                >
                  ${a.released ? "Hide grades" : "Release grades"}
                </button>
              </form>
              ${a.released ? html`<span class="muted">released</span>` : ""}
              <a href="${rubricUrl(template, a.name)}" class="muted">rubric</a>
            </th>`,
        )}
      </tr>
    </thead>
    <tbody>
      ${sortRows(book, sort.by, sort.descending).map(
        (row) =>
          html`<tr>
            <th scope="row">${row.user}</th>
            ${book.assignments.map((a) => cell(row.cells[a.name], reviewUrl(template, a.name, row.user)))}
          </tr>`,
      )}
    </tbody>
  </table>`;
  const extensionRows = book.assignments.flatMap((a) =>
    a.extensions.map(
      (e) =>
        html`<tr>
          <td>${a.title}</td>
          <td>${e.user}</td>
          <td>${formatTime(e.deadline)}${e.lateUntil ? ` (late until ${formatTime(e.lateUntil)})` : ""}</td>
          <td>${e.note ?? ""}</td>
          <td>
            <form method="post" action="${CONSOLE_PATH}/gradebook/extension/remove">
              <input type="hidden" name="template" value="${template}" />
              <input type="hidden" name="assignment" value="${a.name}" />
              <input type="hidden" name="user" value="${e.user}" />
              <button type="submit">Take back</button>
            </form>
          </td>
        </tr>`,
    ),
  );
  const extensionForm = html`<form method="post" action="${CONSOLE_PATH}/gradebook/extension">
    <input type="hidden" name="template" value="${template}" />
    <p>
      <label for="x-assignment">Assignment</label><br />
      <select id="x-assignment" name="assignment" required>
        ${book.assignments.map((a) => html`<option value="${a.name}">${a.title}</option>`)}
      </select>
    </p>
    <p>
      <label for="x-user">Student</label><br />
      <input type="text" id="x-user" name="user" required list="x-students" />
      <datalist id="x-students">
        ${book.students.map((s) => html`<option value="${s.user}"></option>`)}
      </datalist>
    </p>
    <p>
      <label for="x-deadline">Their deadline</label><br />
      <input type="datetime-local" id="x-deadline" name="deadline" required />
    </p>
    <p>
      <label for="x-lateUntil">Their late hand-ins until</label> <span class="muted">optional</span><br />
      <input type="datetime-local" id="x-lateUntil" name="lateUntil" />
    </p>
    <p>
      <label for="x-zone">Time zone of these times</label><br />
      <input type="text" id="x-zone" name="zone" value="UTC" />
    </p>
    <p>
      <label for="x-note">Note</label> <span class="muted">for teachers, e.g. "accommodation"</span><br />
      <input type="text" id="x-note" name="note" maxlength="200" />
    </p>
    <p><button type="submit">Give the extension</button></p>
  </form>`;
  return consolePage(
    `Grade book of ${template}`,
    viewer,
    html`${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ""}
      <p class="muted">
        Scores are the autograder's plus the rubric items applied, less any late penalty; a cell without one
        is not graded yet. Hover a score for its tests. <a href="${assignmentsUrl(template)}">Assignments</a>
      </p>
      <p>
        Download for <a href="${gradeBookCsvUrl(template, "canvas")}">Canvas</a> (Grades → Import; rows match
        by SIS Login ID) or <a href="${gradeBookCsvUrl(template, "moodle")}">Moodle</a> (Grades → Import → CSV
        file; map Email address or ID number, each grade and feedback column).
      </p>
      ${book.students.length === 0 ? html`<p>No student has a hand-in to grade yet.</p>` : table}
      <h2>Extensions</h2>
      <p class="muted">A student's own deadline: nobody else's changes; their receipt names it.</p>
      ${
        extensionRows.length
          ? html`<table>
              <thead>
                <tr>
                  <th scope="col">Assignment</th>
                  <th scope="col">Student</th>
                  <th scope="col">Their deadline</th>
                  <th scope="col">Note</th>
                  <th scope="col"></th>
                </tr>
              </thead>
              <tbody>
                ${extensionRows}
              </tbody>
            </table>`
          : html`<p>None.</p>`
      }
      ${book.assignments.length ? extensionForm : ""}`,
  );
}
