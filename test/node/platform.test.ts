/**
 * The platform installed for real, the way an admin installs it, and students in real IDEs.
 *
 * Set-up replays deploy/README.md's install section command by command (test/support/guide.ts):
 * the platform image is built from the repository's Dockerfile (buildah) and "pushed" into the real
 * node's containerd, the chart is installed with the guide's own `helm install` line, the roles are
 * bound. Only what cannot be the same here is substituted, each substitution checked to apply: the
 * domain (ide.test), the login provider (the local OpenID provider, reached by pods and browser at
 * one URL, see MACHINE_HOST), the cluster's CIDRs, and a values file that schedules the pods on
 * the real node and shortens the idle timers.
 *
 * Then students use deploy/'s Templates with their images built locally (cluster/node/
 * localTemplates.ts) in a real chromium that reaches the proxy and auth Services only through
 * relays on 127.0.0.1 (--host-resolver-rules maps the hosts; everything else resolves nowhere).
 * Screenshots go to artifacts/node/.
 *
 * The guide's Monitoring section is replayed too (with the prometheus-operator's CRDs), and after
 * the class a real Prometheus, run in the node by test/support/nodePrometheus.ts from the chart's
 * ServiceMonitors and PrometheusRule, scrapes every component and answers every dashboard query.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { parse, stringify } from "yaml";
import { childNames, userlandNameFor } from "../../api/naming.ts";
import { MACHINE_HOST, POD_CIDR, SERVICE_CIDR } from "../../cluster/addresses.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import type { DevIdentityProvider } from "../../dev/identityProvider.ts";
import {
  NODE_PLATFORM_DOMAIN,
  exposePlatform,
  localTemplates,
  machineValues,
  serviceAddress,
  startLoginProvider,
  waitForPlatformReady,
} from "../../dev/nodePlatform.ts";
import { k8s } from "../../lib/kube.ts";
import { SESSION_COOKIE } from "../../lib/session.ts";
import { gotoSignIn, launchBrowser, pagesLoaded } from "../../cluster/harness/browser.ts";
import { eventually, serviceAccountToken, testCluster } from "../support/cluster.ts";
import { guideBlocks, guideCommands } from "../support/guide.ts";
import {
  createTemplate,
  createUserland,
  getUserland,
  patchTemplate,
  patchUserland,
  waitForPhase,
} from "../support/resources.ts";
import {
  execInContainer,
  nodeRelays,
  realNode,
  releaseNamespace,
  waitForOnePodReady,
} from "../support/realNode.ts";
import { installToolCrds, run } from "../chart/support.ts";
import { dashboardQueries, promqlOf } from "../chart/dashboard.ts";
import { startNodePrometheus, type NodePrometheus } from "../support/nodePrometheus.ts";
import {
  GATEWAY_PORT,
  createTraefikGatewayClass,
  startNodeGateway,
  waitForGatewayProgrammed,
  waitForRoutersLive,
  waitForRoutesAccepted,
  type NodeGateway,
} from "../support/nodeGateway.ts";
import { assertNoErrorPage } from "../support/platformPages.ts";
import { signInAt } from "../support/nodeClassroom.ts";
import { expectOnPage as expectOnPageIn, jupyterApi } from "../support/nodeBrowser.ts";

// The page's globals, for the functions playwright runs in the browser (this file has no DOM types).
declare const window: unknown;

const NAMESPACE = "ide";
const DOMAIN = NODE_PLATFORM_DOMAIN;
const COMPONENTS = ["operator", "auth", "proxy", "user-manager"];
const artifacts = join(repoRoot, "artifacts", "node");

let idp: DevIdentityProvider;
let relays: Awaited<ReturnType<typeof nodeRelays>>;
let browser: Browser;
let work: string;
let aliceContext: BrowserContext | undefined;
let prometheus: NodePrometheus | undefined;
let gateway: NodeGateway | undefined;
const MONITORING_CRDS = [
  "monitoring.coreos.com_servicemonitors.yaml",
  "monitoring.coreos.com_prometheusrules.yaml",
];

/** Runs one of the guide's commands as a reader would, in the repository, with our tools on PATH. */
async function replay(command: string, env: NodeJS.ProcessEnv): Promise<string> {
  const result = await run("bash", ["-euo", "pipefail", "-c", command], { env, timeoutMs: 900_000 });
  if (result.code !== 0) {
    throw new Error(
      `deploy/README.md: \`${command}\` failed (exit ${result.code}):\n${result.stderr}\n${result.stdout}`,
    );
  }
  return result.stdout;
}

const GUIDE_SECTIONS = [
  "## 1. Install",
  "## Monitoring",
  "## Gateway API instead of an Ingress",
  "## Per-user origins",
];
const guide = GUIDE_SECTIONS.flatMap((section) =>
  guideCommands(join(repoRoot, "deploy", "README.md"), section),
);
const guideStep = (heading: string) => {
  const step = guide.find((s) => s.heading.startsWith(heading));
  assert.ok(
    step,
    `deploy/README.md has "${heading}" with commands under one of ${GUIDE_SECTIONS.join(", ")}`,
  );
  return step;
};
let guideEnv: NodeJS.ProcessEnv;
// What this machine has instead of the guide's example university.
let substitutions: [string, string][];
const substituted = new Set<string>();

