/**
 * The pages a teacher meets on a visit (docs/decisions/0012-visits.md): refused, waiting for the
 * student's Allow, the hand-over to the environment's own host, and that host's own few pages.
 * Shared by the router's decision and the visit endpoints, so neither imports the other.
 */
import { html } from "../../../lib/html.ts";
import { simplePage } from "./environmentPages.ts";
import { document, inlineScript, type Page } from "./pageShell.ts";
import { LEAVE_PATH, VISIT_PATH } from "../route/visitTracker.ts";

/**
 * One refusal for an environment that does not exist and one the visitor may not open (no
 * names): a signed-in person learns nothing of who has an environment.
 */
export function visitRefusedPage(): Page {
  return simplePage(
    403,
    "You may not open this environment",
    `Opening a student's environment needs the right to visit it (verb "create" on "userlands/visit" in its namespace; a teacher's environment "userlands/visit-teacher" as well), which you do not have, or the environment does not exist. Ask an admin.`,
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

const handOver = inlineScript(`document.getElementById("enter").submit();`);

/**
 * The console's Open, admitted: the browser posts the visitor's session to the environment's own
 * host (`origin`), its visit's origin, which keeps it in a cookie of its own. A form, so the session
 * never appears in an address, a log or a Referer; sent by the page's one script, or by the button.
 */
export function handOverPage(owner: string, origin: string, token: string): Page {
  const title = `Opening ${owner}'s environment`;
  const body = html`<form id="enter" method="post" action="${origin}${VISIT_PATH}">
    <input type="hidden" name="session" value="${token}" />
    <p>It opens at an address of its own, ${origin}, where nothing of yours answers.</p>
    <div class="actions"><button type="submit">Open ${owner}'s environment</button></div>
  </form>`;
  return {
    status: 200,
    title,
    body: document(title, body, { script: handOver, spinner: true }),
    json: { state: "visit", owner, origin },
    script: handOver,
    formTargets: [origin],
    // The post must carry this page's Origin, which the environment's host checks: under the pages'
    // usual same-origin (or no-referrer) policy a browser sends "Origin: null" to another origin.
    headers: { "referrer-policy": "strict-origin" },
  };
}

/** A visit's cookie that names no valid session now (ended, or two that disagree). */
export function visitEndedPage(): Page {
  return simplePage(
    403,
    "This visit has ended",
    "Open the environment again from the console's class table.",
  );
}

/**
 * The visit's host serves the visited environment and Leave only: the visitor's own pages are at
 * their own addresses, never where the student's code runs.
 */
export function visitOnlyPage(owner: string): Page {
  const title = `This address shows ${owner}'s environment only`;
  const body = html`<p>Your own home page and environments are at their own addresses.</p>
    <form method="post" action="${LEAVE_PATH}">
      <div class="actions"><button type="submit">Leave ${owner}'s environment</button></div>
    </form>`;
  return {
    status: 404,
    title,
    body: document(title, body, {}),
    json: { error: title, leave: LEAVE_PATH },
  };
}

/** After Leave: the visit is over on this host. */
export function leftPage(owner: string): Page {
  return simplePage(200, `You left ${owner}'s environment`, "You may close this tab.");
}
