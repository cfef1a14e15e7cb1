/**
 * The shell of every page the proxy shows in place of an environment or as its own (starting,
 * home, visits, sign-out): the stylesheet, the document around a body, the headers with their
 * strict CSP, and the one inline script a page may carry (allowed by its hash).
 */
import { createHash } from "node:crypto";
import { html, Html, pageDocument } from "../../../lib/html.ts";
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