/**
 * Replays the commands under `heading` (each timed in the output), or only its code block number
 * `block`; returns how long they took.
 */
/** `text` of the guide with this machine's values in place of its examples (substitutions). */
function substitute(text: string): string {
  let result = text;
  for (const [from, to] of substitutions) {
    if (result.includes(from)) substituted.add(from);
    result = result.replaceAll(from, to);
  }
  return result;
}

async function replayGuide(heading: string, block?: number): Promise<number> {
  const started = Date.now();
  const { blocks } = guideStep(heading);
  const chosen = block === undefined ? blocks : [blocks[block] ?? []];
  assert.ok(chosen[0]?.length, `deploy/README.md: "${heading}" has a code block ${block ?? 0}`);
  for (const original of chosen.flat()) {
    let command = substitute(original);
    if (/^helm (install|upgrade) /.test(command))
      command += ` --values ${join(work, "on-this-machine.yaml")}`;
    const commandStarted = Date.now();
    await replay(command, guideEnv);
    process.stdout.write(`# guide: ${command.slice(0, 110)} (${Date.now() - commandStarted} ms)\n`);
  }
  return Date.now() - started;
}

/** The tools the guide uses, on this machine: kubectl and helm against the test cluster, docker's stand-in. */
async function prepareGuide(): Promise<void> {
  const node = await realNode();
  const { info } = await testCluster();
  const helmHome = join(work, "helm");
  guideEnv = {
    // HOME and the rest stay: the image cache and npm's settings (registry, CA) live there.
    ...process.env,
    PATH: `${join(work, "bin")}:${info.binDir}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    KUBECONFIG: info.kubeconfig,
    HELM_CACHE_HOME: join(helmHome, "cache"),
    HELM_CONFIG_HOME: join(helmHome, "config"),
    HELM_DATA_HOME: join(helmHome, "data"),
    USERLAND_CTR: join(info.binDir, "ctr"),
    USERLAND_CONTAINERD: node.containerdSocket,
  };
  mkdirSync(join(work, "bin"), { recursive: true });
  writeFileSync(
    join(work, "bin", "docker"),
    `#!/bin/sh\nexec "${process.execPath}" "${join(repoRoot, "test", "support", "dockerStandIn.ts")}" "$@"\n`,
    { mode: 0o755 },
  );
  substitutions = [
    ["ide.uni.example", DOMAIN],
    ["https://login.uni.example/realms/students", idp.issuer],
    ["auth.oidc.clientId=userland ", `auth.oidc.clientId=${idp.clientId} `],
    ["client-secret='...'", `client-secret='${idp.clientSecret}'`],
    ["{uni.example}", "{example.invalid}"],
    ["{10.244.0.0/16}", `{${POD_CIDR}}`],
    ["{10.96.0.0/12}", `{${SERVICE_CIDR}}`],
  ];
  writeFileSync(
    join(work, "on-this-machine.yaml"),
    stringify({
      ...machineValues({ provisionTemplate: "jupyter", fastTimers: true }),
      // Scraped often enough for a test's few minutes of class to show in rates.
      monitoring: { serviceMonitor: { interval: "5s", scrapeTimeout: "4s" } },
    }),
  );
}

before(
  async () => {
    rmSync(artifacts, { recursive: true, force: true });
    mkdirSync(artifacts, { recursive: true });
    work = mkdtempSync(join(tmpdir(), "userland-guide-"));
    const node = await realNode();
    const { info } = await testCluster();
    relays = await nodeRelays();
    idp = await startLoginProvider(relays, { redirectUris: [`http://auth.${DOMAIN}/callback/oidc`] });

    await prepareGuide();
    const install = await replayGuide("## 1. Install");
    const keys = await replayGuide("### Session keys");
    process.stdout.write(`# the guide's install: ${install} ms; its own session key Secret: ${keys} ms\n`);
    // Monitoring as the guide turns it on, for the prometheus-operator's kinds.
    await installToolCrds(MONITORING_CRDS);
    process.stdout.write(`# the guide's monitoring: ${await replayGuide("## Monitoring")} ms\n`);
    const unused = substitutions.map(([from]) => from).filter((from) => !substituted.has(from));
    assert.deepEqual(unused, [], "every substitution matches something in the guide (or the guide changed)");

    const containerd = { ctr: join(info.binDir, "ctr"), socket: node.containerdSocket };
    const templates = await localTemplates(containerd, (template) => {
      // Short enough to watch idle culling happen within the test.
      if (template.metadata.name === "jupyter") template.spec.idleTimeout = "20s";
    });
    for (const template of templates)
      await createTemplate(NAMESPACE, template.metadata.name ?? "", template.spec);

    const hosts = await exposePlatform(
      relays,
      (await testCluster()).kc.makeApiClient(k8s.CoreV1Api),
      NAMESPACE,
      DOMAIN,
    );
    browser = await launchBrowser([`--host-resolver-rules=${hosts.resolverRules}`]);
  },
  { timeout: 1_800_000 },
);

