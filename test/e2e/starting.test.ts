/**
 * A start's last step in a real browser: the Userland is Ready, but its environment refuses
 * connections for a while longer (a pod whose Service does not route yet: kube-proxy's rules lag
 * the EndpointSlice, the app opens its port late). The student must see the starting page and
 * then their environment, never an error page (issue 28). The local platform's demo environments
 * listen only some seconds after Ready here (dev/platform.ts demoListensAfterReadyMs): longer than
 * the proxy's own retry of a refused connection (about 5 s), so both the retry and the starting
 * page's wait are on the path.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import { userlandNameFor } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { launchBrowser, pagesLoaded } from "../../cluster/harness/browser.ts";
import { assertNoErrorPage, environmentOf, signIn } from "../support/platformPages.ts";

const artifacts = join(repoRoot, "artifacts", "e2e-starting");
/** Longer than the proxy's retry of a refused connection just after Ready. */
const LISTENS_AFTER_READY_MS = 7_000;
let platform: Platform;
let browser: Browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `e2e-starting-${randomBytes(3).toString("hex")}`),
    demoListensAfterReadyMs: LISTENS_AFTER_READY_MS,
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

test("a new student whose environment answers only seconds after Ready sees the starting page, then the environment, and no error page", async () => {
  const context = await browser.newContext();
  const pages = pagesLoaded(context);
  const page = await context.newPage();
  await signIn(page, {
    url: platform.url,
    name: "newton",
    identityProviderUrl: platform.identityProviderUrl,
  });
  const env = await environmentOf(page, artifacts);
  assert.equal(env.owner, "newton");
  assert.equal(env.xUser, "newton");

  const userland = await platform.rest.get<Userland>(
    paths.namespaced(
      "userland.dev",
      "v1alpha1",
      "userlands",
      platform.namespace,
      userlandNameFor("newton", DEMO_TEMPLATE),
    ),
  );
  assert.equal(userland.status?.phase, "Ready");
  const readyAt = Date.parse(
    userland.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "",
  );
  assert.ok(
    Date.now() - readyAt >= LISTENS_AFTER_READY_MS,
    "the environment answered only after the window in which it refused connections",
  );
  assert.ok(
    pages.some((p) => /is starting/.test(p)),
    `the starting page was shown: ${JSON.stringify(pages)}`,
  );
  assertNoErrorPage(pages);
  // Nor any other 5xx page than the starting page (which answers 503 while it waits).
  assert.deepEqual(
    pages.filter((p) => /^5\d\d /.test(p) && !/is starting/.test(p)),
    [],
    `pages seen: ${JSON.stringify(pages)}`,
  );
  await context.close();
});
