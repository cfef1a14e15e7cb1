/**
 * The student's home page in a real browser (Debian chromium driven by playwright-core) through
 * the whole local platform (dev/platform.ts: real OpenID sign-in, auto-provisioning, the real
 * user-manager and the chart's RBAC for every component): a new student signs in at the home,
 * sees their environment become ready by itself, opens it with the keyboard, stops and starts it
 * from the home, and creates one of a self-service Template. Saves the screenshot
 * home.png (test/support/screenshots.ts says where).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { templatesPath, userlandsPath, type Userland } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { screenshotsDir } from "../support/screenshots.ts";
import { homeCard as card } from "../support/platformPages.ts";

const artifacts = join(repoRoot, "artifacts", "e2e");
let platform: Platform;
let browser: Browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `e2e-home-${randomBytes(3).toString("hex")}`),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function userlandOf(user: string, template: string): Promise<Userland | undefined> {
  const list = await platform.rest.list<Userland>(userlandsPath(platform.namespace));
  return list.items.find((u) => u.spec.user === user && u.spec.templateName === template);
}

test("a student signs in at the home, sees their environment get ready, opens it by keyboard, stops and starts it, creates a self-service one", async () => {
  // A self-service Template, so the home also shows what a student may create.
  await platform.rest.patch(templatesPath(platform.namespace, "jupyter"), { spec: { selfService: true } });
  const home = `${platform.url}_userland/home`;
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(home);
    await page.waitForSelector("input[name=name]");
    assert.ok(page.url().startsWith(platform.identityProviderUrl), `on the login page: ${page.url()}`);
    await page.fill("input[name=name]", "hana");
    await Promise.all([page.waitForURL(home), page.click("button[type=submit]")]);

    // The first page after sign-in is the home, with the environment provisioned at sign-in; its
    // script follows the state until it is ready.
    assert.equal(await page.textContent("h1"), "Your environments");
    const demo = card(page, "Demo");
    await demo.locator(".state-ready").waitFor({ timeout: 60_000 });
    assert.match((await page.textContent("#home")) ?? "", /Signed in as\s+hana/);
    assert.match((await page.textContent("#available")) ?? "", /Available to you/);
    assert.match((await page.textContent("body")) ?? "", /JupyterLab/);
    await page.screenshot({ path: join(screenshotsDir(), "home.png"), fullPage: true });

    // Keyboard only: Tab to the Open link, Enter opens the environment.
    let focused = "";
    for (let i = 0; i < 12 && focused !== "Open Demo"; i++) {
      await page.keyboard.press("Tab");
      focused = await page.evaluate<string>('document.activeElement?.getAttribute("aria-label") ?? ""');
    }
    assert.equal(focused, "Open Demo", "the Open link is reachable with Tab");
    await Promise.all([page.waitForURL(platform.url), page.keyboard.press("Enter")]);
    await page.waitForSelector("#owner");
    assert.equal(await page.textContent("#owner"), "hana");

    // Stop from the home (a plain form through the proxy and the real user-manager).
    await page.goto(home);
    await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/_userland/stop")),
      card(page, "Demo").getByRole("button", { name: "Stop Demo" }).click(),
    ]);
    await card(page, "Demo").locator(".state-stopped").waitFor();
    assert.equal((await userlandOf("hana", DEMO_TEMPLATE))?.spec.enabled, false);
    await page.screenshot({ path: join(artifacts, "home-stopped.png"), fullPage: true });

    // Start again: starting, then ready, without reloading by hand.
    await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/_userland/start")),
      card(page, "Demo").getByRole("button", { name: "Start Demo" }).click(),
    ]);
    assert.equal((await userlandOf("hana", DEMO_TEMPLATE))?.spec.enabled, true);
    await card(page, "Demo").locator(".state-ready").waitFor({ timeout: 60_000 });

    // A self-service Template: one click, one more environment of her own, no longer offered.
    await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/_userland/create")),
      page.getByRole("button", { name: "Create and start JupyterLab" }).click(),
    ]);
    await card(page, "JupyterLab").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator("#available").count(), 0, "nothing left to offer");
    const jupyter = await eventually("hana's JupyterLab", () => userlandOf("hana", "jupyter"));
    assert.equal(jupyter.spec.user, "hana");
    const hers = (await platform.rest.list<Userland>(userlandsPath(platform.namespace))).items.filter(
      (u) => u.spec.user === "hana",
    );
    assert.deepEqual(hers.map((u) => u.spec.templateName).sort(), [DEMO_TEMPLATE, "jupyter"]);
  } catch (error) {
    await page.screenshot({ path: join(artifacts, `home-failed-${Date.now()}.png`), fullPage: true });
    throw error;
  } finally {
    await context.close();
  }
});

test("the chart's RBAC lets the proxy's own token create a student's Userland through the user-manager, and no more", async () => {
  const credential = platform.credentials.find((c) => c.component === "proxy" && c.kind === "token");
  assert.ok(credential, "the proxy has a token for the user-manager");
  const token = readFileSync(credential.file, "utf8").trim();
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${platform.userManagerUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const created = await call("POST", "/api/v1/userlands", { user: "zoe", templateName: "jupyter" });
  assert.equal(created.status, 201, await created.clone().text());
  const { name } = (await created.json()) as { name: string };
  const zoe = await eventually("zoe's Userland", () => userlandOf("zoe", "jupyter"));
  assert.equal(zoe.metadata.name, name);
  const deleted = await call("DELETE", `/api/v1/userlands/${encodeURIComponent(name)}`);
  assert.equal(deleted.status, 403, "the proxy may not delete Userlands");
  const listed = await call("GET", "/api/v1/userlands");
  assert.equal(listed.status, 200, "it may list them (it watches them anyway)");
});
