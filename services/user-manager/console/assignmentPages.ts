/** The console's coursework pages: a Template's assignments with a form for a new one, one assignment's hand-ins. */
import { formatBytes } from "../../../lib/formatBytes.ts";
import { html, type Html } from "../../../lib/html.ts";
import type { AssignmentView, HandInRow, HandInTable } from "../assignmentSchemas.ts";
import type { ReceiptView } from "../../../api/studentAssignmentView.ts";
import { HAND_IN_STATES, STATE_LABELS } from "../../../api/handInState.ts";
import { CONSOLE_PATH, classUrl, consolePage, gradeBookUrl, type Viewer } from "./layout.ts";

export function assignmentsUrl(template: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/assignments?${new URLSearchParams({ template, ...extra }).toString()}`;
}

export function assignmentUrl(template: string, name: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/assignment?${new URLSearchParams({ template, name, ...extra }).toString()}`;
}

/** "2026-12-01 09:00 UTC": times the same for every teacher, whatever their browser's zone. */
export function formatTime(iso: string | null): string {
  if (!iso) return "";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

const timeElement = (iso: string | null): Html | string =>
  iso ? html`<time datetime="${iso}">${formatTime(iso)}</time>` : html`<span class="muted">none</span>`;

const count = (n: number | null): string => (n === null ? "—" : String(n));

/** What the form had, to fill it in again after a refusal. */
export type CreateForm = Record<
  "name" | "title" | "folder" | "path" | "deadline" | "lateUntil" | "zone" | "maxFiles" | "maxMiB" | "class",
  string
>;

export const EMPTY_FORM: CreateForm = {
  name: "",
  title: "",
  folder: "",
  path: "",
  deadline: "",
  lateUntil: "",
  zone: "UTC",
  maxFiles: "",
  maxMiB: "",
  class: "",
};

/** A multipart form with one file input (any number of files; zips are unpacked) and its button. */
function uploadForm(
  action: string,
  label: Html | string,
  button: string,
  id: string,
  hint: Html | string = "",
): Html {
  return html`<form method="post" enctype="multipart/form-data" action="${action}" class="upload">
    <label for="${id}">${label}</label>${hint ? html` <span class="muted">${hint}</span>` : ""}<br />
    <input type="file" id="${id}" name="files" multiple required />
    <button type="submit">${button}</button>
  </form>`;
}

export const materialsUploadUrl = (q: { template: string; folder: string; path: string; name?: string }) =>
  `${CONSOLE_PATH}/materials/upload?${new URLSearchParams(q).toString()}`;

export const feedbackUploadUrl = (template: string, name: string, user?: string) =>
  `${CONSOLE_PATH}/assignment/feedback/upload?${new URLSearchParams({ template, name, ...(user ? { user } : {}) }).toString()}`;

const UPLOAD_HINT =
  "several files, or a zip (unpacked); files of the same name are replaced, nothing is deleted";

/** Step two of uploading materials from the assignments page: the files for the chosen folder. */
export function materialsPage(viewer: Viewer, q: { template: string; folder: string; path: string }): string {
  return consolePage(
    `Upload materials to ${q.folder}/${q.path}`,
    viewer,
    html`<p class="muted">
        Into the course folder <code>${q.folder}</code> of Template <code>${q.template}</code>, folder
        <code>${q.path}</code> (made if missing). Students of the Template can read course folders.
        <a href="${assignmentsUrl(q.template)}">Back to the assignments</a>
      </p>
      ${uploadForm(materialsUploadUrl(q), "Files", "Upload", "f-files", UPLOAD_HINT)}`,
  );
}

export interface AssignmentsView {
  template: string;
  items: AssignmentView[];
  /** The Template's course folders (the form's choices). */
  folders: string[];
  /** Whether the Template keeps coursework (spec.coursework.collection): no form without it. */
  hasCollection: boolean;
  notice: string | undefined;
  /** A refused create: its message and the form as sent. */
  problem: { message: string; form: CreateForm } | undefined;
  /** The create form's folder after an upload of materials into it. */
  prefill?: { folder: string; path: string };
}

export function assignmentsPage(viewer: Viewer, view: AssignmentsView): string {
  const { template, items } = view;
  const form = view.problem?.form ?? { ...EMPTY_FORM, ...view.prefill };
  const field = (name: keyof CreateForm, label: string, input: Html, hint = "") =>
    html`<p>
      <label for="f-${name}">${label}</label>${hint ? html` <span class="muted">${hint}</span>` : ""}<br />
      ${input}
    </p>`;
  const text = (name: keyof CreateForm, extra: Html | string = "") =>
    html`<input type="text" id="f-${name}" name="${name}" value="${form[name]}" ${extra} />`;
  const table = html`<table>
    <caption class="sr-only">
      Assignments of ${template}
    </caption>
    <thead>
      <tr>
        <th scope="col">Assignment</th>
        <th scope="col">Deadline</th>
        <th scope="col">Late until</th>
        <th scope="col">Students</th>
        <th scope="col">Distributed</th>
        <th scope="col">Handed in</th>
        <th scope="col">Late</th>
        <th scope="col">Missing</th>
      </tr>
    </thead>
    <tbody>
      ${items.map(
        (a) =>
          html`<tr>
            <th scope="row">
              <a href="${assignmentUrl(template, a.name)}">${a.title}</a><br /><span class="muted mono"
                >${a.name} · ${a.source.folder}/${a.source.path} · release ${a.release}</span
              >
            </th>
            <td>${timeElement(a.deadline)}</td>
            <td>${timeElement(a.lateUntil)}</td>
            <td>${count(a.status.students)}</td>
            <td>${count(a.status.distributed)}</td>
            <td>${count(a.status.handedIn)}</td>
            <td>${count(a.status.late)}</td>
            <td>${count(a.status.missing)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
  const createForm = view.hasCollection
    ? html`<form method="post" action="${CONSOLE_PATH}/assignments/create">
        <input type="hidden" name="template" value="${template}" />
        ${field(
          "name",
          "Name",
          text("name", html`required pattern="[a-z0-9]([-a-z0-9]*[a-z0-9])?" maxlength="63"`),
          "lowercase letters, digits and '-'; students find the files in assignments/<name>/",
        )}
        ${field("title", "Title", text("title", html`required maxlength="200"`), "what students see")}
        ${field(
          "folder",
          "Course folder",
          html`<select id="f-folder" name="folder" required>
            ${view.folders.map(
              (f) => html`<option value="${f}" ${form.folder === f ? html`selected` : ""}>${f}</option>`,
            )}
          </select>`,
        )}
        ${field(
          "path",
          "Folder inside it",
          text("path", html`required placeholder="week1/lab"`),
          "its files are handed out",
        )}
        ${field(
          "deadline",
          "Deadline",
          html`<input type="datetime-local" id="f-deadline" name="deadline" value="${form.deadline}" />`,
          "optional; the platform collects from everyone who has not handed in at the closing time",
        )}
        ${field(
          "lateUntil",
          "Accept late hand-ins until",
          html`<input type="datetime-local" id="f-lateUntil" name="lateUntil" value="${form.lateUntil}" />`,
          "optional, after the deadline",
        )}
        ${field("zone", "Time zone of these times", text("zone"), "e.g. UTC, Europe/Berlin, Asia/Tokyo")}
        ${field("maxFiles", "Most files per hand-in", text("maxFiles", html`inputmode="numeric"`), "default 1000")}
        ${field("maxMiB", "Largest hand-in (MiB)", text("maxMiB", html`inputmode="numeric"`), "default 100")}
        ${field(
          "class",
          "Only the class",
          text("class", html`maxlength="63"`),
          "optional: the environments labelled with this class",
        )}
        <p><button type="submit">Create and publish</button></p>
      </form>`
    : html`<p class="notice">
        Template <code>${template}</code> keeps no coursework yet: an admin sets
        <code>spec.coursework.collection</code> (where hand-ins are kept) and its course folders first.
      </p>`;
  return consolePage(
    `Assignments of ${template}`,
    viewer,
    html`${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ""}
      <p class="muted">
        <a href="${classUrl(template)}">The class</a> · <a href="${gradeBookUrl(template)}">Grade book</a> ·
        <a href="${assignmentsUrl(template)}">Refresh</a>
      </p>
      ${items.length > 0 ? table : html`<p class="notice">No assignments yet.</p>`}
      ${
        view.hasCollection && view.folders.length > 0
          ? html`<h2 id="upload">Upload materials</h2>
              <form method="get" action="${CONSOLE_PATH}/materials" class="toolbar">
                <input type="hidden" name="template" value="${template}" />
                <label for="u-folder">Course folder</label>
                <select id="u-folder" name="folder" required>
                  ${view.folders.map((f) => html`<option value="${f}">${f}</option>`)}
                </select>
                <label for="u-path">Folder inside it</label>
                <input type="text" id="u-path" name="path" required placeholder="week1/lab" />
                <button type="submit" class="secondary">Choose files…</button>
              </form>
              <p class="muted">
                Instead of writing them in your own environment: upload files or a zip into a course folder,
                then create the assignment from that folder.
              </p>`
          : ""
      }
      <h2 id="new">New assignment</h2>
      ${view.problem ? html`<p class="notice error" role="alert">${view.problem.message}</p>` : ""}
      ${createForm}`,
  );
}

function receiptCells(r: ReceiptView | null): Html {
  if (!r)
    return html`<td></td>
      <td></td>
      <td></td>
      <td></td>`;
  return html`<td>
      ${timeElement(r.time)}${r.by === "deadline" ? html`<br /><span class="muted">collected</span>` : ""}
    </td>
    <td>${r.files}${r.skipped > 0 ? html`<br /><span class="muted">${r.skipped} skipped</span>` : ""}</td>
    <td>${formatBytes(r.bytes)}</td>
    <td class="mono" title="${r.sha256}">${r.sha256.slice(0, 12)}…</td>`;
}

const stateClass: Record<string, string> = {
  "on-time": "state-Ready",
  late: "state-Starting",
  collected: "state-Stopped",
  missing: "state-Failed",
  "handing-in": "state-Pending",
};

export function assignmentPage(viewer: Viewer, table: HandInTable, notice: string | undefined): string {
  const a = table.assignment;
  const rows = table.students;
  const summary = HAND_IN_STATES.filter((s) => (table.counts[s] ?? 0) > 0).map(
    (s, i) => html`${i > 0 ? " · " : ""}${STATE_LABELS[s]}: <strong>${table.counts[s] ?? 0}</strong>`,
  );
  const row = (r: HandInRow) =>
    html`<tr id="student-${r.user}">
      <th scope="row"><span class="user">${r.user}</span></th>
      <td>
        <span class="state ${stateClass[r.state] ?? ""}">${r.stateLabel}</span>
        ${
          r.refusedHandIn
            ? html`<div class="muted" title="${r.refusedHandIn.message}">
                hand-in of ${r.refusedHandIn.requestedAt} refused (${r.refusedHandIn.reason})
              </div>`
            : ""
        }
      </td>
      ${receiptCells(r.receipt)}
      <td>
        <form
          method="post"
          enctype="multipart/form-data"
          action="${feedbackUploadUrl(a.templateName, a.name, r.user)}"
        >
          <input type="file" name="files" multiple required aria-label="Feedback files for ${r.user}" />
          <button type="submit" class="secondary">Upload</button>
        </form>
      </td>
      <td>
        ${
          r.keptOwnVersion.length > 0
            ? html`<details>
                <summary>${r.keptOwnVersion.length} file${r.keptOwnVersion.length === 1 ? "" : "s"}</summary>
                <ul class="mono">
                  ${r.keptOwnVersion.map((f) => html`<li>${f}</li>`)}
                </ul>
              </details>`
            : ""
        }
      </td>
    </tr>`;
  return consolePage(
    a.title,
    viewer,
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
      <p class="muted">
        <code>${a.name}</code> of Template <code>${a.templateName}</code>${
          a.class ? html`, class <code>${a.class}</code>` : ""
        }: <code>${a.source.folder}/${a.source.path}</code>. Deadline
        ${timeElement(a.deadline)}${
          a.lateUntil ? html`, late hand-ins until ${timeElement(a.lateUntil)}` : ""
        }. <a href="${assignmentsUrl(a.templateName)}">All assignments</a> ·
        <a href="${assignmentUrl(a.templateName, a.name)}">Refresh</a>
      </p>
      <p>
        Release
        ${a.release}${
          a.status.publishedRelease === null
            ? html` <span class="muted">(not published yet)</span>`
            : html` <span class="muted"
                >(published: release ${a.status.publishedRelease}, ${formatTime(a.status.publishedAt)})</span
              >`
        };
        feedback returned ${a.feedbackRelease} time${a.feedbackRelease === 1 ? "" : "s"}.
      </p>
      <form method="post" action="${CONSOLE_PATH}/assignment/actions" class="toolbar">
        <input type="hidden" name="template" value="${a.templateName}" />
        <input type="hidden" name="name" value="${a.name}" />
        <input type="hidden" name="release" value="${a.release}" />
        <input type="hidden" name="feedbackRelease" value="${a.feedbackRelease}" />
        <button type="submit" name="action" value="publish">Publish again</button>
        <button type="submit" name="action" value="feedback" class="secondary">Return feedback</button>
      </form>
      <p class="muted">
        Publish again hands out the folder's current files: students' files they have not changed are updated,
        their own edits kept (listed below). Return feedback copies what is in the collection's
        <code>feedback/${a.status.collectionFolder ?? a.name}/&lt;student&gt;/</code> into each student's
        <code>assignments/${a.name}/feedback/</code>.
      </p>
      <h2>Uploads</h2>
      ${uploadForm(
        materialsUploadUrl({
          template: a.templateName,
          folder: a.source.folder,
          path: a.source.path,
          name: a.name,
        }),
        html`Materials into <code>${a.source.folder}/${a.source.path}</code>`,
        "Upload materials",
        "u-materials",
        html`${UPLOAD_HINT}; then Publish again`,
      )}
      ${uploadForm(
        feedbackUploadUrl(a.templateName, a.name),
        "Feedback for everyone: one zip, a folder per student",
        "Upload feedback",
        "u-feedback",
        "each folder named as the student or as in Download all hand-ins; then Return feedback",
      )}
      <h2>Hand-ins</h2>
      <p>
        <a
          href="/api/v1/templates/${encodeURIComponent(a.templateName)}/assignments/${encodeURIComponent(a.name)}/archive"
          download
          >Download all hand-ins</a
        >
        <span class="muted">(one zip, a folder per student, as collected)</span>
      </p>
      <p role="status" id="counts">
        ${rows.length} student${rows.length === 1 ? "" : "s"}${rows.length > 0 ? ": " : "."}${summary}
      </p>
      ${
        rows.length === 0
          ? html`<p class="notice">No students in this class yet.</p>`
          : html`<table>
              <caption class="sr-only">
                Hand-ins of ${a.title}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Student</th>
                  <th scope="col">State</th>
                  <th scope="col">Handed in</th>
                  <th scope="col">Files</th>
                  <th scope="col">Size</th>
                  <th scope="col">SHA-256</th>
                  <th scope="col">Feedback files</th>
                  <th scope="col">Kept their own version</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map(row)}
              </tbody>
            </table>`
      }`,
  );
}
