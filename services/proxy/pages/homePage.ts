/**
 * The student's home page: their environments (state, last use, Open / Start / Stop), their
 * assignments (Hand in, with a confirm step; the receipt) and the self-service Templates they may
 * create one of. Plain HTML forms that post to the proxy's own
 * endpoints, so it works without JavaScript (a <noscript> refresh while something is starting);
 * with JavaScript a small inline script, allowed by its hash like the starting page's, follows
 * `GET /_userland/home` (the same view as JSON) and reloads when a state changes.
 */
import { html, type Html } from "../../../lib/html.ts";
import { localPath } from "../../../lib/localPath.ts";
import {
  HOME_PATH,
  type HomeEnvironment,
  type HomeState,
  type HomeView,
  type SelfServiceOffer,
} from "./homeView.ts";
import { document, inlineScript, type Page } from "./pageShell.ts";
import { visitsSection, visitsSignature, VISITS_SIGN_JS } from "./homeVisits.ts";
import { examsSection, examsSignature, EXAMS_SIGN_JS } from "../route/exam.ts";
import { homeStyle } from "./homeStyle.ts";
import { assignmentCard } from "./homeAssignments.ts";

/**
 * Follows the home's JSON view: a state that changes (or an environment that appears or goes)
 * reloads the page, so its buttons fit; otherwise only the operator's message is updated. Polls
 * every 2 s while something is starting, else every 15 s; backs off while the proxy is away.
 */
const homeScript = `(function () {
  var signature = document.getElementById("home").getAttribute("data-signature");
  function sign(v) {
    return v.environments.map(function (e) { return e.name + ":" + e.state; }).join(",") + "|" +
      v.available.map(function (a) { return a.template + ":" + a.requested; }).join(",") + "|" +
      v.assignments.map(function (a) { return a.templateName + "/" + a.name + ":" + a.state + ":" + (a.feedbackFiles || 0) + ":" + (a.grade ? a.grade.released + "/" + a.grade.score + "/" + a.grade.tests.length : "-"); }).join(",") + "|" +

      ${VISITS_SIGN_JS} + "|" +
      ${EXAMS_SIGN_JS};
  }
  function busy() { return /:(starting|true|handing-in)\\b/.test(signature); }
  function poll() {
    fetch("${HOME_PATH}", { credentials: "same-origin", cache: "no-store", headers: { accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (v) {
        if (sign(v) !== signature) { location.reload(); return; }
        v.environments.forEach(function (e) {
          var item = document.getElementById("env-" + e.name), message = item && item.querySelector(".message");
          if (message) message.textContent = e.detail;
        });
        setTimeout(poll, busy() ? 2000 : 15000);
      })
      .catch(function () { setTimeout(poll, 15000); });
  }
  setTimeout(poll, busy() ? 2000 : 15000);
})();`;

const script = inlineScript(homeScript);

const STATE_LABEL: Record<HomeState, string> = {
  ready: "Ready",
  starting: "Starting",
  stopped: "Stopped",
  failed: "Failed",
};

/** "5 minutes ago" from an RFC 3339 time; "" when it cannot be read. */
export function timeAgo(iso: string, now: Date): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, Math.round((now.getTime() - then) / 1000));
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"} ago`;
  if (seconds < 60) return "just now";
  if (seconds < 3600) return plural(Math.floor(seconds / 60), "minute");
  if (seconds < 48 * 3600) return plural(Math.floor(seconds / 3600), "hour");
  return plural(Math.floor(seconds / 86_400), "day");
}

/** A form posting to one of the proxy's own endpoints, back to this page afterwards. */
function actionForm(
  action: string,
  field: string,
  value: string,
  label: string,
  text: string,
  returnPath: string,
  primary: boolean,
): Html {
  return html`<form method="post" action="/_userland/${action}">
    <input type="hidden" name="${field}" value="${value}" />
    <input type="hidden" name="rd" value="${returnPath}" />
    <button type="submit" class="${primary ? "primary" : "secondary"}" aria-label="${label}">${text}</button>
  </form>`;
}

function environmentCard(env: HomeEnvironment, view: HomeView, returnPath: string, now: Date): Html {
  const used = env.lastActivity
    ? html`Last used
        <time datetime="${env.lastActivity}" title="${env.lastActivity}"
          >${timeAgo(env.lastActivity, now) || env.lastActivity}</time
        >.`
    : html`Not used yet.`;
  const open = env.openUrl
    ? html`<a
        class="button${env.state === "ready" ? "" : " secondary"}"
        href="${env.openUrl}"
        aria-label="Open ${env.title}"
        >Open</a
      >`
    : html`<span class="muted">No address serves this environment; ask your course administrator.</span>`;
  const action =
    !view.canAct || (env.held && env.state === "stopped")
      ? ""
      : env.state === "stopped"
        ? actionForm("start", "userland", env.name, `Start ${env.title}`, "Start", returnPath, true)
        : actionForm("stop", "userland", env.name, `Stop ${env.title}`, "Stop", returnPath, false);
  return html`<li class="card" id="env-${env.name}" data-state="${env.state}">
    <div class="card-head">
      <h3>${env.title}</h3>
      <span class="state state-${env.state}">${STATE_LABEL[env.state]}</span>
    </div>
    ${env.description ? html`<p>${env.description}</p>` : ""}
    <p class="muted message">${env.detail}</p>
    <p class="muted">${used}</p>
    <div class="actions">
      ${open}${action}${env.downloadUrl ? html`<a class="button secondary" href="${env.downloadUrl}" download aria-label="Download my work in ${env.title} (a zip of your home folder)">Download my work</a>` : ""}
    </div>
  </li>`;
}

