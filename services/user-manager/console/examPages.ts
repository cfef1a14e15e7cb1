/** The console's exam pages (docs/decisions/0013-exams.md): a class's exams with a form, one exam's state per student. */
import { html, type Html } from "../../../lib/html.ts";
import { WHOLE_TEMPLATE } from "../../../api/v1alpha1/index.ts";
import type { ExamView } from "../exams.ts";
import { formatTime } from "./assignmentPages.ts";
import { CONSOLE_PATH, classUrl, consolePage, type Viewer } from "./layout.ts";

export function examsUrl(template: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/exams?${new URLSearchParams({ template, ...extra }).toString()}`;
}

export function examUrl(template: string, name: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/exam?${new URLSearchParams({ template, name, ...extra }).toString()}`;
}

/** What the form had, to fill it in again after a refusal. */
export type ExamForm = Record<
  "name" | "title" | "class" | "start" | "end" | "zone" | "proctors" | "proctorGroups" | "assignment",
  string
>;

export const EMPTY_EXAM_FORM: ExamForm = {
  name: "",
  title: "",
  class: "",
  start: "",
  end: "",
  zone: "UTC",
  proctors: "",
  proctorGroups: "",
  assignment: "",
};

const PHASE_CLASS: Record<string, string> = {
  Scheduled: "state-Pending",
  Running: "state-Ready",
  Collecting: "state-Starting",
  Over: "state-Stopped",
  Pending: "state-Pending",
};

const time = (iso: string) => html`<time datetime="${iso}">${formatTime(iso)}</time>`;

export interface ExamsView {
  template: string;
  items: ExamView[];
  notice: string | undefined;
  problem: { message: string; form: ExamForm } | undefined;
}

export function examsPage(viewer: Viewer, view: ExamsView): string {
  const { template, items } = view;
  const form = view.problem?.form ?? EMPTY_EXAM_FORM;
  const field = (name: keyof ExamForm, label: string, input: Html, hint = "") =>
    html`<p>
      <label for="e-${name}">${label}</label>${hint ? html` <span class="muted">${hint}</span>` : ""}<br />
      ${input}
    </p>`;
  const text = (name: keyof ExamForm, extra: Html | string = "") =>
    html`<input type="text" id="e-${name}" name="${name}" value="${form[name]}" ${extra} />`;
  const when = (name: "start" | "end") =>
    html`<input type="datetime-local" id="e-${name}" name="${name}" value="${form[name]}" required />`;
  const table = html`<table>
    <caption class="sr-only">
      Exams of ${template}
    </caption>
    <thead>
      <tr>
        <th scope="col">Exam</th>
        <th scope="col">Start</th>
        <th scope="col">End</th>
        <th scope="col">State</th>
        <th scope="col">Students</th>
        <th scope="col">Ready</th>
        <th scope="col">Collected</th>
      </tr>
    </thead>
    <tbody>
      ${items.map(
        (e) =>
          html`<tr>
            <th scope="row">
              <a href="${examUrl(template, e.name)}">${e.title ?? e.name}</a><br /><span class="muted mono"
                >${e.name}${e.class && e.class !== WHOLE_TEMPLATE ? ` · class ${e.class}` : " · every environment"}</span
              >
            </th>
            <td>${time(e.start)}</td>
            <td>${time(e.end)}</td>
            <td><span class="state ${PHASE_CLASS[e.phase] ?? ""}">${e.phase}</span></td>
            <td>${e.students.length}</td>
            <td>${e.ready}</td>
            <td>${e.assignment ? e.collected : "—"}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
  return consolePage(
    `Exams of ${template}`,
    viewer,
    html`${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ""}
      <p class="muted">
        <a href="${classUrl(template)}">The class</a> · <a href="${examsUrl(template)}">Refresh</a>
      </p>
      ${items.length > 0 ? table : html`<p class="notice">No exams yet.</p>`}
      <h2 id="new">Schedule an exam</h2>
      <p class="muted">
        From its start to its end every student's environment of ${template} runs, reachable only by the
        student (signed in again since the start) and the proctors, with no connection out but the cluster's
        DNS; their other environments are stopped. At the end the assignment's work is collected and
        everything returns to how it was.
      </p>
      ${view.problem ? html`<p class="notice error" role="alert">${view.problem.message}</p>` : ""}
      <form method="post" action="${CONSOLE_PATH}/exams/create">
        <input type="hidden" name="template" value="${template}" />
        ${field(
          "name",
          "Name",
          text("name", html`required pattern="[a-z0-9]([-a-z0-9]*[a-z0-9])?" maxlength="63"`),
          "lowercase letters, digits and '-'",
        )}
        ${field("title", "Title", text("title", html`maxlength="200"`))}
        ${field("start", "Start", when("start"))} ${field("end", "End", when("end"))}
        ${field("zone", "Time zone of these times", text("zone"), "e.g. UTC, Europe/Berlin, Asia/Tokyo")}
        ${field("proctors", "Proctors", text("proctors"), "user names, separated by commas (they also need the visit right)")}
        ${field("proctorGroups", "Proctor groups", text("proctorGroups"), "optional: groups, separated by commas")}
        ${field("assignment", "Collect the assignment", text("assignment"), "optional: its hand-ins are collected at the end")}
        ${field("class", "Class", text("class", html`maxlength="63" required`), `the environments labelled with this class are held; ${WHOLE_TEMPLATE} for every environment of the Template`)}
        <p><button type="submit">Schedule</button></p>
      </form>`,
  );
}

