/**
 * The student's path in a real browser (Debian chromium driven by playwright-core) through the
 * whole local platform: login at a real OpenID provider, auto-provisioning, the starting page,
 * the environment with X-User, a WebSocket through the proxy, logout. A second student never
 * reaches the first one's environment. An admin imports a roster and changes the image for all.
 * Screenshots go to artifacts/e2e/.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { childNames, userlandNameFor } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { gotoSignIn, launchBrowser, pagesLoaded } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { assertNoErrorPage, environmentOf as environmentOfPage, signIn } from "../support/platformPages.ts";

const artifacts = join(repoRoot, "artifacts", "e2e");
let platform: Platform;
let browser: Browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `e2e-${randomBytes(3).toString("hex")}`),
    // kwok makes a pod Ready at once: on a loaded machine a new student's environment was up before
    // the browser's first page, and the starting page this test walks through never came. Demo
    // environments that answer only a while after Ready make the wait certain (test/e2e/starting.test.ts
    // checks that wait itself).
    demoListensAfterReadyMs: 7_000,
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const userland = (name: string) =>
  platform.rest.get<Userland>(
    paths.namespaced("userland.dev", "v1alpha1", "userlands", platform.namespace, name),
  );

/** Signs in at the local identity provider; returns the page after the redirects settle. */
async function login(context: BrowserContext, name: string, screenshot?: string): Promise<Page> {
  const page = await context.newPage();
  await signIn(page, {
    url: platform.url,
    name,
    identityProviderUrl: platform.identityProviderUrl,
    ...(screenshot ? { loginShot: join(artifacts, screenshot) } : {}),
  });
  return page;
}

const environmentOf = (page: Page) => environmentOfPage(page, artifacts);

test("a new student logs in, is provisioned, waits on the starting page, works in their own environment, logs out", async () => {
  const context = await browser.newContext();
  const titles = pagesLoaded(context);
  const page = await login(context, "alice", "01-login.png");

  // Just provisioned, so not Ready yet: the starting page, which follows the status by itself.
  await eventually("the starting page", () => titles.some((t) => /is starting/.test(t)), 15_000).catch(
    (error: unknown) => {
      throw new Error(`${(error as Error).message}; pages seen: ${JSON.stringify(titles)}`);
    },
  );
  await page.screenshot({ path: join(artifacts, "02-starting.png"), fullPage: true });
  const env = await environmentOf(page);
  // Never an error page on the way: the Userland is Ready only once its Service routes, and a
  // connection refused just after (here: kwok's pod is Ready before the loopback stand-in listens)
  // keeps the starting page while the proxy tries again.
  assertNoErrorPage(titles);
  assert.equal(env.owner, "alice");
  assert.equal(env.xUser, "alice", "the environment received X-User from the proxy");
  await page.screenshot({ path: join(artifacts, "03-environment.png"), fullPage: true });
  const provisioned = await userland(userlandNameFor("alice", DEMO_TEMPLATE));
  assert.equal(provisioned.spec.user, "alice");
  assert.equal(provisioned.spec.templateName, DEMO_TEMPLATE);

  // A WebSocket through the proxy, echoed by the environment with the X-User it saw.
  await page.waitForFunction("document.getElementById('log')?.textContent?.includes('connected')");
  await page.click("#ping");
  await page.waitForFunction("document.getElementById('log')?.textContent?.includes('echo:')");
  assert.match((await page.textContent("#log")) ?? "", /echo: hello from alice \(X-User: alice\)/);

  // Logout at the auth service, then the platform sends the student back to the login page.
  await page.goto(`${platform.authUrl}/logout`);
  // The sign-out ends, through the home page (signed out now), at the provider's form. Waiting for
  // it first: a navigation started while that chain still runs is interrupted by its next hop.
  await page.click("button[type=submit]");
  await page.waitForSelector("input[name=name]", { timeout: 30_000 });
  await gotoSignIn(page, platform.url);
  await page.waitForSelector("input[name=name]");
  assert.ok(page.url().startsWith(platform.identityProviderUrl), "locked out after logout");
  const api = await context.request.get(`${platform.url}whoami.json`, {
    headers: { accept: "application/json" },
    maxRedirects: 0,
  });
  assert.equal(api.status(), 401, "an API client without a session gets 401");
  await context.close();
});

test("a second student in a second browser context only ever reaches their own environment", async () => {
  const alice = await browser.newContext();
  const bob = await browser.newContext();
  const alicePage = await login(alice, "alice");
  const bobPage = await login(bob, "bob");
  assert.deepEqual(await environmentOf(bobPage), { owner: "bob", xUser: "bob" });
  assert.deepEqual(await environmentOf(alicePage), { owner: "alice", xUser: "alice" });

  // Spoofed identity headers and another user's name in the path change nothing.
  const spoofed = await bob.request.get(`${platform.url}whoami.json`, {
    headers: { "X-User": "alice", x_user: "alice", "X-Forwarded-User": "alice" },
  });
  assert.equal(spoofed.status(), 200, (await spoofed.text()).slice(0, 300));
  const seen = (await spoofed.json()) as { user: string; xUser: string };
  assert.equal(seen.user, "bob");
  assert.equal(seen.xUser, "bob");
  const aliceService = childNames(DEMO_TEMPLATE, userlandNameFor("alice", DEMO_TEMPLATE)).service;
  for (const path of [`../${aliceService}/`, `%2e%2e/${aliceService}/`, `?user=alice`]) {
    const tricked = await bob.request
      .get(`${platform.url}${path}`, { headers: { host: `alice.127.0.0.1` } })
      .catch(() => undefined);
    if (tricked?.ok())
      assert.match(await tricked.text(), /id="owner">bob</, `${path} stays in bob's environment`);
  }
  await alice.close();
  await bob.close();
});

test("an admin imports a roster and changes the Template image; every environment follows", async () => {
  const teacher = await platform.token("userland-teacher");
  const roster = ["carol", "dave", "erin"];
  const response = await fetch(`${platform.userManagerUrl}/api/v1/rosters/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${teacher}`, "content-type": "application/json" },
    body: JSON.stringify({ templateName: DEMO_TEMPLATE, users: roster }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const result = (await response.json()) as { created: unknown[] };
  assert.equal(result.created.length, 3);

  const template = paths.namespaced(
    "userland.dev",
    "v1alpha1",
    "templates",
    platform.namespace,
    DEMO_TEMPLATE,
  );
  await platform.rest.patch(template, {
    spec: {
      template: {
        spec: {
          containers: [
            {
              name: "demo",
              image: "registry.invalid/userland-demo:2",
              ports: [{ name: "http", containerPort: 8080 }],
            },
          ],
        },
      },
    },
  });
  const everyone = [...roster, "alice", "bob"];
  for (const user of everyone) {
    const name = userlandNameFor(user, DEMO_TEMPLATE);
    await eventually(
      `${user}'s environment to run image 2 and be Ready`,
      async () => {
        const deployment = await platform.rest.get<{
          spec: { template: { spec: { containers: { image: string }[] } } };
        }>(
          paths.namespaced(
            "apps",
            "v1",
            "deployments",
            platform.namespace,
            childNames(DEMO_TEMPLATE, name).deployment,
          ),
        );
        const u = await userland(name);
        return (
          deployment.spec.template.spec.containers[0]?.image === "registry.invalid/userland-demo:2" &&
          u.status?.phase === "Ready"
        );
      },
      60_000,
    );
  }
});
