/**
 * The class table's Open: a link to the proxy's `/_userland/visit`, which sends the teacher to the
 * student's environment at its own address once RBAC lets them in (create on userlands/visit;
 * docs/decisions/0012-visits.md). The console shows it on every row: whether the teacher may
 * visit is the proxy's question to ask, on every visit, so a page never grants it.
 */
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { html, type Html } from "../../../lib/html.ts";

/** `base?namespace=<ns>&userland=<name>` */
export function visitUrl(base: URL, userland: Userland): string {
  const url = new URL(base);
  url.searchParams.set("namespace", userland.metadata.namespace ?? "");
  url.searchParams.set("userland", userland.metadata.name ?? "");
  return url.href;
}

export function openLink(row: { user: string; openUrl?: string | undefined }): Html | "" {
  if (!row.openUrl) return "";
  // A new tab: the console stays where it was, and the environment is the student's own page.
  return html`<a
    class="button secondary"
    href="${row.openUrl}"
    target="_blank"
    rel="noopener"
    aria-label="Open ${row.user}'s environment"
    >Open</a
  > `;
}