const STUDENT_STATE_CLASS: Record<string, string> = {
  Waiting: "state-Pending",
  Starting: "state-Starting",
  Ready: "state-Ready",
  Stopped: "state-Stopped",
  HandInRequested: "state-Starting",
  Collected: "state-Ready",
  NotCollected: "state-Failed",
  Done: "state-Stopped",
};

/** The forms that move an exam's end, while it has not passed: end now, or extend for everyone. */
function steering(exam: ExamView, problem: string | undefined): Html {
  if (exam.phase === "Collecting" || exam.phase === "Over") return html``;
  const hidden = html`<input type="hidden" name="template" value="${exam.templateName}" />
    <input type="hidden" name="name" value="${exam.name}" />
    <input type="hidden" name="from" value="${exam.end}" />`;
  return html`<h2 id="steer">Change the end</h2>
    ${problem ? html`<p class="notice error" role="alert">${problem}</p>` : ""}
    <form method="post" action="${CONSOLE_PATH}/exams/end">
      ${hidden}<input type="hidden" name="end" value="now" />
      <p>
        <button type="submit">End now</button>
        <span class="muted">work is collected at once, then every environment returns to how it was</span>
      </p>
    </form>
    <form method="post" action="${CONSOLE_PATH}/exams/end">
      ${hidden}
      <p>
        <label for="x-end">Extend for everyone to</label>
        <input type="datetime-local" id="x-end" name="endAt" required />
        <label for="x-zone">in the time zone</label>
        <input type="text" id="x-zone" name="zone" value="UTC" />
        <button type="submit">Extend</button>
      </p>
    </form>`;
}

export function examPage(
  viewer: Viewer,
  exam: ExamView,
  notice: string | undefined,
  problem?: string,
): string {
  const proctors = [...exam.proctors.users, ...exam.proctors.groups.map((g) => `group ${g}`)];
  return consolePage(
    `Exam ${exam.title ?? exam.name}`,
    viewer,
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
      <p class="muted">
        <a href="${examsUrl(exam.templateName)}">All exams</a> ·
        <a href="${examUrl(exam.templateName, exam.name)}">Refresh</a>
      </p>
      <p>
        <span class="state ${PHASE_CLASS[exam.phase] ?? ""}" id="exam-phase">${exam.phase}</span>
        ${time(exam.start)} to ${time(exam.end)}
      </p>
      <p class="muted">
        Proctors: ${proctors.length > 0 ? proctors.join(", ") : "none"} · Collects:
        ${exam.assignment ?? "nothing"}${exam.network ? html` · ${exam.network}` : ""}
      </p>
      ${
        exam.students.length === 0
          ? html`<p class="notice">
              ${exam.phase === "Pending" ? "The platform has not seen this exam yet." : "No students in it."}
            </p>`
          : html`<table>
              <caption class="sr-only">
                Students of the exam
              </caption>
              <thead>
                <tr>
                  <th scope="col">Student</th>
                  <th scope="col">State</th>
                  <th scope="col">Environment</th>
                </tr>
              </thead>
              <tbody>
                ${exam.students.map(
                  (s) =>
                    html`<tr>
                      <th scope="row">${s.user}</th>
                      <td>
                        <span class="state ${STUDENT_STATE_CLASS[s.state] ?? ""}">${s.state}</span>${
                          s.message ? html`<br /><span class="muted">${s.message}</span>` : ""
                        }
                      </td>
                      <td class="mono">${s.userland}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      ${steering(exam, problem)}`,
  );
}
