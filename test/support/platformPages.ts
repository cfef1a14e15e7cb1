/**
 * What the browser tests do on the local platform's pages (dev/platform.ts): sign in at its OpenID
 * provider, find an environment's card on a student's home, read a demo environment's page.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { errorPages, gotoSignIn } from "../../cluster/harness/browser.ts";

/**
 * Opens `url` without a session, signs in as `name` at the local provider it is sent to, and waits
 * to be back where `landed` says (default: anywhere under `url`). `loginShot` saves the login page.
 */
export async function signIn(
  page: Page,
  opts: {
    url: string;
    name: string;
    identityProviderUrl: string;
    landed?: (url: URL) => boolean;
    loginShot?: string;
  },
): Promise<void> {
  await gotoSignIn(page, opts.url);
  await page.waitForSelector("input[name=name]");
  assert.ok(page.url().startsWith(opts.identityProviderUrl), `on the login page: ${page.url()}`);
  if (opts.loginShot) await page.screenshot({ path: opts.loginShot, fullPage: true });
  await page.fill("input[name=name]", opts.name);
  await Promise.all([
    page.waitForURL(opts.landed ?? ((u) => u.toString().startsWith(opts.url))),
    page.click("button[type=submit]"),
  ]);
}

/** The card of the student's environment titled `title` exactly (not a self-service offer). */
export const homeCard = (page: Page, title: string) =>
  page
    .locator("li.card", { has: page.locator("form input[name=userland]") })
    .filter({ has: page.getByRole("heading", { name: title, exact: true }) });

/**
 * Whose demo environment the page shows and the X-User it received (dev/demoEnvironment.ts); a
 * screenshot goes to `artifacts` when there is none.
 */
export async function environmentOf(
  page: Page,
  artifacts: string,
): Promise<{ owner: string; xUser: string }> {
  try {
    await page.waitForSelector("#owner", { timeout: 60_000 });
  } catch (error) {
    await page.screenshot({ path: join(artifacts, `failed-${Date.now()}.png`), fullPage: true });
    throw new Error(
      `no environment page at ${page.url()}: ${(await page.textContent("body"))?.slice(0, 500)}`,
      { cause: error },
    );
  }
  return {
    owner: (await page.textContent("#owner")) ?? "",
    xUser: (await page.textContent("#x-user")) ?? "",
  };
}

/**
 * From sign-in to the environment a student sees the starting page and then the environment, never
 * an error page: Ready means the Service routes, and a refusal just after keeps the starting page.
 */
export function assertNoErrorPage(pages: string[]): void {
  assert.deepEqual(errorPages(pages), [], `pages seen: ${JSON.stringify(pages)}`);
}