after(async () => {
  await prometheus?.stop();
  // Traefik's log (its access log too) stays with the screenshots.
  if (gateway) copyFileSync(gateway.log, join(artifacts, "traefik.log"));
  await gateway?.stop();
  await browser?.close();
  await relays?.close();
  await idp?.close();
  if (work) rmSync(work, { recursive: true, force: true });
  await releaseNamespace(NAMESPACE);
});

test("deploy/README.md's install section runs the platform's own image: every component Ready, non-root, read-only, behind NetworkPolicies", async () => {
  const node = await realNode();
  const { kc } = await testCluster();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitForPlatformReady(apps, NAMESPACE).catch(async (error: unknown) => {
    const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items;
    const states = pods.map(
      (p) => `${p.metadata?.name}: ${JSON.stringify(p.status?.containerStatuses?.[0]?.state)}`,
    );
    throw new Error(`${(error as Error).message}\n${states.join("\n")}`);
  });

  const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items.filter((p) =>
    COMPONENTS.includes(p.metadata?.labels?.["app.kubernetes.io/component"] ?? ""),
  );
  for (const component of COMPONENTS) {
    const mine = pods.filter((p) => p.metadata?.labels?.["app.kubernetes.io/component"] === component);
    assert.ok(mine.length > 0, `${component} has pods`);
    for (const pod of mine) {
      const name = pod.metadata?.name ?? "";
      assert.equal(pod.spec?.nodeName, node.name, `${name} runs on the real node`);
      assert.equal(pod.spec?.containers[0]?.image, "registry.uni.example/userland:0.1.0", `${name}'s image`);
      const status = pod.status?.containerStatuses?.[0];
      assert.equal(status?.ready, true, `${name} is Ready by its probes`);
      assert.equal(status?.restartCount, 0, `${name} never restarted`);
      // What the process really is, asked inside its container.
      const id = await execInContainer(pod, ["node", "-e", "process.stdout.write(String(process.getuid()))"]);
      assert.equal(id.stdout, "10001", `${name} runs as uid 10001: ${id.stderr}`);
      const write = await execInContainer(pod, ["node", "-e", "require('fs').writeFileSync('/app/x', 'x')"]);
      assert.notEqual(write.code, 0, `${name} cannot write its root file system`);
    }
  }
  const policies = kc.makeApiClient(k8s.NetworkingV1Api);
  assert.deepEqual(
    (await policies.listNamespacedNetworkPolicy({ namespace: NAMESPACE })).items
      .map((p) => p.metadata?.name)
      .sort(),
    ["userland-platform", "userland-platform-public", "userland-user-environments"],
    "the NetworkPolicies are on",
  );
});

/** A fresh browser profile; beside the other tests on 2 cores a navigation may take over 30 s. */
/** Every page each browser context loaded, in order (pagesLoaded). */
const pagesSeen = new WeakMap<BrowserContext, string[]>();

async function newContext(options: Parameters<Browser["newContext"]>[0] = {}): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  context.setDefaultNavigationTimeout(120_000);
  context.setDefaultTimeout(60_000);
  pagesSeen.set(context, pagesLoaded(context));
  return context;
}

/** No error page on this context's way from sign-in to the IDE (assertNoErrorPage). */
const noErrorPage = (context: BrowserContext): void => assertNoErrorPage(pagesSeen.get(context) ?? []);

/** Signs in at the local provider as `name`, starting from `url`; returns the page once back. */
async function signIn(context: BrowserContext, url: string, name: string): Promise<Page> {
  const page = await context.newPage();
  await gotoSignIn(page, url);
  await signInAt(idp, page, name);
  return page;
}

async function shot(page: Page, file: string): Promise<void> {
  await page.screenshot({ path: join(artifacts, file) });
}

/** Waits for `selector` on the page; on failure leaves a screenshot in artifacts/node/. */
const expectOnPage = (page: Page, selector: string, what: string, timeout = 120_000) =>
  expectOnPageIn(page, selector, what, timeout, artifacts);

