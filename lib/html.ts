/**
 * HTML templating for the few pages the services render: every interpolated value is escaped by
 * the `html` tag; only values that are themselves `html` results (or `Html` built on purpose) pass
 * through.
 */

export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (typeof value === "string") return escapeHtml(value);
  if (typeof value === "number" || value === true) return String(value);
  // Anything else (undefined, null, false, objects) renders as nothing rather than "[object Object]".
  return "";
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

export interface PageShell {
  title: string;
  /** The page's stylesheet: each service keeps its own look. */
  style: string;
  /** The main heading; the title when absent. */
  heading?: Html | string | undefined;
  /** Extra elements in <head> (meta refresh, referrer policy, robots). */
  head?: Html | undefined;
  /** The content of <main>, after the heading. */
  body: Html;
  /** After <main>: scripts, which find the page's elements already parsed. */
  end?: Html | undefined;
}

/** The one HTML document every service's pages are built in. */
export function pageDocument(page: PageShell): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${page.title}</title>
        ${page.head}
        <style>
          ${new Html(page.style)}
        </style>
      </head>
      <body>
        <main>
          <h1>${page.heading ?? page.title}</h1>
          ${page.body}
        </main>
        ${page.end}
      </body>
    </html> `.text;
}