function offerCard(offer: SelfServiceOffer, view: HomeView, returnPath: string): Html {
  const action = offer.requested
    ? html`<p class="muted">Being created; it appears above in a moment.</p>`
    : view.canAct
      ? html`<div class="actions">
          ${actionForm("create", "template", offer.template, `Create and start ${offer.title}`, "Create and start", returnPath, true)}
        </div>`
      : html`<p class="muted">Ask your course administrator for one.</p>`;
  return html`<li class="card" id="offer-${offer.template}">
    <div class="card-head"><h3>${offer.title}</h3></div>
    ${offer.description ? html`<p>${offer.description}</p>` : ""} ${action}
  </li>`;
}

/** What the script compares to notice a change (the same as its `sign`). */
function signature(view: HomeView): string {
  return (
    view.environments.map((e) => `${e.name}:${e.state}`).join(",") +
    "|" +
    view.available.map((a) => `${a.template}:${String(a.requested)}`).join(",") +
    "|" +
    // Feedback and grades come without a change of state: counted in, so the page shows them by itself.
    view.assignments
      .map(
        (a) =>
          `${a.templateName}/${a.name}:${a.state}:${a.feedbackFiles ?? 0}:${a.grade ? `${String(a.grade.released)}/${String(a.grade.score)}/${a.grade.tests.length}` : "-"}`,
      )
      .join(",") +
    "|" +
    visitsSignature(view.visits, view.visitRequests) +
    "|" +
    examsSignature(view.exams)
  );
}

/** The home page; `returnPath` is where its forms come back to (this page's own path). */
export function homePage(view: HomeView, returnPath: string, now = new Date()): Page {
  const back = localPath(returnPath) ?? HOME_PATH;
  const title = "Your environments";
  const environments = view.environments.length
    ? html`<ul class="cards" aria-label="Your environments">
        ${view.environments.map((env) => environmentCard(env, view, back, now))}
      </ul>`
    : html`<p id="empty">
        <strong>You have no environments yet.</strong> Your teacher assigns them; they appear here by
        themselves.
      </p>`;
  const available = view.available.length
    ? html`<h2 id="available">Available to you</h2>
        <p class="muted">Anyone signed in may create one of these for themselves.</p>
        <ul class="cards" aria-labelledby="available">
          ${view.available.map((offer) => offerCard(offer, view, back))}
        </ul>`
    : "";
  const assignments =
    view.assignments.length > 0
      ? html`<h2 id="assignments">Your assignments</h2>
          <ul class="cards" aria-labelledby="assignments">
            ${view.assignments.map((a) => assignmentCard(a, view, back))}
          </ul>`
      : view.assignmentsUnavailable
        ? html`<h2 id="assignments">Your assignments</h2>
            <p class="muted">Your assignments cannot be shown right now; try again in a minute.</p>`
        : "";
  const busy =
    view.environments.some((e) => e.state === "starting") ||
    view.available.some((a) => a.requested) ||
    view.assignments.some((a) => a.state === "handing-in");
  const body = html`<div id="home" data-signature="${signature(view)}">
    ${
      view.canAct
        ? // Sign-out ends the session on every proxy replica first (api/sessions.ts), then the auth
          // service clears this browser; "everywhere" ends the student's other sessions too.
          html`<form method="post" action="/_userland/signout" class="muted">
            Signed in as <span class="status">${view.user}</span>.
            <button type="submit" name="everywhere" value="no" class="secondary">Sign out</button>
            <button type="submit" name="everywhere" value="yes" class="secondary">Sign out everywhere</button>
          </form>`
        : html`<p class="muted">
            Signed in as <span class="status">${view.user}</span>. <a href="${view.signOutUrl}">Sign out</a>
          </p>`
    }
    ${examsSection(view.exams)}${environments}${assignments}${visitsSection(view.visits, view.visitRequests, back)}${available}
  </div>`;
  return {
    status: 200,
    title,
    body: document(title, body, { script, refreshSeconds: busy ? 5 : undefined, style: homeStyle }),
    json: { ...view },
    script,
    // Sign-out continues at the auth service's page (a redirect form-action must allow).
    formTargets: view.canAct ? [new URL(view.signOutUrl).origin] : [],
  };
}