async function environmentPod(user: string, template: string): Promise<V1Pod> {
  const userland = await getUserland(NAMESPACE, userlandNameFor(user, template));
  const { deployment } = childNames(userland.spec.templateName, userland.metadata.name ?? "");
  const apps = (await testCluster()).kc.makeApiClient(k8s.AppsV1Api);
  const selector = (await apps.readNamespacedDeployment({ namespace: NAMESPACE, name: deployment })).spec
    ?.selector?.matchLabels;
  const labels = Object.entries(selector ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return waitForOnePodReady(NAMESPACE, labels, 180_000);
}

/** Runs a cell in a new notebook in the page's Jupyter: its kernel speaks over a WebSocket. */
async function runCell(on: Page, base: string, name: string): Promise<void> {
  const notebook = {
    type: "notebook",
    content: {
      cells: [{ cell_type: "code", source: "6 * 7", metadata: {}, outputs: [], execution_count: null }],
      metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
      nbformat: 4,
      nbformat_minor: 5,
    },
  };
  const saved = await jupyterApi(on, "PUT", `/api/contents/work/${name}`, notebook);
  assert.equal(saved.status, 201, JSON.stringify(saved.json));
  await on.goto(`${base}notebooks/work/${name}`, { waitUntil: "domcontentloaded" });
  await on.waitForFunction(
    () =>
      (
        window as { Jupyter?: { notebook?: { kernel?: { is_connected(): boolean } } } }
      ).Jupyter?.notebook?.kernel?.is_connected() === true,
    undefined,
    { timeout: 120_000 },
  );
  await on.click(".cell .input_area");
  await on.keyboard.press("Shift+Enter");
  await expectOnPage(on, ".output_area:has-text('42')", `the cell's output 42 (${name})`, 60_000);
}

test("a student signs in, waits on the starting page, runs a cell in their own Jupyter; another student cannot see it; idle culling stops it and the next visit starts it with the notebook kept", async () => {
  const url = `http://jupyter.${DOMAIN}/`;
  const alice = await newContext();
  const signedIn = Date.now();
  const page = await signIn(alice, url, "alice");
  // Auto-provisioning created her Userland at sign-in: the proxy shows it starting.
  await expectOnPage(page, "#phase", "the starting page", 30_000);
  await shot(page, "jupyter-starting.png");
  await expectOnPage(page, "#notebook_list", "Jupyter's file list", 180_000);
  noErrorPage(alice);
  const firstIde = Date.now() - signedIn;
  process.stdout.write(`# alice: sign-in → Jupyter's page: ${firstIde} ms\n`);
  assert.equal(new URL(page.url()).hostname, `jupyter.${DOMAIN}`, "Jupyter at its Template's host");
  await shot(page, "jupyter-tree.png");

  await runCell(page, url, "alice.ipynb");
  await shot(page, "jupyter-cell.png");

  // Dave, on another browser profile, gets his own Jupyter: alice's notebook is not in it.
  const dave = await newContext();
  const davePage = await signIn(dave, url, "dave");
  await expectOnPage(davePage, "#notebook_list", "dave's Jupyter", 180_000);
  const listing = await jupyterApi(davePage, "GET", "/api/contents/work");
  assert.equal(listing.status, 200);
  const names = ((listing.json as { content: { name: string }[] }).content ?? []).map((f) => f.name);
  assert.ok(!names.includes("alice.ipynb"), `dave's work folder: ${names.join(", ")}`);
  const alicePod = await environmentPod("alice", "jupyter");
  const davePod = await environmentPod("dave", "jupyter");
  assert.notEqual(alicePod.metadata?.name, davePod.metadata?.name, "two pods");
  await dave.close();

  // Both leave; after the Template's 20 s idle timeout the operator stops alice's environment.
  await page.close();
  await eventually(
    "alice's idle Jupyter to be stopped",
    async () => (await getUserland(NAMESPACE, userlandNameFor("alice", "jupyter"))).spec.enabled === false,
    180_000,
    1000,
  );
  await waitForPhase(NAMESPACE, userlandNameFor("alice", "jupyter"), "Stopped", 120_000);
  // Culling seen: back to an idle timeout that leaves the later tests alone.
  await patchTemplate(NAMESPACE, "jupyter", { spec: { idleTimeout: "1h" } });
  // The next visit starts it again (proxy.startOnAccess) with her notebook still there.
  const again = await alice.newPage();
  await again.goto(url, { waitUntil: "domcontentloaded" });
  await expectOnPage(again, "#notebook_list", "Jupyter after the restart", 180_000);
  const kept = await jupyterApi(again, "GET", "/api/contents/work/alice.ipynb");
  assert.equal(kept.status, 200, "alice's notebook survived stop and start");
  assert.equal(
    (kept.json as { content: { cells: { source: string }[] } }).content.cells[0]?.source ?? "",
    "6 * 7",
  );
  aliceContext = alice;
});

/** The key id in the header of the browser's session cookie. */
async function sessionKid(context: BrowserContext): Promise<string> {
  const cookie = (await context.cookies(`http://jupyter.${DOMAIN}/`)).find((c) => c.name === SESSION_COOKIE);
  assert.ok(cookie, "a session cookie");
  const header = JSON.parse(Buffer.from(cookie.value.split(".")[0] ?? "", "base64url").toString()) as {
    kid?: string;
  };
  assert.ok(header.kid, "the session names its key");
  return header.kid;
}

test("rotating the session key as the guide says logs nobody out, and the proxy takes the new key without a restart", async () => {
  assert.ok(aliceContext, "alice is signed in (the Jupyter test ran)");
  const url = `http://jupyter.${DOMAIN}/`;
  const oldKid = await sessionKid(aliceContext);
  const pods = async (component: string) =>
    (
      await (await testCluster()).kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: `app.kubernetes.io/component=${component}`,
      })
    ).items;
  const proxyPods = async () =>
    (await pods("proxy")).map((p) => `${p.metadata?.name}/${p.status?.containerStatuses?.[0]?.restartCount}`);
  const proxiesBefore = await proxyPods();

  // Step 1: a new key first, the auth service restarted. Its old pod serves on, with the old key
  // only, through its endpoint drain after `rollout status` returns (the guide says so): a
  // sign-in in that time may still be signed with the old key, which stays valid. Waited out here.
  const rotated = await replayGuide("### Rotating the session keys", 0);
  process.stdout.write(`# rotation, step 1: ${rotated} ms\n`);
  await eventually(
    "the old auth pod to finish its endpoint drain and go",
    async () => (await pods("auth")).every((p) => !p.metadata?.deletionTimestamp),
    60_000,
    500,
  );
  const still = await aliceContext.newPage();
  await still.goto(url, { waitUntil: "domcontentloaded" });
  await expectOnPage(
    still,
    "#notebook_list",
    "alice, signed in before the rotation, still in Jupyter",
    60_000,
  );
  await still.close();

  // A new sign-in is signed with the new key, and the proxy (not restarted) accepts it.
  const fresh = await newContext();
  const page = await signIn(fresh, url, "alice");
  await expectOnPage(page, "#notebook_list", "alice's new session accepted by the proxy", 60_000);
  const newKid = await sessionKid(fresh);
  assert.notEqual(newKid, oldKid, "the new session is signed with the new key");

  // Step 2: only the new key kept; sessions it signed stay valid.
  await replayGuide("### Rotating the session keys", 1);
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await expectOnPage(page, "#notebook_list", "the new session after the old key is dropped", 60_000);
  assert.deepEqual(await proxyPods(), proxiesBefore, "the proxy was not restarted");
  await fresh.close();
  await aliceContext.close();
});

