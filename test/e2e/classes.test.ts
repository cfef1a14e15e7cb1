/**
 * Issue 14 end to end, in a real browser (Debian chromium driven by playwright-core) on the whole
 * local platform (dev/platform.ts) with two Templates, each at a host of its own: the demo at the
 * proxy's port, a second Template ("sql") at another; both run demo stand-ins that echo X-User.
 * Students get nothing at sign-in here; teachers assign every environment.
 *
 * A teacher appointed by a RoleBinding to `userland:<name>` (docs/decisions/0009) signs in to the
 * console, uploads a roster naming two students and two Templates (one student in both), reviews
 * the changes and confirms. Each student sees exactly their environments on their home page and
 * opens each at its own host; the teacher stops one and the student's home shows it stopped. A
 * student with nothing sees the empty home, and the console and the API refuse them. A teacher
 * whose Role names only one class's environment acts on it and is refused on the other class.
 * Saves home-two-classes.png (test/support/screenshots.ts says where).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { templatesPath, userlandsPath, type Userland } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { paths } from "../../api/kubePaths.ts";
import { launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { screenshotsDir } from "../support/screenshots.ts";
import { environmentOf, homeCard, signIn } from "../support/platformPages.ts";
import { simpleTemplateSpec } from "../support/resources.ts";

/** The second class's Template, served at a port of its own (deploy/'s need volumes kwok cannot bind). */
const SQL = "sql";
const SQL_TITLE = "SQL class";
const TEACHER = "tanaka";
/** In both classes, in the demo class only, in none. */
const [BOTH, ONE, NONE] = ["kim", "lee", "noor"] as const;

const artifacts = join(repoRoot, "artifacts", "e2e");
let platform: Platform;
let browser: Browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `classes-e2e-${randomBytes(3).toString("hex")}`),
    templatePorts: [SQL],
    provision: false,
  });
  await platform.rest.create(templatesPath(platform.namespace), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: SQL },
    spec: simpleTemplateSpec("registry.invalid/sql-class:1", {
      displayName: SQL_TITLE,
      description: "Stands in for MariaDB + phpMyAdmin: a demo environment like the other class's.",
    }),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const home = () => `${platform.url}_userland/home`;
const rbacPath = (resource: string) =>
  paths.namespaced("rbac.authorization.k8s.io", "v1", resource, platform.namespace);

async function userlandsOf(user: string): Promise<Userland[]> {
  const list = await platform.rest.list<Userland>(userlandsPath(platform.namespace));
  return list.items.filter((u) => u.spec.user === user);
}

async function userlandOf(user: string, template: string): Promise<Userland> {
  const found = (await userlandsOf(user)).find((u) => u.spec.templateName === template);
  assert.ok(found, `${user} has a Userland of ${template}`);
  return found;
}

