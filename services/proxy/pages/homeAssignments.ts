/**
 * A student's assignments on their home page: each one's card (due times, Hand in or Hand in
 * again, the counted receipt and the earlier versions, the grade they may see, feedback) and the
 * confirm step of a hand-in. What the student may do and see is the user-manager's answer
 * (StudentAssignment); this file only words it.
 */
import { formatBytes } from "../../../lib/formatBytes.ts";
import { html, type Html } from "../../../lib/html.ts";
import { localPath } from "../../../lib/localPath.ts";
import type { StudentAssignment } from "../../../lib/userManagerClient.ts";
import { HOME_PATH, type HomeView } from "./homeView.ts";
import { document, type Page } from "./pageShell.ts";
import { homeStyle } from "./homeStyle.ts";

/** "2026-12-01 09:00 UTC" */
const formatTime = (iso: string) => `${new Date(iso).toISOString().slice(0, 16).replace("T", " ")} UTC`;
const timeOf = (iso: string) => html`<time datetime="${iso}">${formatTime(iso)}</time>`;

/** The receipt: what the platform collected, as it wrote it; the student can compare the hash. */
function receiptOf(a: StudentAssignment): Html {
  const r = a.receipt;
  if (!r) return html``;
  return html`<dl class="receipt" aria-label="Receipt for ${a.title}">
      <dt>${r.by === "deadline" ? "Collected at closing" : "Handed in"}</dt>
      <dd>
        ${timeOf(r.requestedAt)}${r.late ? html` <span class="state state-failed">late</span>` : ""}${
          a.versions.length > 1
            ? html` <span class="muted">(version ${String(r.version)}, the one that counts)</span>`
            : ""
        }
      </dd>
      ${
        r.deadline
          ? html`<dt>Your deadline</dt>
              <dd>${timeOf(r.deadline)}</dd>`
          : ""
      }
      <dt>Files</dt>
      <dd>
        ${r.files}${r.skipped > 0 ? html` <span class="muted">(${r.skipped} left out: links, pipes, devices)</span>` : ""}
      </dd>
      <dt>Total size</dt>
      <dd>${formatBytes(r.bytes)} <span class="muted">(${r.bytes} bytes)</span></dd>
      <dt>SHA-256</dt>
      <dd><code class="hash">${r.sha256}</code></dd>
      ${
        r.writtenAfterCount > 0
          ? html`<dt>Changed after</dt>
              <dd>
                ${String(r.writtenAfterCount)} file${r.writtenAfterCount === 1 ? " was" : "s were"} saved
                after you handed in and before the copy read ${r.writtenAfterCount === 1 ? "it" : "them"}
                (${r.writtenAfter.join(", ")}): collected as saved then.
              </dd>`
          : ""
      }
    </dl>
    ${earlierVersions(a)}`;
}

/** The versions before the counted one (or after it, when a teacher picked an earlier one). */
function earlierVersions(a: StudentAssignment): Html | "" {
  const others = a.versions.filter((v) => v.version !== a.receipt?.version);
  if (others.length === 0) return "";
  return html`<p class="muted">
    Also handed in:
    ${others.map(
      (v, i) =>
        html`${i > 0 ? ", " : ""}version ${String(v.version)} at
        ${timeOf(v.requestedAt)}${v.late ? " (late)" : ""}`,
    )}.
  </p>`;
}

/** The Hand in button (the confirm step follows); again, after a hand-in, with the versions left. */
function handInForm(a: StudentAssignment, returnPath: string): Html {
  const again = a.versions.length > 0;
  const left = a.maxVersions - a.versions.length;
  return html`<form method="post" action="/_userland/handin">
    <input type="hidden" name="template" value="${a.templateName}" />
    <input type="hidden" name="assignment" value="${a.name}" />
    <input type="hidden" name="rd" value="${returnPath}" />
    <button type="submit" aria-label="${again ? "Hand in again" : "Hand in"} ${a.title}">
      ${again ? "Hand in again" : "Hand in"}
    </button>
    ${again ? html`<span class="muted">${String(left)} more hand-in${left === 1 ? "" : "s"} allowed; the last one counts.</span>` : ""}
  </form>`;
}

/**
 * The grade as the user-manager lets this student see it (api/studentGrade.ts
 * decides; nothing hidden reaches this page): the score once released, and their tests.
 */
