/**
 * What the real-node browser tests (test/node/platform.test.ts, classroom.alone.ts) do in pages of
 * the platform installed by its chart: wait for a page with a screenshot when it does not come,
 * and call Jupyter's REST API from inside a Jupyter page as the notebook itself does.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";

// The page's globals, for the functions playwright runs in the browser (this file has no DOM types).
declare const document: { cookie: string };

/** Waits for `selector` on the page; on failure leaves a screenshot in `artifacts` and says what the page showed. */
export async function expectOnPage(
  page: Page,
  selector: string,
  what: string,
  timeout: number,
  artifacts: string,
): Promise<void> {
  try {
    await page.waitForSelector(selector, { timeout });
  } catch (error) {
    await page.screenshot({ path: join(artifacts, `failed-${Date.now()}.png`) }).catch(() => undefined);
    const body = ((await page.textContent("body").catch(() => "")) ?? "").slice(0, 400);
    throw new Error(`${what}: not on ${page.url()} (${body})`, { cause: error });
  }
}

/** In a Jupyter page: the JSON of a REST call with the page's XSRF token, as the notebook makes it. */
export function jupyterApi(
  page: Page,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const xsrf = /_xsrf=([^;]+)/.exec(document.cookie)?.[1] ?? "";
      const response = await fetch(path, {
        method,
        headers: { "x-xsrftoken": decodeURIComponent(xsrf), "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: await response.json().catch(() => null) };
    },
    { method, path, body },
  );
}