test("a student runs SQL in phpMyAdmin on their own MariaDB; another student's database does not have it", async () => {
  const url = `http://phpmyadmin.${DOMAIN}/`;
  // A teacher assigned the database class's environment, stopped until first use.
  await createUserland(NAMESPACE, userlandNameFor("bob", "phpmyadmin"), "bob", "phpmyadmin", false);
  await createUserland(NAMESPACE, userlandNameFor("eve", "phpmyadmin"), "eve", "phpmyadmin", false);

  /** Types `sql` into phpMyAdmin's SQL editor as a student would and runs it. */
  async function runSql(page: Page, sql: string): Promise<void> {
    await page.goto(`${url}index.php?route=/database/sql&db=student`, { waitUntil: "domcontentloaded" });
    await expectOnPage(page, ".CodeMirror", "phpMyAdmin's SQL editor", 60_000);
    // Its scripts bind the editor and the form once everything has loaded; even after the network
    // is idle they may still be at it (CI saw the keys typed into nothing, the editor left empty):
    // typed again, at most three times, until the editor holds something.
    await page.waitForLoadState("networkidle");
    const editor = page.locator(".CodeMirror >> visible=true").first();
    const held = () =>
      editor.evaluate((el) =>
        (el as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue(),
      );
    for (let attempt = 1; (await held()).trim() === ""; attempt++) {
      if (attempt > 3)
        throw new Error("phpMyAdmin's SQL editor stayed empty after typing the query three times");
      await editor.click();
      await page.keyboard.type(sql);
    }
    await page.click("#button_submit_query");
  }

  const bob = await newContext();
  const page = await signIn(bob, url, "bob");
  await expectOnPage(page, "#pma_navigation", "phpMyAdmin", 240_000);
  noErrorPage(bob);
  await runSql(
    page,
    "CREATE TABLE notes (t VARCHAR(64)); INSERT INTO notes VALUES ('bob was here'); SELECT * FROM notes;",
  );
  await expectOnPage(page, "#page_content table:has-text('bob was here')", "the query's result", 60_000);
  await shot(page, "phpmyadmin-sql.png");
  await bob.close();

  const eve = await newContext();
  const evePage = await signIn(eve, url, "eve");
  await expectOnPage(evePage, "#pma_navigation", "eve's phpMyAdmin", 240_000);
  await runSql(evePage, "SELECT * FROM notes;");
  await expectOnPage(
    evePage,
    '#page_content :text("doesn\'t exist")',
    "eve's database has no table notes",
    60_000,
  );
  await eve.close();
});

test("a student opens a terminal in VS Code (code-server) and runs a command in their own container", async () => {
  const url = `http://code-server.${DOMAIN}/`;
  await createUserland(NAMESPACE, userlandNameFor("carol", "code-server"), "carol", "code-server", true);
  const carol = await newContext({ viewport: { width: 1280, height: 800 } });
  const page = await signIn(carol, url, "carol");
  await expectOnPage(page, ".monaco-workbench", "VS Code's workbench", 240_000);
  noErrorPage(carol);
  // A new terminal from the command palette, as a student finds it; its shell talks over a WebSocket.
  await page.waitForLoadState("networkidle");
  await page.keyboard.press("F1");
  await expectOnPage(page, ".quick-input-widget input", "the command palette", 30_000);
  await page.keyboard.type("Terminal: Create New Terminal");
  await page
    .locator(".quick-input-list .monaco-list-row", { hasText: "Terminal: Create New Terminal" })
    .first()
    .click();
  await expectOnPage(page, ".xterm-helper-textarea", "a terminal", 60_000);
  await page.waitForTimeout(2000);
  await page.keyboard.type("echo made by $(whoami) > /home/coder/from-terminal.txt\n");
  const pod = await environmentPod("carol", "code-server");
  const file = await eventually(
    "the terminal's command to have run",
    async () => {
      const cat = await execInContainer(pod, ["cat", "/home/coder/from-terminal.txt"]);
      return cat.code === 0 ? cat.stdout.trim() : undefined;
    },
    60_000,
    1000,
  );
  assert.equal(file, "made by coder");
  await shot(page, "code-server-terminal.png");
  await carol.close();
});

test("a student in two classes finds Jupyter and phpMyAdmin on their home page and opens each at its own host", async () => {
  // bob's phpMyAdmin is from the database class above; the programming class gives him Jupyter.
  await createUserland(NAMESPACE, userlandNameFor("bob", "jupyter"), "bob", "jupyter", true);
  const bob = await newContext();
  const home = await signIn(bob, `http://${DOMAIN}/_userland/home`, "bob");
  await expectOnPage(home, "#home", "bob's home page", 60_000);
  const cards = () => home.locator("ul[aria-label='Your environments'] > li.card");
  assert.deepEqual(
    (await cards().locator("h3").allTextContents()).map((t) => t.trim()).sort(),
    ["JupyterLab", "MariaDB + phpMyAdmin"].sort(),
    "exactly bob's two environments",
  );
  // The page follows the environments' states by itself: wait until both can be opened.
  await eventually(
    "both of bob's environments to be ready on his home page",
    async () => {
      const states = await Promise.all((await cards().all()).map((c) => c.getAttribute("data-state")));
      return states.length === 2 && states.every((s) => s === "ready") ? states : undefined;
    },
    240_000,
    2000,
  );
  await shot(home, "home-two-classes.png");
  for (const [title, host, selector] of [
    ["JupyterLab", `jupyter.${DOMAIN}`, "#notebook_list"],
    ["MariaDB + phpMyAdmin", `phpmyadmin.${DOMAIN}`, "#pma_navigation"],
  ] as const) {
    await home.goto(`http://${DOMAIN}/_userland/home`, { waitUntil: "domcontentloaded" });
    await home.click(`a[aria-label='Open ${title}']`);
    await expectOnPage(home, selector, `${title} opened from the home page`, 120_000);
    assert.equal(new URL(home.url()).hostname, host, `${title} at its own host`);
  }
  await bob.close();
});

interface PromTarget {
  scrapePool: string;
  labels: Record<string, string>;
  health: string;
  lastError: string;
  scrapeUrl: string;
}
interface PromRuleGroup {
  name: string;
  rules: { name: string; type: string; health: string; lastError?: string }[];
}

/**
 * A teacher (a ServiceAccount bound to userland-teacher, as the guide binds teachers) imports a
 * roster through the user-manager's Service; `users` already have `template`, so nothing starts.
 */
async function teacherImportsRoster(template: string, users: string[]): Promise<void> {
  const { kc } = await testCluster();
  await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: NAMESPACE,
    body: {
      metadata: { name: "teacher-service-account" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "userland-teacher" },
      subjects: [{ kind: "ServiceAccount", name: "teacher", namespace: NAMESPACE }],
    },
  });
  const token = await serviceAccountToken(NAMESPACE, "teacher");
  const port = await relays.expose(
    await serviceAddress(kc.makeApiClient(k8s.CoreV1Api), NAMESPACE, "user-manager"),
  );
  const response = await fetch(`http://127.0.0.1:${port}/api/v1/rosters/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ templateName: template, users }),
  });
  assert.equal(response.status, 200, await response.text());
}

test("a real Prometheus scrapes every component through the chart's ServiceMonitors, evaluates its alert rules, and every dashboard panel shows the class above", async () => {
  // The class's teacher, too: the roster for the database class, already all there.
  await teacherImportsRoster("phpmyadmin", ["bob", "eve"]);
  // Started after the class (the counters are the components' own, since they started), so the
  // ServiceMonitors are translated with the pods the session key rotation left.
  const started = Date.now();
  prometheus = await startNodePrometheus(NAMESPACE, relays);
  process.stdout.write(`# Prometheus started in the node: ${Date.now() - started} ms\n`);
  const node = prometheus;
  let last: PromTarget[] = [];
  const targets = await eventually(
    "every component's target to be scraped up",
    async () => {
      const { activeTargets } = await node.api<{ activeTargets: PromTarget[] }>("targets");
      last = activeTargets;
      // The scrape pools are the ServiceMonitors' (userland-<component>), one per component; a
      // target just (re)loaded is "unknown" until its first scrape.
      const pools = new Set(activeTargets.map((t) => t.scrapePool));
      const scraped = activeTargets.every((t) => t.health !== "unknown");
      return scraped && COMPONENTS.every((c) => pools.has(`serviceMonitor/${NAMESPACE}/userland-${c}/0`))
        ? activeTargets
        : undefined;
    },
    120_000,
    1000,
  ).catch((error: unknown) => {
    const seen = last.map((t) => `${t.scrapePool} ${t.scrapeUrl}: ${t.health} ${t.lastError}`);
    throw new Error(`${(error as Error).message}\n${seen.join("\n")}`);
  });
  for (const target of targets)
    assert.equal(target.health, "up", `${target.scrapeUrl} (${target.labels.job}): ${target.lastError}`);
  const jobs = new Set(targets.map((t) => t.labels.job));
  assert.equal(jobs.size, COMPONENTS.length, `one scraped Service per component: ${[...jobs].join(", ")}`);
  const componentUp = await node.api<{ result: { metric: Record<string, string> }[] }>("query", {
    query: `up{namespace="${NAMESPACE}"} == 1`,
  });
  assert.equal(componentUp.result.length, targets.length, "up is 1 for every target");

  // The chart's PrometheusRule, loaded as rule files: every rule evaluated without error.
  const { groups } = await eventually(
    "every rule to have been evaluated",
    async () => {
      const data = await node.api<{ groups: PromRuleGroup[] }>("rules");
      const rules = data.groups.flatMap((g) => g.rules);
      return rules.length > 0 && rules.every((r) => r.health !== "unknown") ? data : undefined;
    },
    60_000,
    1000,
  );
  const rules = groups.flatMap((g) => g.rules);
  assert.ok(rules.filter((r) => r.type === "alerting").length >= 6, `the alerts are loaded: ${rules.length}`);
  for (const rule of rules) assert.equal(rule.health, "ok", `rule ${rule.name}: ${rule.lastError ?? ""}`);

  await eventually(
    "the teacher's roster import to be scraped",
    async () =>
      (
        await node.api<{ result: unknown[] }>("query", {
          query: `userland_user_manager_http_requests_total{namespace="${NAMESPACE}",route="/api/v1/rosters/import"}`,
        })
      ).result.length > 0,
    60_000,
    1000,
  );

  await eventually(
    "two scrapes of every target, for rates",
    async () =>
      (
        await node.api<{ result: unknown[] }>("query", {
          query: `count_over_time(up{namespace="${NAMESPACE}"}[5m]) >= 2`,
        })
      ).result.length === targets.length,
    60_000,
    1000,
  );

  // Every panel's queries as Grafana sends them for this namespace and every Template.
  const panels = new Map<string, number>();
  for (const query of dashboardQueries()) {
    const promql = promqlOf(query.expr, "5m", { namespace: NAMESPACE, template: ".*" });
    const { result } = await node.api<{ result: unknown[] }>("query", { query: promql });
    const key = query.panel ?? query.where;
    panels.set(key, (panels.get(key) ?? 0) + result.length);
    process.stdout.write(`# ${query.where}: ${result.length} series for ${promql.slice(0, 100)}\n`);
  }
  const empty = [...panels].filter(([, n]) => n === 0).map(([panel]) => panel);
  assert.deepEqual(empty, [], "every panel (and variable) shows series for the class");
});

