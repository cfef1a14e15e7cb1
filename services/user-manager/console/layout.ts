/**
 * What every page of the teachers' console shares: its path and URLs, headers, style, the page
 * shell with who is signed in, and the error page. Plain HTML forms, no script at all (the
 * Content-Security-Policy allows none), every interpolated value escaped by the `html` tag
 * (lib/html.ts). Keyboard use is the browser's own: real links, buttons, labels and table
 * headers, and a visible focus ring.
 */
import { html, pageDocument, type Html } from "../../../lib/html.ts";
import { pageSecurityHeaders } from "../../../lib/pageHeaders.ts";

export const CONSOLE_PATH = "/console";

/** Headers of every console page: never cached (it shows live state), no framing, no scripts. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  ...pageSecurityHeaders(),
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
  .problem { color: var(--danger); white-space: pre-wrap; }
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

export function classUrl(template: string, klass?: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ template, ...(klass ? { class: klass } : {}), ...extra });
  return `${CONSOLE_PATH}/class?${query.toString()}`;
}

/** The grade book of a Template (console/gradeBookPages.ts). */
export function gradeBookUrl(template: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/gradebook?${new URLSearchParams({ template, ...extra }).toString()}`;
}

export function rosterUrl(template: string): string {
  return `${CONSOLE_PATH}/roster?${new URLSearchParams({ template }).toString()}`;
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
