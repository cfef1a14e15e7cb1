/**
 * What `npm start` gives with the real node (dev/realPlatform.ts), as a user on this machine meets
 * it: a browser with no special flags (it resolves the login provider's *.localhost name by itself)
 * opens the printed URL, signs in with any name and lands in VS Code; the pre-assigned students open
 * Jupyter and phpMyAdmin at their own ports; every Template it installs is one of these
 * (cluster/harness/idePages.ts). Its own control plane and node, beside the test run's.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { heldPort, type HeldPort } from "../../cluster/ports.ts";
import { DEFAULT_TEMPLATE, startRealPlatform, type RealPlatform } from "../../dev/realPlatform.ts";
import { gotoSignIn, launchBrowser, pagesLoaded } from "../../cluster/harness/browser.ts";
import { IDE_PAGES, idePagesMismatch } from "../../cluster/harness/idePages.ts";
import { templatesPath } from "../../api/v1alpha1/index.ts";
import { loadKubeConnection } from "../../lib/kubeConnection.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import { assertNoErrorPage } from "../support/platformPages.ts";

let platform: RealPlatform;
let browser: Browser;

/**
 * The six ports what USERLAND_PORT sets for npm start (base to base+5), held for this run
 * (cluster/ports.ts): below the kernel's range for outgoing connections, which took one of them
 * once in CI (EADDRINUSE), and locked against other runs on the machine.
 */
let ports: HeldPort;

before(
  async () => {
    platform = await startRealPlatform({
      dir: join(repoRoot, ".userland", `start-test-${process.pid}`),
      base: (ports = await heldPort(6)).port,
      log: (line) => process.stdout.write(`# ${line}\n`),
    });
    browser = await launchBrowser();
  },
  { timeout: 1_200_000 },
);

after(async () => {
  await browser?.close();
  await platform?.stop();
  ports?.release();
});

/**
 * Signs in at `url` as `name` and waits for the IDE (`selector`); on the way the student sees the
 * starting page and the IDE, never an error page ("not answering": the newcomer saw it for
 * 10 s when the Userland turned Ready before its Service routed).
 */
async function signInAndWait(url: string, name: string, selector: string): Promise<string> {
  const context = await browser.newContext();
  const titles = pagesLoaded(context);
  try {
    const page = await context.newPage();
    page.setDefaultNavigationTimeout(120_000);
    await gotoSignIn(page, url);
    await page.waitForSelector("input[name=name]", { timeout: 60_000 });
    assert.ok(
      page.url().startsWith(platform.identityProviderUrl),
      `the local provider's form: ${page.url()}`,
    );
    await page.fill("input[name=name]", name);
    await page.click("button[type=submit]");
    await page.waitForSelector(selector, { timeout: 240_000 });
    assertNoErrorPage(titles);
    return page.url();
  } finally {
    await context.close();
  }
}

test("npm start with the real node: every Template it installs is one this file signs in to", async () => {
  const rest = new KubeRest(await loadKubeConnection(platform.kubeconfig), "userland-test");
  try {
    const installed = await rest.list<{ metadata: { name: string } }>(templatesPath(platform.namespace));
    assert.deepEqual(idePagesMismatch(installed.items.map((t) => t.metadata.name)), {
      untried: [],
      notInstalled: [],
    });
  } finally {
    await rest.close();
  }
});

test("npm start with the real node: any name signs in to VS Code at the printed URL", async () => {
  const vscode = IDE_PAGES.find((p) => p.template === DEFAULT_TEMPLATE);
  assert.ok(vscode);
  const landed = await signInAndWait(platform.url, "zoe", vscode.selector);
  assert.equal(new URL(landed).origin, new URL(platform.url).origin, "VS Code at the printed URL");
});

for (const ide of IDE_PAGES.filter((p) => p.template !== DEFAULT_TEMPLATE)) {
  test(`npm start with the real node: the student assigned ${ide.title} opens it at its own port`, async () => {
    const [user] = Object.entries(platform.assigned).find(([, t]) => t === ide.template) ?? [];
    assert.ok(user, `a student is assigned ${ide.template}`);
    const url = platform.templates[ide.template];
    assert.ok(url);
    const landed = await signInAndWait(url, user, ide.selector);
    assert.equal(new URL(landed).origin, new URL(url).origin);
  });
}
