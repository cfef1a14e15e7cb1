/**
 * A class's assignment cycle in a real chromium, on the real node, with real Jupyter (issue 26 item
 * 8; issue 27's visit): the chart installed with the platform's image built from the Dockerfile
 * (its own operator, copy pods, user-manager and proxy; no stand-ins), deploy/jupyter.yaml with its
 * image built locally, a teacher appointed as deploy/README.md says (the chart's teacher,
 * course-teacher and visitor roles) and three students.
 *
 * The teacher writes the materials into the course folder from their own Jupyter (its contents
 * API, as its editor saves), creates the assignment with the console's form and sees the hand-in
 * table; ann edits her copy (kept on a re-publish) and hands in with her home page's button before
 * the deadline, ben after it (late), cat never (collected at the closing time). Every receipt on a
 * home page matches the console's table and the collected files, hashed again here from what the
 * teacher's Jupyter reads in its read-only handins/. Feedback written in the teacher's Jupyter comes
 * back into ann's. Then the teacher opens ann's Jupyter from the class table and her home page
 * shows the visit live. The teacher downloads every hand-in as one zip (hashed again here against
 * the receipts), uploads feedback for ben from his row of the table, and ends the term: archive the
 * class, read the dry run (the three students, not the teacher), download the class's zip (ann's
 * volume and the hand-ins in it), end it; the students' environments and volumes are gone, the
 * teacher's runs on.
 *
 * An *.alone.ts file (test/run.ts): it installs a second release of the chart in a namespace of its
 * own, which must not run beside platform.test.ts's (both would create the people's ClusterRoles;
 * here they are reused when that file made them), and it waits minutes on real deadlines on two
 * shared cores. Browsers reach the platform through relays on 127.0.0.1 only (dev/nodePlatform.ts
 * `exposePlatform`, with the Ingress's path routing for the console). Screenshots:
 * artifacts/node/classroom-*.png.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  childNames,
  collectionUserFolder,
  LABELS,
  submissionNameFor,
  userlandNameFor,
} from "../../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  userlandsPath,
  type Assignment,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { MACHINE_HOST } from "../../cluster/addresses.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { buildPlatformImage, importImage, repositoryAndTag } from "../../cluster/node/images.ts";
import { localTemplate } from "../../cluster/node/localTemplates.ts";
import type { DevIdentityProvider } from "../../dev/identity-provider.ts";
import {
  NODE_PLATFORM_DOMAIN,
  exposePlatform,
  guideValues,
  helmInstall,
  machineValues,
  startLoginProvider,
  waitForPlatformReady,
  type PlatformHosts,
} from "../../dev/nodePlatform.ts";
import { paths } from "../../api/kubePaths.ts";
import { k8s } from "../../lib/kube.ts";
import { isNotFound } from "../../lib/kubeRest.ts";
import { extract, sha256sumOfFolder } from "../../coursework/files/test/scratch.ts";
import { MANIFEST_SHA256_SCRIPT } from "../support/coursework.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually, testCluster } from "../support/cluster.ts";
import { expectOnPage as expectOnPageIn, jupyterApi } from "../support/nodeBrowser.ts";
import { adminRest, createTemplate, createUserland, waitForPhase } from "../support/resources.ts";
import {
  execInContainer,
  nodeRelays,
  realNode,
  releaseNamespace,
  waitForOnePodReady,
} from "../support/realNode.ts";

const NAMESPACE = "classroom";
const DOMAIN = NODE_PLATFORM_DOMAIN;
const TEMPLATE = "jupyter";
const TEACHER = "tess";
const STUDENTS = ["ann", "ben", "cat"] as const;
type Student = (typeof STUDENTS)[number];
const ASSIGNMENT = "week1";
const TITLE = "Week 1: lists";
const JUPYTER = `http://jupyter.${DOMAIN}/`;
const HOME = `http://${DOMAIN}/_userland/home`;
const CONSOLE = `http://${DOMAIN}/console/`;
/** The chart's people roles (charts/userland/values.yaml rbac.*RoleName), bound to the teacher. */
const TEACHER_ROLES = ["userland-teacher", "userland-course-teacher", "userland-environment-visitor"];
const artifacts = join(repoRoot, "artifacts", "node");