function gradeOf(a: StudentAssignment): Html | "" {
  const g = a.grade;
  if (!g) return "";
  const total =
    g.released && g.score !== null
      ? html`<p>
          <strong>Score: ${String(g.score)}${g.maxScore !== null ? ` of ${g.maxScore}` : ""}</strong>${
            g.latePenaltyPercent ? ` (less ${g.latePenaltyPercent}% for lateness)` : ""
          }
        </p>`
      : html`<p class="muted">Your tests so far; the score comes when your teacher releases grades.</p>`;
  const mark = (passed: boolean | null) => (passed === null ? "•" : passed ? "✓ passed" : "✗ failed");
  const items = g.rubric.map(
    (r) => html`<li>${r.points >= 0 ? `+${r.points}` : String(r.points)} ${r.description}</li>`,
  );
  const review = html`${
    items.length
      ? html`<ul class="rubric">
          ${items}
        </ul>`
      : ""
  }${
    g.comment
      ? html`<p class="muted">Your teacher's comment:</p>
          <blockquote class="comment">${g.comment}</blockquote>`
      : ""
  }`;
  return html`<div class="grade" data-released="${String(g.released)}">
    ${total} ${review}
    ${
      g.tests.length
        ? html`<ul class="tests">
            ${g.tests.map(
              (t) =>
                html`<li>
                  ${mark(t.passed)} <code>${t.name}</code>${
                    t.maxScore !== null ? ` — ${t.score ?? 0} of ${t.maxScore}` : ""
                  }
                </li>`,
            )}
          </ul>`
        : ""
    }
  </div>`;
}

export function assignmentCard(a: StudentAssignment, view: HomeView, returnPath: string): Html {
  const times = html`${a.deadline ? html`Due ${timeOf(a.deadline)}${a.extended ? " (your extended deadline)" : ""}.` : "No deadline."}${
    a.lateUntil ? html` Late hand-ins until ${timeOf(a.lateUntil)}.` : ""
  }`;
  const where = html`Files in <code>assignments/${a.name}/</code>.`;
  let body: Html;
  if (a.state === "handing-in")
    body = html`<p>
      Handed in ${a.handInRequestedAt ? timeOf(a.handInRequestedAt) : ""}: being collected; the receipt
      appears here in a moment.
    </p>`;
  else if (a.receipt) body = receiptOf(a);
  else if (!a.open) body = html`<p>Closed: not handed in.</p>`;
  else
    body = html`<p class="muted">
        ${a.distributed ? where : "Not in your environment yet: it arrives at its next start."}
      </p>
      ${view.canAct ? handInForm(a, returnPath) : ""}`;
  // A refused hand-in stays refused (issue 41 item 5): the student reads why and hands in again.
  const refused =
    a.refusedHandIn && a.state !== "handing-in"
      ? html`<p class="refused" role="alert">
          Your hand-in of ${timeOf(a.refusedHandIn.requestedAt)} was refused: ${a.refusedHandIn.message}.
          Nothing was collected${a.open ? "; fix it and hand in again." : "."}
        </p>`
      : "";
  const feedback =
    a.feedbackFiles && a.feedbackFiles > 0
      ? html`<p>
          Feedback: ${a.feedbackFiles} file${a.feedbackFiles === 1 ? "" : "s"} in
          <code>assignments/${a.name}/feedback/</code>.
        </p>`
      : "";
  return html`<li class="card" id="assignment-${a.templateName}-${a.name}" data-state="${a.state}">
    <div class="card-head">
      <h3>${a.title}</h3>
      <span
        class="state ${a.receipt && !a.receipt.late ? "state-ready" : a.open ? "state-starting" : "state-stopped"}"
        >${a.stateLabel}</span
      >
    </div>
    <p class="muted">${times}</p>
    ${refused}${body}${gradeOf(a)}${feedback}${a.receipt && a.open && view.canAct ? handInForm(a, returnPath) : ""}
  </li>`;
}

/** The confirm step of Hand in: what is collected, and whether the student can hand in again. */
export function handInConfirmPage(a: StudentAssignment, returnPath: string): Page {
  const title = `Hand in ${a.title}?`;
  const back = localPath(returnPath) ?? HOME_PATH;
  const left = a.maxVersions - a.versions.length - 1;
  const body = html`<p>
      What is in <code>assignments/${a.name}/</code> now is collected; changes you make afterwards are not
      part of this hand-in.
      ${
        left > 0
          ? html`You can hand in again ${a.closesAt ? html`until ${timeOf(a.closesAt)}` : ""} (${String(left)}
            more time${left === 1 ? "" : "s"}); every hand-in is kept and the last one counts.`
          : html`<strong>This is your last hand-in of this assignment: it is final.</strong>`
      }
    </p>
    ${a.deadline ? html`<p class="muted">Due ${timeOf(a.deadline)}.</p>` : ""}
    <form method="post" action="/_userland/handin" class="actions">
      <input type="hidden" name="template" value="${a.templateName}" />
      <input type="hidden" name="assignment" value="${a.name}" />
      <input type="hidden" name="rd" value="${back}" />
      <input type="hidden" name="confirm" value="yes" />
      <button type="submit" aria-label="Yes, hand in ${a.title}">Yes, hand in</button>
      <a href="${back}">Cancel</a>
    </form>`;
  return {
    status: 200,
    title,
    body: document(title, body, { style: homeStyle }),
    json: { confirm: true, assignment: a },
  };
}