/** The Gateway API CRDs (standard channel) Traefik's provider watches, as an admin installs them. */
const GATEWAY_CRDS = [
  "gatewayclasses",
  "gateways",
  "httproutes",
  "referencegrants",
  "grpcroutes",
  "backendtlspolicies",
].map((kind) => `gateway.networking.k8s.io_${kind}.yaml`);

interface GuideGateway {
  metadata: { name: string; namespace: string };
  spec: {
    gatewayClassName: string;
    listeners: { name: string; protocol: string; port: number; hostname?: string; tls?: unknown }[];
  };
}

/**
 * The guide's example Gateway, as this machine can have it: Traefik's GatewayClass, and plain HTTP
 * on Traefik's entry point (the platform here is installed with publicScheme http and has no
 * certificates); names, namespace and hostnames are the guide's (with this machine's domain).
 */
function guideGateway(gatewayClassName: string): GuideGateway {
  const yaml = guideBlocks(
    join(repoRoot, "deploy", "README.md"),
    "## Gateway API instead of an Ingress",
    "yaml",
  );
  assert.equal(yaml.length, 1, "the guide shows one Gateway");
  const gateway = parse(substitute(yaml[0] ?? "")) as GuideGateway;
  assert.ok(
    gateway.spec.listeners.every((l) => l.protocol === "HTTPS" && l.tls),
    "the guide's listeners are HTTPS",
  );
  gateway.spec.gatewayClassName = gatewayClassName;
  gateway.spec.listeners = gateway.spec.listeners.map(({ tls: _tls, ...listener }) => ({
    ...listener,
    protocol: "HTTP",
    port: GATEWAY_PORT,
  }));
  return gateway;
}

