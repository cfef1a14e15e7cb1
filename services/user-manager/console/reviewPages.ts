/**
 * The console's review of one hand-in (docs/decisions/0015-grading.md): the receipt, every test the
 * autograder ran (hidden ones too: teachers see all), the last run's outcome, and the form that
 * applies rubric items, a comment and the autograder's part by hand; and an assignment's rubric.
 */
import { formatBytes } from "../../../lib/formatBytes.ts";
import { html } from "../../../lib/html.ts";
import { assignmentUrl, formatTime } from "./assignmentPages.ts";
import { CONSOLE_PATH, consolePage, gradeBookUrl, type Viewer } from "./layout.ts";
import type { HandInReviewView, RubricItemView } from "../reviewRoutes.ts";

export const reviewUrl = (template: string, name: string, user: string, extra: Record<string, string> = {}) =>
  `${CONSOLE_PATH}/review?${new URLSearchParams({ template, name, user, ...extra }).toString()}`;

export const rubricUrl = (template: string, name: string, extra: Record<string, string> = {}) =>
  `${CONSOLE_PATH}/rubric?${new URLSearchParams({ template, name, ...extra }).toString()}`;

const files = (n: number) => `${n} file${n === 1 ? "" : "s"}`;

export function reviewPage(viewer: Viewer, template: string, r: HandInReviewView, notice?: string): string {
  const receipt = r.receipt
    ? html`<p>
        Handed in
        ${formatTime(r.receipt.requestedAt)}${r.receipt.late ? html` <strong>late</strong>` : ""}${
          r.receipt.deadline ? ` (their deadline ${formatTime(r.receipt.deadline)})` : ""
        }${r.versions.length > 1 ? ` — version ${r.receipt.version} of ${r.versions.length}, the one that counts` : ""}:
        ${files(r.receipt.files)}, ${formatBytes(r.receipt.bytes)}, SHA-256
        <code class="mono">${r.receipt.sha256}</code>. The files are in your environment's collection under
        <code>handins/${r.folder}/</code>, a folder per version.
        ${
          r.receipt.writtenAfterCount > 0
            ? html`<strong
                  >${String(r.receipt.writtenAfterCount)} files were saved after the hand-in's moment</strong
                >
                and before the copy read them (${r.receipt.writtenAfter.join(", ")}): collected as saved then.`
            : ""
        }
      </p>`
    : html`<p class="notice">Not handed in yet.</p>`;
  const tests = r.grade
    ? html`<p>
          The autograder:
          <strong
            >${String(r.grade.score)}${r.grade.maxScore !== null ? ` of ${r.grade.maxScore}` : ""}</strong
          >. Its results.json and output: <code>${r.grade.results}/</code> in your environment's collection.
        </p>
        <table>
          <thead>
            <tr>
              <th scope="col">Test</th>
              <th scope="col">Result</th>
              <th scope="col">Points</th>
              <th scope="col">Students see it</th>
            </tr>
          </thead>
          <tbody>
            ${r.grade.tests.map(
              (t) =>
                html`<tr>
                  <td><code>${t.name}</code></td>
                  <td>${t.status ?? ""}</td>
                  <td>
                    ${t.score === null ? "" : String(t.score)}${t.maxScore === null ? "" : ` of ${t.maxScore}`}
                  </td>
                  <td>${t.visibility === "hidden" ? "never (hidden)" : t.visibility.replace(/_/g, " ")}</td>
                </tr>`,
            )}
          </tbody>
        </table>`
    : html`<p class="muted">No autograder result.</p>`;
  const attempt =
    r.attempt && !r.attempt.ok
      ? html`<p class="notice">
          The last autograder run (${formatTime(r.attempt.time)}) gave no result: ${r.attempt.message}
        </p>`
      : "";
  const applied = new Set(r.review.items);
  const form = html`<form method="post" action="${CONSOLE_PATH}/review">
    <input type="hidden" name="template" value="${template}" />
    <input type="hidden" name="name" value="${r.assignment}" />
    <input type="hidden" name="user" value="${r.user}" />
    ${versionChoice(r)}
    ${
      r.rubric.length
        ? html`<fieldset>
            <legend>Rubric</legend>
            ${r.rubric.map(
              (i) =>
                html`<p>
                  <input
                    type="checkbox"
                    id="i-${i.id}"
                    name="item"
                    value="${i.id}"
                    ${applied.has(i.id) ? html`checked` : ""}
                  />
                  <label for="i-${i.id}"
                    >${i.points >= 0 ? `+${i.points}` : String(i.points)} ${i.description}</label
                  >
                </p>`,
            )}
          </fieldset>`
        : html`<p class="muted">
            This assignment has no rubric: <a href="${rubricUrl(template, r.assignment)}">write one</a>.
          </p>`
    }
    <p>
      <label for="r-comment">Comment for the student</label><br />
      <textarea id="r-comment" name="comment" rows="4" cols="60" maxlength="4000">
${r.review.comment ?? ""}</textarea>
    </p>
    <p>
      <label for="r-score">The autograder's part by hand</label>
      <span class="muted">optional; empty: the autograder's own. A new run leaves it alone.</span><br />
      <input
        type="text"
        id="r-score"
        name="autograderScore"
        inputmode="decimal"
        value="${r.review.autograderScore === null ? "" : String(r.review.autograderScore)}"
      />
    </p>
    <p><button type="submit">Save the review</button></p>
  </form>`;
  return consolePage(
    `${r.user}: ${r.title}`,
    viewer,
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
      <p class="muted">
        <a href="${gradeBookUrl(template)}">Grade book</a> ·
        <a href="${assignmentUrl(template, r.assignment)}">Hand-ins</a> ·
        <a href="${rubricUrl(template, r.assignment)}">Rubric</a>
      </p>
      ${receipt}${attempt}${tests}
      <h2>Review</h2>
      <p class="muted">Students see it with their score once you release the assignment's grades.</p>
      ${form}`,
  );
}

/** The rubric as text: one item per line, `id | points | description`. */
/** Which version counts: the last one unless the teacher picks another (the platform grades it). */
function versionChoice(r: HandInReviewView) {
  if (r.versions.length < 2) return "";
  const picked = r.review.countedVersion;
  const option = (value: string, checked: boolean, label: ReturnType<typeof html> | string) =>
    html`<p>
      <input
        type="radio"
        id="v-${value || "last"}"
        name="countedVersion"
        value="${value}"
        ${checked ? html`checked` : ""}
      />
      <label for="v-${value || "last"}">${label}</label>
    </p>`;
  return html`<fieldset>
    <legend>The version that counts</legend>
    ${option("", picked === null, `The last one (version ${r.versions.at(-1)?.version ?? ""})`)}
    ${r.versions.map((v) =>
      option(
        String(v.version),
        picked === v.version,
        html`Version ${String(v.version)}: ${formatTime(v.requestedAt)}${v.late ? " (late)" : ""},
          ${String(v.files)} files, SHA-256 <code class="mono">${v.sha256.slice(0, 12)}…</code>`,
      ),
    )}
  </fieldset>`;
}

export const rubricText = (items: RubricItemView[]): string =>
  items.map((i) => `${i.id} | ${i.points} | ${i.description}`).join("\n");

export function rubricPage(
  viewer: Viewer,
  template: string,
  name: string,
  text: string,
  notice?: string,
): string {
  return consolePage(
    `Rubric of ${name}`,
    viewer,
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
      <p class="muted"><a href="${gradeBookUrl(template)}">Grade book</a></p>
      <p>
        One item per line: <code>id | points | description</code>. Points may be negative (a deduction). Keep
        an item's id when you change its points or words: every hand-in it was applied to counts the new
        points.
      </p>
      <form method="post" action="${CONSOLE_PATH}/rubric">
        <input type="hidden" name="template" value="${template}" />
        <input type="hidden" name="name" value="${name}" />
        <p>
          <label for="rubric-text">Items</label><br />
          <textarea id="rubric-text" name="items" rows="10" cols="80">${text}</textarea>
        </p>
        <p><button type="submit">Save the rubric</button></p>
      </form>`,
  );
}
