/**
 * The pages a student sees instead of their environment: starting, stopped, missing, failed,
 * unreachable (502) and too slow (504). Plain HTML and CSS, one small inline script on the
 * starting page (allowed by its hash in the Content-Security-Policy), and a meta refresh so every
 * page also works without JavaScript. Every interpolated value is escaped by the `html` tag.
 */
import { createHash } from "node:crypto";
import { CLASS_ARCHIVE_STOPPED_REASON } from "../../../api/v1alpha1/index.ts";
import { html, Html, pageDocument } from "../../../lib/html.ts";
import { localPath } from "../../../lib/localPath.ts";
import { pageSecurityHeaders } from "../../../lib/pageHeaders.ts";

const style = `
  :root { color-scheme: light dark; --bg: #f4f5f7; --card: #fff; --fg: #1d2430; --muted: #5b6474; --accent: #2456c7; }
  @media (prefers-color-scheme: dark) { :root { --bg: #14171c; --card: #1f232a; --fg: #e6e8eb; --muted: #9aa3af; --accent: #6d95f0; } }
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; background: var(--bg); color: var(--fg); }
  main { max-width: 36rem; margin: 12vh auto; background: var(--card); padding: 2rem 2.25rem; border-radius: 12px;
         box-shadow: 0 1px 3px rgba(0,0,0,.12), 0 8px 24px rgba(0,0,0,.06); }
  h1 { font-size: 1.35rem; margin: 0 0 .75rem; display: flex; align-items: center; gap: .6rem; }
  p { margin: .6rem 0; }
  .muted { color: var(--muted); font-size: .92rem; }
  .problem { display: block; white-space: pre-wrap; color: var(--fg); border-left: 3px solid #cf222e; padding: .2rem .6rem; margin-top: .4rem; }
  .status { font-family: ui-monospace, monospace; font-size: .9rem; background: rgba(127,127,127,.12); padding: .1rem .4rem; border-radius: 4px; }
  .actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1.5rem; }
  button, a.button { font: inherit; padding: .55rem 1.2rem; border-radius: 6px; border: 1px solid var(--accent);
         background: var(--accent); color: #fff; text-decoration: none; cursor: pointer; }
  a.secondary { background: transparent; color: var(--accent); }
  .spinner { width: 1.1rem; height: 1.1rem; border: 3px solid rgba(127,127,127,.25); border-top-color: var(--accent);
         border-radius: 50%; animation: spin .9s linear infinite; flex: none; }
  @keyframes spin { to { transform: rotate(360deg); } }
  @media (prefers-reduced-motion: reduce) { .spinner { animation: none; } }
`;

/** Follows /_userland/status; reloads into the environment once it is ready (or needs a new page). */
const startingScript = `(function () {
  var phase = document.getElementById("phase"), message = document.getElementById("message"),
    progress = document.getElementById("progress"), delay = 1000;
  function poll() {
    fetch("/_userland/status", { credentials: "same-origin", cache: "no-store", headers: { accept: "application/json" } })
      .then(function (r) { if (!r.ok && r.status !== 503) throw new Error(String(r.status)); return r.json(); })
      .then(function (s) {
        if (s.state !== "starting") { location.reload(); return; }
        phase.textContent = s.phase || "Pending";
        message.textContent = s.message || "";
        message.className = s.stalled ? "problem" : "";
        progress.textContent = s.progress || "";
        delay = 1000;
        setTimeout(poll, delay);
      })
      .catch(function () { delay = Math.min(delay * 2, 10000); setTimeout(poll, delay); });
  }
  setTimeout(poll, delay);
})();`;

/** A page's one inline script and the CSP hash that allows exactly it. */
export interface InlineScript {
  element: Html;
  hash: string;
}

/**
 * The CSP hash covers the element's text byte for byte, so the element is built here, outside
 * the html`` templates (a formatter re-indenting those would silently block the script).
 */
export function inlineScript(source: string): InlineScript {
  return {
    element: new Html(`<script>${source}</script>`),
    hash: `sha256-${createHash("sha256").update(source).digest("base64")}`,
  };
}

const starting = inlineScript(startingScript);

/** Headers every page gets: no caching (a page stands in for the environment), a strict CSP. */
export function pageHeaders(
  script?: InlineScript,
  formTargets: readonly string[] = [],
): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    ...pageSecurityHeaders({ scriptHash: script?.hash, formTargets, connectSelf: true }),
  };
}

export interface Page {
  status: number;
  title: string;
  body: string;
  /** Extra response headers (Retry-After). */
  headers?: Record<string, string>;
  /** The same information for API clients (Accept: application/json). */
  json: Record<string, unknown>;
  /** Its inline script, allowed by the CSP's hash. */
  script?: InlineScript | undefined;
  /**
   * Origins its forms may end up at besides this one (CSP form-action also governs where a form's
   * redirect goes): the home page's sign-out continues at the auth service.
   */
  formTargets?: readonly string[];
}

export function document(
  title: string,
  body: Html,
  options: {
    refreshSeconds?: number | undefined;
    script?: InlineScript | undefined;
    spinner?: boolean;
    /** Rules added after the common stylesheet (the home page's list). */
    style?: string;
  },
): string {
  const refresh = options.refreshSeconds
    ? html`<meta http-equiv="refresh" content="${options.refreshSeconds}" />`
    : undefined;
  return pageDocument({
    title,
    style: style + (options.style ?? ""),
    head: html`<meta name="robots" content="noindex" />
      ${options.script ? html`<noscript>${refresh}</noscript>` : refresh}`,
    heading: html`${options.spinner ? html`<span class="spinner" aria-hidden="true"></span>` : ""}${title}`,
    body,
    end: options.script?.element,
  });
}

export interface EnvironmentInfo {
  /** The Template's display name, or its name. */
  title: string;
  template: string;
  user: string;
}

/** Where a start is: its progress in words, and whether it is stalled (lib/startProgress.ts). */
export interface StartInfo {
  progress?: string;
  stalled?: boolean;
}

export function startingPage(
  env: EnvironmentInfo,
  phase: string,
  message: string | undefined,
  start: StartInfo = {},
): Page {
  const title = `Your ${env.title} environment is starting`;
  const body = html`<p>
      This usually takes less than a minute. This page continues to your environment by itself once it is
      ready.
    </p>
    <p class="muted">
      Status: <span class="status" id="phase">${phase}</span>
      <span id="message" class="${start.stalled ? "problem" : ""}">${message ?? ""}</span>
    </p>
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

export function failedPage(env: EnvironmentInfo, message: string | undefined): Page {
  const title = `Your ${env.title} environment could not start`;
  const body = html`<p>
      Something is wrong with this environment. Your course administrator has been told by the platform; this
      page checks again every 30 seconds.
    </p>
    ${message ? html`<p class="muted">Details: ${message}</p>` : ""}
    <p class="muted">Signed in as ${env.user}.</p>`;
  return {
    status: 503,
    title,
    body: document(title, body, { refreshSeconds: 30 }),
    headers: { "retry-after": "30" },
    json: { state: "failed", template: env.template, message: message ?? "" },
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
