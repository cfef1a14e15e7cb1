/**
 * A teacher in a real browser (Debian chromium driven by playwright-core) on the local platform:
 * signs in at the real OpenID provider through the auth service, opens a class with the keyboard,
 * uploads a roster file, reviews the changes (nothing is created before confirming), confirms,
 * sees the class and stops a student's environment. Screenshots: console-*.png (test/support/screenshots.ts says where).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { userlandsPath } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { screenshotsDir } from "../support/screenshots.ts";

let platform: Platform;
let browser: Browser;

before(async () => {
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `console-e2e-${randomBytes(3).toString("hex")}`),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const userlands = async () =>
  (await platform.rest.list<Userland>(userlandsPath(platform.namespace))).items.filter(
    (u) => u.spec.templateName === DEMO_TEMPLATE,
  );

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(screenshotsDir(), `console-${name}.png`), fullPage: true });

test("a teacher signs in, uploads a roster, reviews the changes, confirms, and manages the class", async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await context.newPage();
  // The console has no script: a Content-Security-Policy report here would be a page that needs one.
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });

  // Not signed in: the console sends the browser to the auth service, which sends it to the provider.
  await gotoSignIn(page, platform.consoleUrl);
  await page.waitForSelector("input[name=name]");
  assert.ok(page.url().startsWith(platform.identityProviderUrl), `at the provider: ${page.url()}`);
  await page.fill("input[name=name]", CONSOLE_TEACHER);
  await Promise.all([
    page.waitForURL((u) => u.toString().startsWith(platform.consoleUrl)),
    page.click("button[type=submit]"),
  ]);
  assert.equal(await page.textContent("#signed-in-as"), CONSOLE_TEACHER);
  // Signing in to the console started no environment for the teacher (issue 44 item 6).
  const all = (await platform.rest.list<Userland>(userlandsPath(platform.namespace))).items;
  assert.deepEqual(
    all.filter((u) => u.spec.user === CONSOLE_TEACHER).map((u) => u.metadata.name),
    [],
    "the teacher has no environment",
  );
  await shot(page, "01-classes");

  // Open the class with the keyboard only: the Template field, then Enter.
  await page.focus("#template");
  await page.keyboard.type(DEMO_TEMPLATE);
  await Promise.all([page.waitForURL(/\/console\/class\?template=demo$/), page.keyboard.press("Enter")]);
  const before = (await userlands()).map((u) => u.spec.user);
  await Promise.all([page.waitForURL(/\/console\/roster\?/), page.click("text=Upload a roster")]);

  const csv = 'name,user\nCarol,carol\nDave,dave\nBroken,"bad name "\nErin,erin\n';
  await page.setInputFiles("#file", { name: "class.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
  await Promise.all([page.waitForURL(/\/console\/roster\/preview$/), page.click("text=Show the changes")]);
  const toAdd = (await page.textContent("#to-add")) ?? "";
  for (const user of ["carol", "dave", "erin"]) assert.match(toAdd, new RegExp(`\\b${user}\\b`));
  assert.match(toAdd, /To add \(3\)/);
  const rejected = (await page.textContent("#rejected")) ?? "";
  assert.match(rejected, /4\s+bad name\s+user has a leading or trailing space/);
  await shot(page, "02-preview");
  assert.deepEqual(
    (await userlands()).map((u) => u.spec.user),
    before,
    "nothing is created before the teacher confirms",
  );

  await Promise.all([page.waitForURL(/\/console\/roster\/apply$/), page.click("text=Confirm: add 3")]);
  assert.match((await page.textContent("[role=status]")) ?? "", /Added 3, removed 0, 0 failed/);
  await shot(page, "03-applied");
  const created = await userlands();
  for (const user of ["carol", "dave", "erin"]) {
    const u = created.find((c) => c.spec.user === user);
    assert.ok(u, `${user} has an environment`);
    assert.equal(u.metadata.annotations?.["userland.dev/created-by"], `userland:${CONSOLE_TEACHER}`);
  }

  // The class, with every student Ready once the operator has run them (kwok nodes).
  await page.click("text=Go to the class");
  await eventually(
    "the class to show three Ready environments",
    async () => {
      await page.reload();
      const states = await page.locator("tbody .state").allTextContents();
      return states.filter((s) => s === "Ready").length >= 3;
    },
    60_000,
  );
  await shot(page, "04-class");

  // Stop one student with the keyboard: focus the row's Stop button and press Enter.
  await page.focus('button[aria-label="Stop dave"]');
  await Promise.all([page.waitForURL(/done=stop&count=1/), page.keyboard.press("Enter")]);
  assert.match((await page.textContent("[role=status]")) ?? "", /Stopped 1 environment\./);
  const dave = (await userlands()).find((u) => u.spec.user === "dave");
  assert.equal(dave?.spec.enabled, false);
  await shot(page, "05-stopped");

  assert.deepEqual(violations, []);
  await context.close();
});

test("a signed-in student is no teacher: the console says so, and the API refuses", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await gotoSignIn(page, platform.consoleUrl);
  await page.waitForSelector("input[name=name]");
  await page.fill("input[name=name]", "mallory");
  const [response] = await Promise.all([
    page.waitForResponse(
      (r) => r.url().startsWith(platform.consoleUrl) && r.request().resourceType() === "document",
    ),
    page.click("button[type=submit]"),
  ]);
  assert.equal(response.status(), 403);
  assert.match((await page.textContent("main")) ?? "", /userland:mallory may not list userlands/);
  await shot(page, "06-not-a-teacher");
  const api = await context.request.get(`${platform.userManagerUrl}/api/v1/userlands`);
  assert.equal(api.status(), 403);
  await context.close();
});
