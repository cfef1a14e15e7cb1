/**
 * The pages a student sees instead of their environment: starting, stopped, missing, failed,
 * unreachable (502) and too slow (504). Plain HTML and CSS, one small inline script on the
 * starting page (allowed by its hash in the Content-Security-Policy), and a meta refresh so every
 * page also works without JavaScript. Every interpolated value is escaped by the `html` tag.
 */
import { CLASS_ARCHIVE_STOPPED_REASON } from "../../../api/v1alpha1/index.ts";
import { html } from "../../../lib/html.ts";
import { localPath } from "../../../lib/localPath.ts";
import { document, inlineScript, type Page } from "./pageShell.ts";

/** Follows /_userland/status; reloads into the environment once it is ready (or needs a new page). */
const startingScript = `(function () {
  var phase = document.getElementById("phase"), message = document.getElementById("message"),
    progress = document.getElementById("progress"), details = document.getElementById("details"),
    detail = document.getElementById("detail"), delay = 1000;
  function poll() {
    fetch("/_userland/status", { credentials: "same-origin", cache: "no-store", headers: { accept: "application/json" } })
      .then(function (r) { if (!r.ok && r.status !== 503) throw new Error(String(r.status)); return r.json(); })
      .then(function (s) {
        if (s.state !== "starting") { location.reload(); return; }
        phase.textContent = s.phase || "Pending";
        message.textContent = s.message || "";
        message.className = s.stalled ? "problem" : "";
        detail.textContent = s.detail || "";
        details.hidden = !s.detail;
        progress.textContent = s.progress || "";
        delay = 1000;
        setTimeout(poll, delay);
      })
      .catch(function () { delay = Math.min(delay * 2, 10000); setTimeout(poll, delay); });
  }
  setTimeout(poll, delay);
})();`;

const starting = inlineScript(startingScript);

export interface EnvironmentInfo {
  /** The Template's display name, or its name. */
  title: string;
  template: string;
  user: string;
}

/** Where a start is: its progress in words, whether it is stalled, the operator's own words (lib/startProgress.ts). */
export interface StartInfo {
  progress?: string;
  stalled?: boolean;
  /** The operator's message where the page says it in plain words: for the course administrator. */
  detail?: string;
  /** Why it restarts, when an exam restarted it (route/exam.ts examRestartWords). */
  exam?: string | undefined;
}

/** The operator's own words, one click away (and kept for the administrator the student tells). */
const detailsFor = (detail: string) =>
  html`<details id="details" ${detail ? "" : "hidden"}>
    <summary>Details for your course administrator</summary>
    <span id="detail" class="status">${detail}</span>
  </details>`;

export function startingPage(
  env: EnvironmentInfo,
  phase: string,
  message: string | undefined,
  start: StartInfo = {},
): Page {
  const title = `Your ${env.title} environment is starting`;
  const body = html`${start.exam ? html`<p class="notice" id="exam-restart">${start.exam}</p>` : ""}
    <p>
      ${start.stalled ? "Your environment cannot start yet." : "This usually takes less than a minute."} This
      page continues to your environment by itself once it is ready.
    </p>
    <p class="muted">
      Status: <span class="status" id="phase">${phase}</span>
      <span id="message" class="${start.stalled ? "problem" : ""}">${message ?? ""}</span>
    </p>
    ${detailsFor(start.detail ?? "")}
    <p class="muted" id="progress">${start.progress ?? ""}</p>
    <p class="muted">Signed in as ${env.user}.</p>`;
  return {
    status: 503,
    title,
    body: document(title, body, { refreshSeconds: 5, script: starting, spinner: true }),
    headers: { "retry-after": "2" },
    json: {
      state: "starting",
      template: env.template,
      phase,
      message: message ?? "",
      progress: start.progress ?? "",
      stalled: start.stalled === true,
      detail: start.detail ?? "",
    },
    script: starting,
  };
}

