/**
 * The few HTML pages a person sees (errors, refusals, provider choice, logout). Every interpolated
 * value is escaped by the `html` tag; only values that are themselves `html` results pass through.
 */
import { html, pageDocument, type Html } from "../../lib/html.ts";

const style = `
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2430; }
  main { max-width: 34rem; margin: 12vh auto; background: #fff; padding: 2rem 2.25rem; border-radius: 10px;
         box-shadow: 0 1px 3px rgba(0,0,0,.12); }
  h1 { font-size: 1.35rem; margin: 0 0 1rem; }
  p { margin: .75rem 0; }
  .actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1.5rem; }
  a.button, button { font: inherit; padding: .55rem 1.1rem; border-radius: 6px; border: 1px solid #2456c7;
         background: #2456c7; color: #fff; text-decoration: none; cursor: pointer; }
  a.secondary { background: #fff; color: #2456c7; }
  code { background: #eef0f3; padding: 0 .3em; border-radius: 4px; }
`;

function page(title: string, body: Html): string {
  return pageDocument({ title, style, head: html`<meta name="referrer" content="same-origin" />`, body });
}

export function messagePage(
  title: string,
  message: string,
  action?: { href: string; label: string },
): string {
  return page(
    title,
    html`<p>${message}</p>
      ${action ? html`<div class="actions"><a class="button" href="${action.href}">${action.label}</a></div>` : ""}`,
  );
}

export function chooserPage(options: { href: string; label: string }[]): string {
  return page(
    "Sign in",
    html`<p>Choose how to sign in.</p>
      <div class="actions">
        ${options.map((o) => html`<a class="button" href="${o.href}">${o.label}</a>`)}
      </div>`,
  );
}

export function logoutPage(action: string, rd: string | undefined, user: string | undefined): string {
  return page(
    "Sign out",
    html`<p>${user ? html`You are signed in as <code>${user}</code>.` : "You are not signed in."}</p>
      <form method="post" action="${action}">
        ${rd ? html`<input type="hidden" name="rd" value="${rd}" />` : ""}
        <div class="actions"><button type="submit">Sign out</button></div>
      </form>`,
  );
}

/**
 * Sign-out when the user-manager could not end the session everywhere: this browser is signed out,
 * a copy of the cookie is not, and the page says so instead of redirecting as if all were done.
 */
export function browserOnlySignOutPage(expires: Date, next: string): string {
  const until = `${expires.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  return page(
    "Signed out on this browser only",
    html`<p>You are signed out on this browser, but the platform could not end your session everywhere.</p>
      <p>
        A copy of this session (on another computer, or taken from this one) still works until
        <strong>${until}</strong>. To end it, sign in again and use <em>Sign out everywhere</em> on your home
        page, or ask your teacher to end your sessions.
      </p>
      <div class="actions"><a class="button" href="${next}">Continue</a></div>`,
  );
}

export function landingPage(
  session: { user: string; expiresAt: string } | undefined,
  links: { login: string; logout: string },
): string {
  if (!session) {
    return page(
      "Not signed in",
      html`<p>You are not signed in.</p>
        <div class="actions"><a class="button" href="${links.login}">Sign in</a></div>`,
    );
  }
  return page(
    "Signed in",
    html`<p>You are signed in as <code>${session.user}</code> until ${session.expiresAt}.</p>
      <div class="actions"><a class="button secondary" href="${links.logout}">Sign out</a></div>`,
  );
}

/**
 * A sign-in finished for `next` in a browser signed in as `current`: asked, never replaced (a
 * neighbour may have planted their own sign-in). Switching signs out first and signs in again.
 */
export function switchUserPage(
  current: string,
  next: string,
  links: { stay: string; logout: string; signInAgain: string },
): string {
  return page(
    "Already signed in",
    html`<p>
        This browser is signed in as <code>${current}</code>, and a sign-in as <code>${next}</code> has just
        come back from the sign-in provider.
      </p>
      <p>
        If you did not just sign in as <code>${next}</code> yourself, someone else may have started it: stay
        <code>${current}</code>.
      </p>
      <form method="post" action="${links.logout}">
        <input type="hidden" name="rd" value="${links.signInAgain}" />
        <div class="actions">
          <a class="button" href="${links.stay}">Stay ${current}</a>
          <button type="submit" class="secondary">Sign out ${current} and sign in again</button>
        </div>
      </form>`,
  );
}