let idp: DevIdentityProvider;
let relays: Awaited<ReturnType<typeof nodeRelays>>;
let hosts: (PlatformHosts & { close(): Promise<void> }) | undefined;
let browser: Browser;
let work: string;

before(
  async () => {
    mkdirSync(artifacts, { recursive: true });
    work = mkdtempSync(join(tmpdir(), "userland-classroom-"));
    const node = await realNode();
    const { info, kc } = await testCluster();
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const rest = await adminRest();
    relays = await nodeRelays();
    idp = await startLoginProvider(relays, { redirectUris: [`http://auth.${DOMAIN}/callback/oidc`] });

    const image = await buildPlatformImage();
    const containerd = { ctr: join(info.binDir, "ctr"), socket: node.containerdSocket };
    await importImage(containerd.ctr, containerd.socket, image);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await core.createNamespacedSecret({
      namespace: NAMESPACE,
      body: { metadata: { name: "userland-oidc" }, stringData: { "client-secret": idp.clientSecret } },
    });
    // platform.test.ts's release (same chart) may have made the people's ClusterRoles already.
    const rolesMade = await rest
      .get(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${TEACHER_ROLES[0]}`)
      .then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          throw error;
        },
      );
    await helmInstall({
      binDir: info.binDir,
      kubeconfig: info.kubeconfig,
      dir: join(work, "helm"),
      namespace: NAMESPACE,
      release: "classroom",
      values: [
        guideValues(idp, "userland-oidc"),
        machineValues(),
        {
          image: repositoryAndTag(image),
          rbac: { createClusterRoles: !rolesMade },
          operator: { replicas: 1 },
          userManager: { replicas: 1 },
          auth: { replicas: 1 },
          proxy: { replicas: 1 },
        },
      ],
    });
    await waitForPlatformReady(kc.makeApiClient(k8s.AppsV1Api), NAMESPACE);

    // The teacher, appointed as deploy/README.md says, before their environment exists: the
    // operator mounts the course folder read-write and the collection for them from the start.
    for (const role of TEACHER_ROLES)
      await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", NAMESPACE), {
        metadata: { name: `${role}-${TEACHER}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
        subjects: [{ kind: "User", name: `userland:${TEACHER}`, apiGroup: "rbac.authorization.k8s.io" }],
      });
    const template = await localTemplate("jupyter.yaml", containerd);
    await createTemplate(NAMESPACE, TEMPLATE, template.spec);
    for (const user of [TEACHER, ...STUDENTS])
      await createUserland(NAMESPACE, userlandNameFor(user, TEMPLATE), user, TEMPLATE, true);

    hosts = await exposePlatform(relays, core, NAMESPACE, DOMAIN, { console: true });
    browser = await launchBrowser([`--host-resolver-rules=${hosts.resolverRules}`]);
  },
  { timeout: 1_800_000 },
);

after(async () => {
  await browser?.close();
  await hosts?.close();
  await relays?.close();
  await idp?.close();
  if (work) rmSync(work, { recursive: true, force: true });
  await releaseNamespace(NAMESPACE);
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(artifacts, `classroom-${name}.png`), fullPage: true });
const expectOnPage = (page: Page, selector: string, what: string, timeout = 120_000) =>
  expectOnPageIn(page, selector, what, timeout, artifacts);

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  context.setDefaultNavigationTimeout(120_000);
  context.setDefaultTimeout(60_000);
  return context;
}

/** Contexts whose person has signed in (one session for every host of the domain). */
const signedIn = new WeakSet<BrowserContext>();

