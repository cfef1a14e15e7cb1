/**
 * A newcomer's path, measured: `node bench/signIn.ts [N]` (default 20; `npm run bench:signin`).
 *
 * Starts what `npm start` starts with the real node (dev/realPlatform.ts: the chart, the platform's
 * image, deploy/'s IDEs) and, for VS Code, Jupyter and phpMyAdmin, N times each and one at a time:
 * a new student signs in in a real browser at the Template's URL, and the bench waits for the IDE's
 * own page. Every document the browser loads on the way is recorded (test/support/platformPages.ts):
 * an error page ("not answering", "taking too long", "could not start") counts against the run.
 * VS Code's environment is made at sign-in (provisioning); Jupyter's and phpMyAdmin's are created
 * just before, as a teacher's roster would. Each environment is deleted and its pod waited out
 * before the next, so every run includes a whole start. Issue 28's measurement; asserted nowhere.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { userlandNameFor } from "../api/naming.ts";
import { templatesPath, userlandsPath } from "../api/v1alpha1/index.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { heldPort, type HeldPort } from "../cluster/ports.ts";
import { DEFAULT_TEMPLATE, startRealPlatform, type RealPlatform } from "../dev/realPlatform.ts";
import { loadKubeConnection } from "../lib/kubeConnection.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { paths } from "../api/kubePaths.ts";
import { errorPages, gotoSignIn, launchBrowser, pagesLoaded } from "../cluster/harness/browser.ts";
import { IDE_PAGES, idePagesMismatch } from "../cluster/harness/idePages.ts";
import { runBench } from "./run.ts";
import { percentile } from "./stats.ts";

const count = Number(process.argv[2] ?? 20);
if (!Number.isInteger(count) || count < 1) {
  console.error("usage: node bench/signIn.ts [sign-ins per IDE, default 20]");
  process.exit(2);
}

/** Each IDE of `npm start`; only the default Template's environment is made at sign-in. */
const IDES = IDE_PAGES.map((ide) => ({ ...ide, provisioned: ide.template === DEFAULT_TEMPLATE }));
const IDE_TIMEOUT_MS = 240_000;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let platform: RealPlatform | undefined;
let ports: HeldPort | undefined;
let closeBrowser: (() => Promise<void>) | undefined;
async function cleanup(): Promise<void> {
  await closeBrowser?.().catch(() => undefined);
  await platform?.stop().catch(() => undefined);
  ports?.release();
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

interface Run {
  /** The login form's submit → the IDE's own page. */
  ms: number;
  errorPages: string[];
  startingPages: number;
}

await runBench("bench/signIn.ts", cleanup, async () => {
  ports = await heldPort(6);
  platform = await startRealPlatform({
    dir: join(repoRoot, ".userland", "bench-signin"),
    base: ports.port,
    log: (line) => console.error(line),
  });
  const browser = await launchBrowser();
  closeBrowser = () => browser.close();
  const rest = new KubeRest(await loadKubeConnection(platform.kubeconfig), "userland-bench");
  const namespace = platform.namespace;
  const pods = paths.namespaced("", "v1", "pods", namespace);
  // Every Template `npm start` installs is signed in to here: none left untried.
  const installed = await rest.list<{ metadata: { name: string } }>(templatesPath(namespace));
  const mismatch = idePagesMismatch(installed.items.map((t) => t.metadata.name));
  if (mismatch.untried.length + mismatch.notInstalled.length > 0)
    throw new Error(
      `cluster/harness/idePages.ts does not match npm start's Templates: ${JSON.stringify(mismatch)}`,
    );

  async function signIn(page: Page, url: string, user: string, selector: string): Promise<number> {
    await gotoSignIn(page, url);
    await page.waitForSelector("input[name=name]", { timeout: 60_000 });
    await page.fill("input[name=name]", user);
    const submitted = performance.now();
    await page.click("button[type=submit]");
    await page.waitForSelector(selector, { timeout: IDE_TIMEOUT_MS });
    return performance.now() - submitted;
  }

  async function once(ide: (typeof IDES)[number], i: number): Promise<Run> {
    const user = `${ide.template.slice(0, 4)}-${i}`;
    const name = userlandNameFor(user, ide.template);
    if (!ide.provisioned)
      await rest.create(userlandsPath(namespace), {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Userland",
        metadata: { name },
        spec: { user, templateName: ide.template },
      });
    const url = platform?.templates[ide.template] ?? "";
    const context = await browser.newContext();
    const pages = pagesLoaded(context);
    try {
      const ms = await signIn(await context.newPage(), url, user, ide.selector);
      return {
        ms,
        errorPages: errorPages(pages),
        startingPages: pages.filter((p) => /starting/i.test(p)).length,
      };
    } finally {
      await context.close();
      await rest.delete(userlandsPath(namespace, name)).catch(() => undefined);
      // The next run starts on a node without this environment's pod.
      const selector = `app.kubernetes.io/managed-by=userland-operator`;
      while ((await rest.list(pods, { query: { labelSelector: selector } })).items.length > 0)
        await sleep(250);
    }
  }

  const rows: string[] = [];
  for (const ide of IDES) {
    const runs: Run[] = [];
    for (let i = 0; i < count; i++) {
      const run = await once(ide, i);
      runs.push(run);
      console.error(`[bench] ${ide.template} ${i + 1}/${count}: ${JSON.stringify(run)}`);
    }
    const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
    const withErrors = runs.filter((r) => r.errorPages.length > 0).length;
    rows.push(
      `| ${ide.title} | ${count} | ${withErrors} | ${runs.reduce((n, r) => n + r.errorPages.length, 0)} | ` +
        `${runs.filter((r) => r.startingPages > 0).length} | ` +
        [50, 90, 100].map((p) => s(percentile(sorted, p))).join(" | ") +
        " |",
    );
  }

  console.log(
    `\nSign-in → the IDE in a real browser on the real node, ${count} new students per IDE, one at a time\n`,
  );
  console.log(
    "| IDE | sign-ins | with an error page | error pages | with a starting page | submit → IDE p50 | p90 | max |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows) console.log(row);
  console.log(
    "\nBaseline (issue 28, before Ready meant routable): every VS Code sign-in showed one error page" +
      ' ("not answering") for 10 s before the IDE. Error page: a document whose title says' +
      " not answering, taking too long or could not start; starting page: the proxy's page while" +
      " the environment starts.",
  );
});