test("deploy/README.md's Gateway section with a real Gateway (Traefik in the node): sign-in at the auth host, the home page, Jupyter over HTTP and a WebSocket at its Template's host and then at a per-user host, and the console, all through the Gateway", async () => {
  const { kc } = await testCluster();
  // The class above is over: its environments stop, so gale's fits on the node's two CPUs.
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const { items } = (await custom.listNamespacedCustomObject({
    group: "userland.dev",
    version: "v1alpha1",
    namespace: NAMESPACE,
    plural: "userlands",
  })) as { items: { metadata: { name: string } }[] };
  for (const { metadata } of items)
    await patchUserland(NAMESPACE, metadata.name, { spec: { enabled: false } });
  // What an admin brings: the CRDs, an implementation (Traefik) and its GatewayClass, the Gateway.
  await installToolCrds(GATEWAY_CRDS);
  await createTraefikGatewayClass("traefik");
  const started = Date.now();
  gateway = await startNodeGateway(relays);
  const manifest = guideGateway("traefik");
  const file = join(work, "gateway.yaml");
  writeFileSync(file, stringify(manifest));
  await replay(`kubectl apply -f ${file}`, guideEnv);
  await waitForGatewayProgrammed(manifest.metadata.namespace, manifest.metadata.name);
  process.stdout.write(
    `# Traefik started in the node, the guide's Gateway programmed: ${Date.now() - started} ms\n`,
  );

  // The guide's values: the Ingresses go, the HTTPRoutes come and Traefik accepts all of them.
  process.stdout.write(
    `# the guide's Gateway section: ${await replayGuide("## Gateway API instead of an Ingress")} ms\n`,
  );
  const networking = kc.makeApiClient(k8s.NetworkingV1Api);
  assert.deepEqual(
    (await networking.listNamespacedIngress({ namespace: NAMESPACE })).items,
    [],
    "no Ingress left",
  );
  const routes = await waitForRoutesAccepted(NAMESPACE);
  assert.deepEqual(routes.sort(), ["userland-auth", "userland-proxy", "userland-user-manager"]);
  await waitForRoutersLive(gateway, NAMESPACE);

  // From here the browser has one way in: every host of the domain is Traefik's listener.
  await browser.close();
  browser = await launchBrowser([
    `--host-resolver-rules=MAP ${DOMAIN} 127.0.0.1:${gateway.port}, MAP *.${DOMAIN} 127.0.0.1:${gateway.port}, ` +
      `MAP ${MACHINE_HOST} 127.0.0.1, MAP * ~NOTFOUND`,
  ]);
  const url = `http://jupyter.${DOMAIN}/`;
  const gale = await newContext();
  const page = await signIn(gale, url, "gale");
  await expectOnPage(page, "#notebook_list", "gale's Jupyter through the Gateway", 240_000);
  noErrorPage(gale);
  assert.equal(new URL(page.url()).hostname, `jupyter.${DOMAIN}`, "Jupyter at its Template's host");

  await runCell(page, url, "gateway.ipynb");
  await shot(page, "gateway-jupyter-cell.png");

  // The home page, on the base domain (the proxy route's apex host).
  await page.goto(`http://${DOMAIN}/_userland/home`, { waitUntil: "domcontentloaded" });
  await expectOnPage(page, "#home", "gale's home page through the Gateway", 60_000);
  assert.deepEqual(
    (await page.locator("ul[aria-label='Your environments'] > li.card h3").allTextContents()).map((t) =>
      t.trim(),
    ),
    ["JupyterLab"],
  );

  // The console: a teacher appointed as the guide says for one person, at <domain>/console/ (the
  // user-manager's route wins over the proxy's "/" on the apex), sees gale in the class.
  await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: NAMESPACE,
    body: {
      metadata: { name: "gateway-teacher" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "userland-teacher" },
      subjects: [{ kind: "User", name: "userland:tess", apiGroup: "rbac.authorization.k8s.io" }],
    },
  });
  const tess = await newContext();
  const console_ = await signIn(tess, `http://${DOMAIN}/console/class?template=jupyter`, "tess");
  await expectOnPage(
    console_,
    `#row-${userlandNameFor("gale", "jupyter")}`,
    "gale's row in the console's class table",
    60_000,
  );
  await shot(console_, "gateway-console.png");
  await tess.close();

  // Per-user origins, as the guide turns them on: the Gateway's wildcard route carries the new hosts.
  await replayGuide("## Per-user origins");
  for (const component of COMPONENTS)
    await replay(
      `kubectl -n ${NAMESPACE} rollout status deployment/userland-${component} --timeout=180s`,
      guideEnv,
    );
  await waitForRoutersLive(gateway, NAMESPACE);
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await expectOnPage(page, "#notebook_list", "gale's Jupyter at her own host", 120_000);
  const own = new URL(page.url());
  assert.equal(own.hostname, `${userlandNameFor("gale", "jupyter")}--jupyter.${DOMAIN}`, "her own origin");
  await runCell(page, own.origin + "/", "per-user.ipynb");
  await shot(page, "gateway-per-user.png");
  await gale.close();

  // Traefik's access log: the requests above came through it, the kernels' WebSockets included (a
  // WebSocket's line is written when it closes, just now for the last one).
  const accessLog = () =>
    readFileSync(gateway?.log ?? "", "utf8")
      .split("\n")
      .filter((line) => line.startsWith("{") && line.includes('"RequestHost"'))
      .map(
        (line) => JSON.parse(line) as { RequestHost: string; RequestPath: string; DownstreamStatus: number },
      );
  let requests = accessLog();
  const through = (host: string, path: RegExp, status?: number) =>
    requests.some(
      (r) =>
        r.RequestHost === host &&
        path.test(r.RequestPath) &&
        (status === undefined || r.DownstreamStatus === status),
    );
  const perUserHost = `${userlandNameFor("gale", "jupyter")}--jupyter.${DOMAIN}`;
  for (const [host, path, status] of [
    [`auth.${DOMAIN}`, /^\/callback\/oidc/, undefined],
    // Traefik logs a WebSocket it handed over (101) with status 0, when it closes.
    [`jupyter.${DOMAIN}`, /^\/api\/kernels\/[^/]+\/channels/, 0],
    [DOMAIN, /^\/_userland\/home/, 200],
    [DOMAIN, /^\/console\/class/, 200],
    [perUserHost, /^\/api\/kernels\/[^/]+\/channels/, 0],
  ] as const) {
    await eventually(
      `Traefik's access log to have ${host} ${path} ${status ?? ""}`,
      () => {
        requests = accessLog();
        return through(host, path, status);
      },
      10_000,
      250,
    );
  }
});