/** Opens `url`; the context's first page signs in as `name` at the local provider on the way. */
async function open(context: BrowserContext, url: string, name: string): Promise<Page> {
  const page = await context.newPage();
  if (signedIn.has(context)) {
    await page.goto(url, { waitUntil: "domcontentloaded" });
    return page;
  }
  await gotoSignIn(page, url);
  await page.waitForSelector("input[name=name]", { timeout: 60_000 });
  assert.ok(page.url().startsWith(idp.issuer), `on the provider's login page: ${page.url()}`);
  await page.fill("input[name=name]", name);
  await Promise.all([
    page.waitForURL((u) => u.hostname !== MACHINE_HOST && !u.hostname.startsWith("auth.")),
    page.click("button[type=submit]"),
  ]);
  signedIn.add(context);
  return page;
}

function notebook(source: string) {
  return {
    type: "notebook",
    content: {
      cells: [{ cell_type: "code", source, metadata: {}, outputs: [], execution_count: null }],
      metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
      nbformat: 4,
      nbformat_minor: 5,
    },
  };
}

/** PUT through Jupyter's contents API; fails the test unless Jupyter saved it. */
async function save(page: Page, path: string, model: unknown): Promise<void> {
  const saved = await jupyterApi(page, "PUT", `/api/contents/${path}`, model);
  assert.ok(
    [200, 201].includes(saved.status),
    `saving ${path}: ${saved.status} ${JSON.stringify(saved.json)}`,
  );
}

interface Entry {
  name: string;
  path: string;
  type: string;
}

/** The names in a folder of the page's Jupyter, or undefined when it does not exist (yet). */
async function listing(page: Page, path: string): Promise<string[] | undefined> {
  const got = await jupyterApi(page, "GET", `/api/contents/${path}?content=1`);
  if (got.status !== 200) return undefined;
  return ((got.json as { content: Entry[] }).content ?? []).map((e) => e.name).sort();
}

async function fileText(page: Page, path: string): Promise<string> {
  const got = await jupyterApi(page, "GET", `/api/contents/${path}?content=1&type=file&format=text`);
  assert.equal(got.status, 200, `reading ${path}: ${JSON.stringify(got.json)}`);
  return (got.json as { content: string }).content;
}

/**
 * coursework/README.md's check of a collected folder, with coreutils in the teacher's own
 * environment (where the teacher sees it read-only), as `kubectl exec` would: its hash, file count
 * and bytes. Not through Jupyter's contents API: it hides dot files, which a hand-in keeps.
 */
async function collectedCopy(dir: string): Promise<{ sha256: string; files: number; bytes: number }> {
  const userland = userlandNameFor(TEACHER, TEMPLATE);
  const pod = await waitForOnePodReady(
    NAMESPACE,
    `${LABELS.instance}=${childNames(TEMPLATE, userland).deployment}`,
  );
  const script =
    `cd '${dir}' && ${MANIFEST_SHA256_SCRIPT} && ` +
    `find . -type f | wc -l && find . -type f -printf '%s\\n' | awk '{ n += $1 } END { print n + 0 }' && ` +
    `find . -type f | LC_ALL=C sort`;
  const result = await execInContainer(pod, ["sh", "-euc", script]);
  assert.equal(result.code, 0, `${script}\n${result.stderr}`);
  const [sha256 = "", files = "", bytes = "", ...names] = result.stdout.trim().split("\n");
  process.stdout.write(`# collected ${dir}: ${names.join(" ")}\n`);
  return { sha256, files: Number(files), bytes: Number(bytes) };
}

/** What a home page's receipt says. */
interface HomeReceipt {
  text: string;
  sha256: string;
  files: number;
  bytes: number;
}

async function receiptOn(home: Page, timeout: number): Promise<HomeReceipt> {
  const receipt = home.getByLabel(`Receipt for ${TITLE}`);
  await receipt.waitFor({ timeout });
  const text = ((await receipt.textContent()) ?? "").replace(/\s+/g, " ");
  return {
    text,
    sha256: ((await receipt.locator("code.hash").textContent()) ?? "").trim(),
    files: Number(/Files (\d+)/.exec(text)?.[1]),
    bytes: Number(/\((\d+) bytes\)/.exec(text)?.[1]),
  };
}

