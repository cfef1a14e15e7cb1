/**
 * The pages a teacher meets instead of a student's environment (docs/decisions/0012-visits.md):
 * refused, or waiting for the student's Allow. Shared by the router's decision and the visit
 * endpoints, so neither imports the other.
 */
import { html } from "../../../lib/html.ts";
import { document, simplePage, type Page } from "./environmentPages.ts";
import { LEAVE_PATH } from "../route/visitTracker.ts";

/**
 * One refusal for an environment that does not exist and one the visitor may not open (no
 * names): a signed-in person learns nothing of who has an environment.
 */
export function visitRefusedPage(): Page {
  return simplePage(
    403,
    "You may not open this environment",
    `Opening a student's environment needs the right to visit it (verb "create" on "userlands/visit" in its namespace; a teacher's environment "userlands/visit-teacher" as well), which you do not have, or the environment does not exist. Ask an admin. To go back to your own environment: ${LEAVE_PATH}`,
  );
}

/** The visitor waits for the student's Allow; the page asks again every 3 s by itself. */
export function waitingPage(owner: string): Page {
  const title = `Waiting for ${owner} to allow your visit`;
  const message = `This environment's Template asks its student first. ${owner} sees your request on their home page; this page opens the environment as soon as they click Allow.`;
  return {
    status: 202,
    title,
    body: document(title, html`<p>${message}</p>`, { refreshSeconds: 3, spinner: true }),
    json: { state: "waiting", owner, message },
  };
}
