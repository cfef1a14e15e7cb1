/**
 * The real browser of the browser tests: Debian's chromium driven by playwright-core, with nothing
 * running in the background that could dial out (no updates, no component downloads).
 */
import { noteRetry } from "./retries.ts";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/** Launches headless chromium; `args` adds flags, e.g. --host-resolver-rules. */
export function launchBrowser(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-gpu",
      ...args,
    ],
  });
}

/**
 * Opens `url` where a sign-in starts. Signing in (and out) walks the browser through the proxy's
 * clearing hops by meta refresh, which a `load` wait would see interrupted by the next hop: this
 * waits only until the first response is committed; the caller then waits for the page it expects.
 * A first response that does not come within 30 s, or a connection closed with no answer, is asked
 * once more on a new connection, and said: on the real node, right after the guide restarts the
 * auth service, a request through the harness's relay was seen closed empty, and once left
 * unanswered: the old pod had closed its listener while kube-proxy still sent it connections. The
 * chart now lets a stopping pod serve on for `endpointDrainSeconds`; this guard stays for the relay.
 */
export async function gotoSignIn(page: Page, url: string): Promise<void> {
  try {
    await page.goto(url, { waitUntil: "commit", timeout: 30_000 });
  } catch (error) {
    if (!/ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|ERR_CONNECTION_CLOSED|Timeout/.test(String(error)))
      throw error;
    noteRetry("gotoSignIn (cluster/harness/browser.ts)", `${url}: ${String(error)}`);
    await page.goto(url, { waitUntil: "commit" });
  }
}

/**
 * Every page `context` shows from now on, in order, as "<status> <title>" (a starting page may be on
 * screen too briefly to poll for, so each is recorded as it arrives): the documents of each tab's
 * main frame (an IDE's own frames are its business), and a browser error page, when a navigation
 * got no answer at all, as "browser-error <url>".
 */
export function pagesLoaded(context: BrowserContext): string[] {
  const pages: string[] = [];
  context.on("response", (response) => {
    const request = response.request();
    if (request.resourceType() !== "document" || request.frame().parentFrame() !== null) return;
    void response.text().then(
      (html) => pages.push(`${response.status()} ${/<title>([^<]*)<\/title>/.exec(html)?.[1] ?? ""}`),
      () => undefined,
    );
  });
  const watch = (page: Page) =>
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame() && frame.url().startsWith("chrome-error://"))
        pages.push(`browser-error ${frame.url()}`);
    });
  context.pages().forEach(watch);
  context.on("page", watch);
  return pages;
}

/** A page that says an environment is on its way: shown with 503 by design, never an error. */
const STARTING_PAGE = /is starting|^503 Starting up$/;

/**
 * The error pages among `pages` (as pagesLoaded records them): any document answered 4xx or 5xx
 * but the starting page, and any browser error page. A test that expects one says so by filtering
 * it out itself.
 */
export const errorPages = (pages: readonly string[]): string[] =>
  pages.filter((p) => p.startsWith("browser-error ") || (/^[45]\d\d /.test(p) && !STARTING_PAGE.test(p)));