/** Hand in with the home page's button and its confirm step; back on the home page. */
async function handIn(home: Page): Promise<void> {
  const card = home.locator(`#assignment-${TEMPLATE}-${ASSIGNMENT}`);
  await Promise.all([
    home.waitForURL(/\/_userland\/handin$/),
    card.getByRole("button", { name: `Hand in ${TITLE}` }).click(),
  ]);
  assert.match((await home.textContent("main")) ?? "", /A hand-in is final\./);
  await Promise.all([
    home.waitForURL(HOME),
    home.getByRole("button", { name: `Yes, hand in ${TITLE}` }).click(),
  ]);
}

/** The Submissions' conditions, for a failure message that says where the cycle stands. */
async function cycleState(): Promise<string> {
  const rest = await adminRest();
  const lines: string[] = [];
  const a = await rest.get<Assignment>(assignmentsPath(NAMESPACE, ASSIGNMENT)).catch(() => undefined);
  lines.push(`assignment: ${JSON.stringify(a?.status ?? null)}`);
  for (const user of STUDENTS) {
    const s = await rest
      .get<Submission>(submissionsPath(NAMESPACE, submissionNameFor(ASSIGNMENT, user)))
      .catch(() => undefined);
    lines.push(`${user}: ${JSON.stringify(s?.status ?? null)}`);
  }
  return lines.join("\n");
}