export function stoppedPage(
  env: EnvironmentInfo,
  options: { canStart: boolean; returnPath: string; reason?: string | undefined },
): Page {
  const title = `Your ${env.title} environment is stopped`;
  const why =
    options.reason === "IdleTimeout"
      ? html`<p>It was stopped after a while without use. Your files are kept.</p>`
      : options.reason === CLASS_ARCHIVE_STOPPED_REASON
        ? html`<p>
            It was stopped at the end of term: your teacher is archiving the class, and your files are being
            copied into the class's archive. Your files are kept.
          </p>`
        : html`<p>Your files are kept while it is stopped.</p>`;
  const action = options.canStart
    ? html`<form method="post" action="/_userland/start" class="actions">
        <input type="hidden" name="rd" value="${localPath(options.returnPath) ?? "/"}" />
        <button type="submit">Start my environment</button>
      </form>`
    : html`<p class="muted">Ask your course administrator to start it again.</p>`;
  return {
    status: 503,
    title,
    body: document(
      title,
      html`${why}${action}
        <p class="muted">Signed in as ${env.user}.</p>`,
      {},
    ),
    json: { state: "stopped", template: env.template, canStart: options.canStart },
  };
}

export function missingPage(env: EnvironmentInfo): Page {
  const title = `You have no ${env.title} environment`;
  const body = html`<p>
      There is no <strong>${env.title}</strong> environment for your account, so there is nothing to open
      here.
    </p>
    <p>
      If you expected one, ask your course administrator to add you; mention your user name below. This page
      checks again by itself.
    </p>
    <p class="muted">Signed in as <span class="status">${env.user}</span>.</p>`;
  return {
    status: 404,
    title,
    // Checks again by itself: an environment created at first login or by an admin right now may
    // reach this replica's cache a moment after the student does.
    body: document(title, body, { refreshSeconds: 5 }),
    json: { state: "missing", template: env.template },
  };
}

export function failedPage(env: EnvironmentInfo, words: { message: string; detail: string }): Page {
  const title = `Your ${env.title} environment could not start`;
  const { message, detail } = words;
  const body = html`<p>
      Something is wrong with this environment that waiting will not fix: tell your course administrator (the
      details below help them). Your files are kept. This page checks again every 30 seconds.
    </p>
    ${message ? html`<p class="problem">${message}</p>` : ""} ${detailsFor(detail)}
    <p class="muted">Signed in as ${env.user}.</p>`;
  return {
    status: 503,
    title,
    body: document(title, body, { refreshSeconds: 30 }),
    headers: { "retry-after": "30" },
    json: { state: "failed", template: env.template, message, detail },
  };
}

export function unknownHostPage(host: string): Page {
  const title = "Nothing is served at this address";
  const body = html`<p>
    No environment belongs to <span class="status">${host}</span>. Check the address you were given.
  </p>`;
  return { status: 404, title, body: document(title, body, {}), json: { state: "unknown-host", host } };
}

export function upstreamErrorPage(
  status: 502 | 504,
  env: EnvironmentInfo | undefined,
  returnPath: string,
): Page {
  const title =
    status === 504 ? "Your environment is taking too long to answer" : "Your environment is not answering";
  const what = env ? env.title : "environment";
  const body =
    status === 504
      ? html`<p>Your ${what} environment did not answer in time. It may be busy; try again in a moment.</p>`
      : html`<p>
          Your ${what} environment is running but refused the connection. It may still be starting up inside,
          or it may have crashed; this page tries again every 10 seconds.
        </p>`;
  return {
    status,
    title,
    body: document(
      title,
      html`${body}
        <div class="actions"><a class="button" href="${localPath(returnPath) ?? "/"}">Try again</a></div>`,
      {
        refreshSeconds: status === 502 ? 10 : undefined,
      },
    ),
    headers: { "retry-after": status === 502 ? "10" : "5" },
    json: { state: status === 504 ? "timeout" : "unreachable" },
  };
}

export function simplePage(status: number, title: string, message: string): Page {
  return {
    status,
    title,
    body: document(title, html`<p>${message}</p>`, {}),
    json: { error: title, message },
  };
}

/** The student already holds as many requests or WebSockets as one student may (forward/limits.ts). */
export function tooManyPage(kind: "http" | "websocket", limit: number): Page {
  const what = kind === "websocket" ? "WebSocket connections" : "requests in progress";
  const title = "Too many connections";
  const message = `You have ${limit} ${what} open to your environments, the most one student may have at once. Close some tabs or wait for them to finish, then try again.`;
  return {
    status: 429,
    title,
    body: document(title, html`<p>${message}</p>`, {}),
    headers: { "retry-after": "5" },
    json: { error: "too many connections", kind, limit, message },
  };
}

/** A WebSocket opened by a page of another site (cross-site WebSocket hijacking). */
export function foreignWebSocketPage(): Page {
  return {
    ...simplePage(403, "Not allowed", "A WebSocket must be opened from this site."),
    json: { error: "WebSocket from a foreign origin" },
  };
}
