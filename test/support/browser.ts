/**
 * The real browser of the browser tests: Debian's chromium driven by playwright-core, with nothing
 * running in the background that could dial out (no updates, no component downloads).
 */
import { chromium, type Browser } from "playwright-core";

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