async function within<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
): Promise<T> {
  try {
    return await eventually(what, check, timeoutMs, 1000);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await cycleState()}`, { cause: error });
  }
}

/** A datetime-local value, in UTC (the form's zone below). */
const formTime = (ms: number) => new Date(ms).toISOString().slice(0, 16);

const ROW = (user: string) => `#student-${user}`;

test(
  "a class's cycle in the browser on the real node: materials in the teacher's Jupyter, the console's form, copies in every student's Jupyter, a re-publish keeping ann's edit, hand-ins by button (on time, late) and at the closing time, receipts matching the console, the collected files and the downloaded zip, feedback back in ann's and (uploaded) ben's Jupyter, the class archived and ended",
  { timeout: 1_500_000 },
  async (t) => {
    const began = Date.now();
    const phases: string[] = [];
    let last = began;
    const phase = (what: string) => {
      phases.push(`${what}: ${((Date.now() - last) / 1000).toFixed(1)} s`);
      last = Date.now();
    };
    t.after(() => t.diagnostic(`phases: ${phases.join("; ")}`));

    for (const user of [TEACHER, ...STUDENTS])
      await waitForPhase(NAMESPACE, userlandNameFor(user, TEMPLATE), "Ready", 300_000);
    phase("four Jupyter environments Ready");

    // The teacher's materials, saved from their own Jupyter into the course folder.
    const teacher = await newContext();
    const tessJupyter = await open(teacher, JUPYTER, TEACHER);
    await expectOnPage(tessJupyter, "#notebook_list", "the teacher's Jupyter");
    await save(tessJupyter, "course/week1", { type: "directory" });
    await save(tessJupyter, "course/week1/lists.ipynb", notebook("xs = [3, 1, 2]\n# sort xs"));
    await save(tessJupyter, "course/week1/data.csv", { type: "file", format: "text", content: "a,b\n1,2\n" });
    await tessJupyter.goto(`${JUPYTER}tree/course/week1`, { waitUntil: "domcontentloaded" });
    await expectOnPage(
      tessJupyter,
      "#notebook_list :text('lists.ipynb')",
      "the materials in the course folder",
    );
    await shot(tessJupyter, "teacher-course-folder");
    phase("materials");

    // The console's form: a deadline a few minutes away, late hand-ins a little longer.
    const tessConsole = await open(teacher, `${CONSOLE}assignments?template=${TEMPLATE}`, TEACHER);
    await expectOnPage(tessConsole, "#f-name", "the console's new-assignment form");
    // Whole minutes: datetime-local's default step (60 s) makes the browser refuse seconds.
    const deadlineAt = Math.ceil((Date.now() + 120_000) / 60_000) * 60_000;
    await tessConsole.fill("#f-name", ASSIGNMENT);
    await tessConsole.fill("#f-title", TITLE);
    await tessConsole.selectOption("#f-folder", "course");
    await tessConsole.fill("#f-path", "week1");
    await tessConsole.fill("#f-deadline", formTime(deadlineAt));
    await tessConsole.fill("#f-lateUntil", formTime(deadlineAt + 60_000));
    await tessConsole.fill("#f-zone", "UTC");
    await shot(tessConsole, "console-new");
    await tessConsole.getByRole("button", { name: "Create and publish" }).click();
    await expectOnPage(tessConsole, "#counts", "the new assignment's page");
    assert.match(tessConsole.url(), /\/console\/assignment\?.*done=created/);
    const created = await (await adminRest()).get<Assignment>(assignmentsPath(NAMESPACE, ASSIGNMENT));
    const deadline = Date.parse(created.spec.deadline ?? "");
    const closing = Date.parse(created.spec.lateUntil ?? "");
    assert.ok(
      deadline > Date.now() && closing > deadline,
      `deadline ${created.spec.deadline}, lateUntil ${created.spec.lateUntil}`,
    );
    phase("the console's form");

    // Every student's own Jupyter shows assignments/week1/ (the teacher, who teaches, gets none).
    const students = {} as Record<Student, { context: BrowserContext; jupyter: Page }>;
    for (const user of STUDENTS) {
      const context = await newContext();
      const jupyter = await open(context, JUPYTER, user);
      await expectOnPage(jupyter, "#notebook_list", `${user}'s Jupyter`);
      students[user] = { context, jupyter };
    }
    for (const user of STUDENTS)
      await within(
        `${user}'s Jupyter to show assignments/week1/`,
        async () => {
          const names = await listing(students[user].jupyter, "work/assignments/week1");
          return names?.join(",") === "data.csv,lists.ipynb";
        },
        180_000,
      );
    assert.equal(await listing(tessJupyter, "work/assignments"), undefined, "no handout for the teacher");
    const ann = students.ann.jupyter;
    await ann.goto(`${JUPYTER}tree/work/assignments/week1`, { waitUntil: "domcontentloaded" });
    await expectOnPage(ann, "#notebook_list :text('lists.ipynb')", "the handout in ann's file browser");
    await shot(ann, "student-handout");
    phase("handed out to three");

    // ann edits the notebook; the teacher corrects it and adds hints, then publishes again.
    await save(
      ann,
      "work/assignments/week1/lists.ipynb",
      notebook("xs = [3, 1, 2]\nprint(sorted(xs))  # ann"),
    );
    await save(
      tessJupyter,
      "course/week1/lists.ipynb",
      notebook("xs = [3, 1, 2]\n# sort xs, then print them"),
    );
    await save(tessJupyter, "course/week1/hints.md", {
      type: "file",
      format: "text",
      content: "Try sorted().\n",
    });
    await Promise.all([
      tessConsole.waitForURL(/done=publish&value=2/),
      tessConsole.getByRole("button", { name: "Publish again" }).click(),
    ]);
    await within(
      "the console to list ann's lists.ipynb as kept",
      async () => {
        await tessConsole.reload({ waitUntil: "domcontentloaded" });
        return /lists\.ipynb/.test((await tessConsole.locator(ROW("ann")).textContent()) ?? "");
      },
      180_000,
    );
    await tessConsole.locator(`${ROW("ann")} details summary`).click();
    await shot(tessConsole, "console-kept");
    for (const user of STUDENTS)
      await within(
        `release 2 in ${user}'s Jupyter`,
        async () => (await listing(students[user].jupyter, "work/assignments/week1"))?.includes("hints.md"),
        180_000,
      );
    assert.match(await fileText(ann, "work/assignments/week1/lists.ipynb"), /# ann/, "ann's edit kept");
    assert.match(
      await fileText(students.ben.jupyter, "work/assignments/week1/lists.ipynb"),
      /then print them/,
      "ben's untouched copy updated",
    );
    phase("re-published");

    // ann hands in before the deadline, with the button and its confirm step.
    const homes = {} as Record<Student, Page>;
    for (const user of STUDENTS) {
      homes[user] = await open(students[user].context, HOME, user);
      await expectOnPage(homes[user], `#assignment-${TEMPLATE}-${ASSIGNMENT}`, `${user}'s assignment card`);
    }
    await handIn(homes.ann);
    await shot(homes.ann, "home-handing-in");
    const annReceipt = await receiptOn(homes.ann, 180_000);
    assert.ok(Date.now() < deadline, "ann's hand-in was done before the deadline (make it later if not)");
    assert.match(annReceipt.text, /Handed in/);
    assert.doesNotMatch(annReceipt.text, /late/);
    await shot(homes.ann, "home-receipt");
    phase("ann's hand-in");

    // ben hands in after the deadline (before late hand-ins close).
    await within("the deadline to pass", () => Date.now() > deadline + 1000, deadline - Date.now() + 60_000);
    await homes.ben.reload({ waitUntil: "domcontentloaded" });
    await handIn(homes.ben);
    const benReceipt = await receiptOn(homes.ben, 180_000);
    assert.ok(Date.now() > deadline, "after the deadline");
    assert.match(benReceipt.text, /Handed in .* late/);
    await shot(homes.ben, "home-receipt-late");
    phase("ben's late hand-in");

    // cat does nothing: her home page (open, following by itself) shows the collection.
    const catReceipt = await receiptOn(homes.cat, closing - Date.now() + 180_000);
    assert.ok(Date.now() >= closing, "collected at the closing time, not before");
    assert.match(catReceipt.text, /Collected at closing/);
    await shot(homes.cat, "home-collected");
    phase("cat collected at the closing time");

    // The console's table: on time, late, collected; each row as the student's receipt says.
    await tessConsole.reload({ waitUntil: "domcontentloaded" });
    const receipts: Record<Student, HomeReceipt> = { ann: annReceipt, ben: benReceipt, cat: catReceipt };
    const states: Record<Student, RegExp> = { ann: /on time/, ben: /late/, cat: /collected at closing/ };
    for (const user of STUDENTS) {
      const row = tessConsole.locator(ROW(user));
      assert.match((await row.locator("td").first().textContent()) ?? "", states[user], `${user}'s state`);
      assert.equal(
        await row.locator("td.mono").getAttribute("title"),
        receipts[user].sha256,
        `${user}'s hash in the console and on the home page`,
      );
      // The receipt's cells: time, files, size, hash.
      assert.match(
        (await row.locator("td").nth(2).textContent()) ?? "",
        new RegExp(`^\\s*${receipts[user].files}\\b`),
        `${user}'s file count`,
      );
    }
    assert.equal(await tessConsole.locator(ROW(TEACHER)).count(), 0, "the teacher is not a student");
    await shot(tessConsole, "console-handins");

    // The collected copies, read in the teacher's Jupyter (read-only) and hashed again here.
    for (const user of STUDENTS) {
      const dir = `collection/handins/${ASSIGNMENT}/${collectionUserFolder(user)}`;
      const recomputed = await collectedCopy(`/home/jovyan/${dir}`);
      assert.deepEqual(
        recomputed,
        { sha256: receipts[user].sha256, files: receipts[user].files, bytes: receipts[user].bytes },
        `${user}'s collected files hash as the receipt says`,
      );
    }
    const collectedAnn = `collection/handins/${ASSIGNMENT}/${collectionUserFolder("ann")}/lists.ipynb`;
    assert.match(await fileText(tessJupyter, collectedAnn), /# ann/, "ann's edit is what was collected");
    const overwrite = await jupyterApi(
      tessJupyter,
      "PUT",
      `/api/contents/${collectedAnn}`,
      notebook("changed"),
    );
    assert.notEqual(overwrite.status, 200, "the teacher's handins/ is read-only");
    assert.notEqual(overwrite.status, 201, "the teacher's handins/ is read-only");
    phase("table and hashes");

    // Feedback for ann, written in the teacher's Jupyter, returned from the console.
    const feedbackDir = `collection/feedback/${ASSIGNMENT}/${collectionUserFolder("ann")}`;
    if ((await listing(tessJupyter, `collection/feedback/${ASSIGNMENT}`)) === undefined)
      await save(tessJupyter, `collection/feedback/${ASSIGNMENT}`, { type: "directory" });
    await save(tessJupyter, feedbackDir, { type: "directory" });
    await save(tessJupyter, `${feedbackDir}/notes.md`, {
      type: "file",
      format: "text",
      content: "Well sorted, ann.\n",
    });
    await Promise.all([
      tessConsole.waitForURL(/done=feedback&value=1/),
      tessConsole.getByRole("button", { name: "Return feedback" }).click(),
    ]);
    await within(
      "the feedback in ann's Jupyter",
      async () => (await listing(ann, "work/assignments/week1/feedback"))?.includes("notes.md"),
      180_000,
    );
    assert.equal(await fileText(ann, "work/assignments/week1/feedback/notes.md"), "Well sorted, ann.\n");
    // Her home page, open all along, shows it by itself (its script polls every 15 s).
    await expectOnPage(
      homes.ann,
      `#assignment-${TEMPLATE}-${ASSIGNMENT} :text('Feedback: 1 file')`,
      "the feedback on ann's home",
    );
    await shot(homes.ann, "home-feedback");
    phase("feedback");

    // issue 27: the teacher opens ann's Jupyter from the class table; her home shows the visit live.
    const classPage = await open(teacher, `${CONSOLE}class?template=${TEMPLATE}`, TEACHER);
    const openLink = classPage.locator(
      `#row-${userlandNameFor("ann", TEMPLATE)} a[aria-label="Open ann's environment"]`,
    );
    await openLink.waitFor();
    const [visit] = await Promise.all([teacher.waitForEvent("page"), openLink.click()]);
    await expectOnPage(visit, "#notebook_list", "ann's Jupyter in the teacher's tab");
    assert.ok(
      (await jupyterApi(visit, "GET", "/api/contents/work/assignments/week1"))?.status === 200,
      "the visitor is in ann's environment",
    );
    await homes.ann.locator("li.visit-live").waitFor({ timeout: 60_000 });
    assert.match((await homes.ann.locator("li.visit-live").textContent()) ?? "", new RegExp(TEACHER));
    await shot(homes.ann, "home-visit-live");
    await shot(visit, "visit-jupyter");
    phase("a visit");

    // Every hand-in as one zip from the console (the user-manager streams an archive pod's answer):
    // each student's folder in it hashes as their receipt says.
    const handinsZip = join(work, "handins.zip");
    const [handinsDownload] = await Promise.all([
      tessConsole.waitForEvent("download", { timeout: 180_000 }),
      tessConsole.getByRole("link", { name: "Download all hand-ins" }).click(),
    ]);
    await handinsDownload.saveAs(handinsZip);
    extract(handinsZip, join(work, "handins"));
    for (const user of STUDENTS)
      assert.equal(
        sha256sumOfFolder(join(work, "handins", collectionUserFolder(user))),
        receipts[user].sha256,
        `${user}'s folder in the downloaded zip hashes as the receipt says`,
      );
    phase("downloaded");

    // Feedback for ben uploaded from his row of the console's table, then returned.
    await tessConsole.reload({ waitUntil: "domcontentloaded" });
    await tessConsole.locator(`${ROW("ben")} input[type=file]`).setInputFiles({
      name: "notes.md",
      mimeType: "text/markdown",
      buffer: Buffer.from("Late, but right, ben.\n"),
    });
    await Promise.all([
      tessConsole.waitForURL(/\/console\/assignment\?/),
      tessConsole.locator(ROW("ben")).getByRole("button", { name: "Upload" }).click(),
    ]);
    await Promise.all([
      tessConsole.waitForURL(/done=feedback&value=2/),
      tessConsole.getByRole("button", { name: "Return feedback" }).click(),
    ]);
    await within(
      "the uploaded feedback in ben's Jupyter",
      async () =>
        (await listing(students.ben.jupyter, "work/assignments/week1/feedback"))?.includes("notes.md"),
      180_000,
    );
    assert.equal(
      await fileText(students.ben.jupyter, "work/assignments/week1/feedback/notes.md"),
      "Late, but right, ben.\n",
    );
    phase("feedback uploaded");
    for (const user of STUDENTS) await students[user].context.close();

    // The end of the term: archive the class, read the dry run, download the class's zip, end it.
    await classPage.reload({ waitUntil: "domcontentloaded" });
    await classPage.getByRole("link", { name: "End of term" }).click();
    await Promise.all([
      classPage.waitForURL(/\/console\/class-archive\?/),
      classPage.getByRole("button", { name: "Archive this class" }).click(),
    ]);
    const phaseText = async () => {
      await classPage.reload({ waitUntil: "domcontentloaded" });
      return (await classPage.locator("#phase").textContent()) ?? "";
    };
    await within("the class archive's dry run", async () => /Dry run/.test(await phaseText()), 600_000);
    const toDelete = await classPage
      .locator("table", { has: classPage.locator("caption", { hasText: "Ending the class deletes" }) })
      .locator("tbody th .user")
      .allTextContents();
    assert.deepEqual(
      toDelete.sort(),
      [...STUDENTS].sort(),
      "the dry run lists the three students, not the teacher",
    );
    await shot(classPage, "console-end-dry-run");
    const classZip = join(work, "class.zip");
    const [classDownload] = await Promise.all([
      classPage.waitForEvent("download", { timeout: 180_000 }),
      classPage.getByRole("link", { name: "Download the class's zip" }).click(),
    ]);
    await classDownload.saveAs(classZip);
    extract(classZip, join(work, "class"));
    const annHome = join(work, "class", "students", collectionUserFolder("ann"), "work");
    assert.match(
      readFileSync(join(annHome, "assignments", "week1", "lists.ipynb"), "utf8"),
      /# ann/,
      "ann's home volume is in the class's zip",
    );
    assert.equal(
      sha256sumOfFolder(join(work, "class", "handins", ASSIGNMENT, collectionUserFolder("cat"))),
      receipts.cat.sha256,
      "the collected hand-ins are in the class's zip",
    );
    await classPage.check("#understood");
    await Promise.all([
      classPage.waitForURL(/\/console\/class-archive\?/),
      classPage.getByRole("button", { name: "End the class" }).click(),
    ]);
    await within("the class to end", async () => /^\s*Ended/.test(await phaseText()), 300_000);
    await shot(classPage, "console-end-ended");
    const rest = await adminRest();
    const gone = async (path: string) => {
      try {
        await rest.get(path);
        return false;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    };
    for (const user of STUDENTS) {
      const name = userlandNameFor(user, TEMPLATE);
      const claim = childNames(TEMPLATE, name).pvc("work");
      await within(
        `${user}'s environment and volume to be gone`,
        async () =>
          (await gone(userlandsPath(NAMESPACE, name))) &&
          (await gone(paths.namespaced("", "v1", "persistentvolumeclaims", NAMESPACE, claim))),
        120_000,
      );
    }
    await waitForPhase(NAMESPACE, userlandNameFor(TEACHER, TEMPLATE), "Ready", 60_000);
    phase("the end of the term");

    await teacher.close();
  },
);