/** Binds `roleRef` to the session user `userland:<user>`, and waits until RBAC says `verb` on `name`. */
async function appoint(
  user: string,
  roleRef: { kind: "ClusterRole" | "Role"; name: string },
  check: { verb: string; name?: string },
): Promise<void> {
  const subject = `userland:${user}`;
  await platform.rest.create(rbacPath("rolebindings"), {
    metadata: { name: `teacher-${user}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
    subjects: [{ kind: "User", name: subject, apiGroup: "rbac.authorization.k8s.io" }],
  });
  await eventually(`RBAC to let ${subject} ${check.verb}`, async () => {
    const review = await platform.rest.create<{ status?: { allowed?: boolean } }>(
      paths.namespaced("authorization.k8s.io", "v1", "localsubjectaccessreviews", platform.namespace),
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "LocalSubjectAccessReview",
        spec: {
          user: subject,
          resourceAttributes: {
            namespace: platform.namespace,
            group: "userland.dev",
            resource: "userlands",
            verb: check.verb,
            ...(check.name ? { name: check.name } : {}),
          },
        },
      },
    );
    return review.status?.allowed === true;
  });
}

/** A browser context of `name`'s own (closed with the browser), signed in at `url`. */
async function signedIn(name: string, url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const page = await context.newPage();
  await signIn(page, { url, name, identityProviderUrl: platform.identityProviderUrl });
  return page;
}

/** Runs `body`; on failure keeps a screenshot of `page` in artifacts/e2e. */
async function shotOnFailure<T>(page: Page, what: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    await page.screenshot({ path: join(artifacts, `classes-${what}-failed.png`), fullPage: true });
    throw error;
  }
}

/** The environment cards on a student's home (never the self-service offers). */
const environmentCards = (page: Page) => page.locator("li.card[id^=env-]");

let teacherPage: Page;
let bothPage: Page;

test("a teacher appointed by a RoleBinding imports a roster for two Templates through the console", async () => {
  await appoint(TEACHER, { kind: "ClusterRole", name: "userland-teacher" }, { verb: "create" });
  teacherPage = await signedIn(TEACHER, platform.consoleUrl);
  const page = teacherPage;
  await shotOnFailure(page, "roster", async () => {
    assert.equal(await page.textContent("#signed-in-as"), TEACHER);
    await page.focus("#template");
    await page.keyboard.type(DEMO_TEMPLATE);
    await Promise.all([page.waitForURL(/\/console\/class\?template=demo$/), page.keyboard.press("Enter")]);
    await Promise.all([page.waitForURL(/\/console\/roster\?/), page.click("text=Upload a roster")]);

    // Rows without a template are the demo class's (the page's Template); one row names the SQL class.
    const csv = `name,user,template\nKim,${BOTH},\nKim,${BOTH},${SQL}\nLee,${ONE},\n`;
    await page.setInputFiles("#file", {
      name: "classes.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(csv),
    });
    await Promise.all([page.waitForURL(/\/console\/roster\/preview$/), page.click("text=Show the changes")]);
    assert.match((await page.textContent("#to-add h2")) ?? "", /To add \(3\)/);
    const rows = (await page.locator("#to-add tbody tr").allInnerTexts()).map((r) =>
      r.split(/\s+/).join(" "),
    );
    assert.deepEqual(rows, [`2 ${BOTH} ${DEMO_TEMPLATE}`, `3 ${BOTH} ${SQL}`, `4 ${ONE} ${DEMO_TEMPLATE}`]);
    assert.deepEqual(await userlandsOf(BOTH), [], "nothing is created before the teacher confirms");

    await Promise.all([page.waitForURL(/\/console\/roster\/apply$/), page.click("text=Confirm: add 3")]);
    assert.match((await page.textContent("[role=status]")) ?? "", /Added 3, removed 0, 0 failed/);
  });
  const assigned = [...(await userlandsOf(BOTH)), ...(await userlandsOf(ONE))];
  assert.deepEqual(assigned.map((u) => `${u.spec.user}/${u.spec.templateName}`).sort(), [
    `${BOTH}/${DEMO_TEMPLATE}`,
    `${BOTH}/${SQL}`,
    `${ONE}/${DEMO_TEMPLATE}`,
  ]);
  for (const u of assigned)
    assert.equal(u.metadata.annotations?.["userland.dev/created-by"], `userland:${TEACHER}`);
});

test("each student sees exactly their environments on their home and opens each at its own host", async () => {
  bothPage = await signedIn(BOTH, home());
  const page = bothPage;
  await shotOnFailure(page, "home-both", async () => {
    assert.equal(await page.textContent("h1"), "Your environments");
    await homeCard(page, "Demo").locator(".state-ready").waitFor({ timeout: 60_000 });
    await homeCard(page, SQL_TITLE).locator(".state-ready").waitFor({ timeout: 60_000 });
    const names = (await userlandsOf(BOTH)).map((u) => `env-${u.metadata.name ?? ""}`).sort();
    const cards = await environmentCards(page).all();
    assert.deepEqual((await Promise.all(cards.map((c) => c.getAttribute("id")))).sort(), names);
    await page.screenshot({ path: join(screenshotsDir(), "home-two-classes.png"), fullPage: true });

    // Each Open link goes to its Template's own host, where the environment answers as this student.
    const open = (title: string) => page.getByRole("link", { name: `Open ${title}` });
    assert.equal(await open(SQL_TITLE).getAttribute("href"), platform.templateUrls[SQL]);
    await Promise.all([page.waitForURL(platform.url), open("Demo").click()]);
    assert.deepEqual(await environmentOf(page, artifacts), { owner: BOTH, xUser: BOTH });
    assert.match((await page.textContent("body")) ?? "", new RegExp(`Template ${DEMO_TEMPLATE}\\b`));
    await page.goto(home());
    await Promise.all([page.waitForURL(platform.templateUrls[SQL] ?? ""), open(SQL_TITLE).click()]);
    assert.deepEqual(await environmentOf(page, artifacts), { owner: BOTH, xUser: BOTH });
    assert.match((await page.textContent("body")) ?? "", new RegExp(`Template ${SQL}\\b`));
  });

  const other = await signedIn(ONE, home());
  await shotOnFailure(other, "home-one", async () => {
    await homeCard(other, "Demo").locator(".state-ready").waitFor({ timeout: 60_000 });
    assert.equal(await environmentCards(other).count(), 1, `${ONE} is in one class only`);
    assert.equal(await homeCard(other, SQL_TITLE).count(), 0);
    await Promise.all([
      other.waitForURL(platform.url),
      other.getByRole("link", { name: "Open Demo" }).click(),
    ]);
    assert.deepEqual(await environmentOf(other, artifacts), { owner: ONE, xUser: ONE });
    // Her session at the SQL class's host finds nothing of hers there.
    const there = await other.goto(platform.templateUrls[SQL] ?? "");
    assert.equal(there?.status(), 404);
    assert.match((await other.textContent("body")) ?? "", /You have no/);
  });
});

test("a teacher stops one of a student's environments in the console, and the student's home shows it stopped", async () => {
  const page = teacherPage;
  const student = bothPage;
  await student.goto(home());
  await homeCard(student, SQL_TITLE).locator(".state-ready").waitFor();
  await shotOnFailure(page, "stop", async () => {
    await page.goto(platform.consoleUrl);
    await Promise.all([
      page.waitForURL(/\/console\/class\?template=sql$/),
      page.getByRole("link", { name: SQL, exact: true }).click(),
    ]);
    assert.equal(
      await page
        .locator("tbody .user")
        .allTextContents()
        .then((u) => u.join(",")),
      BOTH,
    );
    await Promise.all([
      page.waitForURL(/done=stop&count=1/),
      page.click(`button[aria-label="Stop ${BOTH}"]`),
    ]);
    assert.match((await page.textContent("[role=status]")) ?? "", /Stopped 1 environment\./);
  });
  assert.equal((await userlandOf(BOTH, SQL)).spec.enabled, false);
  assert.notEqual((await userlandOf(BOTH, DEMO_TEMPLATE)).spec.enabled, false, "the other class runs on");

  // The open home follows by itself (its script polls the same view), without a reload.
  await shotOnFailure(student, "stopped", async () => {
    await homeCard(student, SQL_TITLE).locator(".state-stopped").waitFor({ timeout: 40_000 });
    assert.equal(await homeCard(student, "Demo").locator(".state-ready").count(), 1);
    const visit = await student.goto(platform.templateUrls[SQL] ?? "");
    assert.equal(visit?.status(), 503);
    assert.match((await student.textContent("body")) ?? "", /stopped/i);
  });
});

test("a signed-in student with nothing sees a clear empty home; the console and the API refuse them", async () => {
  const page = await signedIn(NONE, home());
  await shotOnFailure(page, "empty", async () => {
    const again = await page.goto(home());
    assert.equal(again?.status(), 200);
    assert.equal(await page.textContent("h1"), "Your environments");
    assert.match(
      (await page.textContent("#empty")) ?? "",
      /You have no environments yet\. Your teacher assigns them/,
    );
    assert.equal(await environmentCards(page).count(), 0);
    await page.screenshot({ path: join(artifacts, "classes-empty-home.png"), fullPage: true });

    const refused = await page.goto(platform.consoleUrl);
    assert.equal(refused?.status(), 403);
    assert.match(
      (await page.textContent("main")) ?? "",
      new RegExp(`userland:${NONE} may not list userlands`),
    );
  });
  const request = page.context().request;
  const origin = new URL(platform.consoleUrl).origin;
  assert.equal((await request.get(`${platform.userManagerUrl}/api/v1/userlands`)).status(), 403);
  assert.equal(
    (await request.get(`${platform.userManagerUrl}/api/v1/users/${NONE}/userlands`)).status(),
    403,
  );
  const name = (await userlandOf(BOTH, DEMO_TEMPLATE)).metadata.name ?? "";
  const stop = await request.post(`${platform.userManagerUrl}/api/v1/userlands/${name}/stop`, {
    headers: { origin },
  });
  assert.equal(stop.status(), 403);
  assert.notEqual((await userlandOf(BOTH, DEMO_TEMPLATE)).spec.enabled, false);
});

test("a teacher whose Role names one class's environments acts there and is refused on the other class", async () => {
  const SCOPED = "sato";
  const sqlName = (await userlandOf(BOTH, SQL)).metadata.name ?? "";
  const demo = (await userlandOf(BOTH, DEMO_TEMPLATE)).metadata.name ?? "";
  // Option B of docs/decisions/0009: a Role naming the class's Userlands.
  await platform.rest.create(rbacPath("roles"), {
    metadata: { name: "sql-class" },
    rules: [
      {
        apiGroups: ["userland.dev"],
        resources: ["userlands"],
        verbs: ["get", "patch"],
        resourceNames: [sqlName],
      },
      // The console's door for a teacher named by resourceNames (issue 29).
      { apiGroups: ["userland.dev"], resources: ["userlands/console"], verbs: ["get"] },
    ],
  });
  await appoint(SCOPED, { kind: "Role", name: "sql-class" }, { verb: "patch", name: sqlName });
  const page = await signedIn(SCOPED, `${platform.consoleUrl}class?template=${SQL}`);
  await shotOnFailure(page, "scoped", async () => {
    assert.match((await page.textContent("main")) ?? "", /that you may see one by one/);
    await Promise.all([
      page.waitForURL(/done=start&count=1/),
      page.click(`button[aria-label="Start ${BOTH}"]`),
    ]);
    assert.equal((await userlandOf(BOTH, SQL)).spec.enabled, true);

    const other = await page.goto(`${platform.consoleUrl}class?template=${DEMO_TEMPLATE}`);
    assert.equal(other?.status(), 403);
  });
  const stop = await page.context().request.post(`${platform.userManagerUrl}/api/v1/userlands/${demo}/stop`, {
    headers: { origin: new URL(platform.consoleUrl).origin },
  });
  assert.equal(stop.status(), 403, "the API refuses the other class too");
  assert.notEqual((await userlandOf(BOTH, DEMO_TEMPLATE)).spec.enabled, false);
});
