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
