/**
 * A class on the real node, installed as an admin installs it, for the browser tests that walk a
 * class through the platform (test/node/classroom.alone.ts, gradingClass.alone.ts): the chart
 * with the platform's image built from the Dockerfile (its own operator, copy and grading pods,
 * user-manager and proxy), a local OpenID provider, deploy/jupyter.yaml with its image built
 * locally, teachers appointed as deploy/README.md says (RoleBindings to the chart's ClusterRoles)
 * and a Userland per person; browsers reach it through relays on 127.0.0.1 only
 * (dev/nodePlatform.ts `exposePlatform`). Each person's browser context signs in once at the
 * provider, for every host of the domain.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { userlandNameFor } from "../../api/naming.ts";
import { paths } from "../../api/kubePaths.ts";
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";
import { MACHINE_HOST } from "../../cluster/addresses.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { buildPlatformImage, importImage, repositoryAndTag } from "../../cluster/node/images.ts";
import { localTemplate } from "../../cluster/node/localTemplates.ts";
import type { DevIdentityProvider } from "../../dev/identityProvider.ts";
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
import { k8s } from "../../lib/kube.ts";
import { isNotFound } from "../../lib/kubeRest.ts";
import { testCluster } from "./cluster.ts";
import { jupyterApi } from "./nodeBrowser.ts";
import { adminRest, createTemplate, createUserland } from "./resources.ts";
import { nodeRelays, realNode, releaseNamespace } from "./realNode.ts";

/** The Template every class test runs: deploy/jupyter.yaml's. */
export const CLASSROOM_TEMPLATE = "jupyter";

/** Where a class's browsers go (the platform's hosts, relayed to 127.0.0.1). */
export const CLASSROOM_URLS = {
  jupyter: `http://jupyter.${NODE_PLATFORM_DOMAIN}/`,
  home: `http://${NODE_PLATFORM_DOMAIN}/_userland/home`,
  console: `http://${NODE_PLATFORM_DOMAIN}/console/`,
} as const;

export interface ClassroomOptions {
  namespace: string;
  /** The chart's release name (also its OIDC client's). */
  release: string;
  /** deploy/jupyter.yaml's spec (Template CLASSROOM_TEMPLATE), changed by this. */
  templateSpec?: (spec: TemplateSpec) => TemplateSpec;
  /** Each teacher's ClusterRoles of the chart (RoleBindings in the namespace). */
  teachers: Record<string, readonly string[]>;
  /** Who gets a Userland of the Template (teachers and students), started. */
  people: readonly string[];
}

export interface Classroom {
  browser: Browser;
  idp: DevIdentityProvider;
  relays: Awaited<ReturnType<typeof nodeRelays>>;
  hosts: PlatformHosts & { close(): Promise<void> };
  /** A person's browser context (sign in with `open`). */
  newContext(): Promise<BrowserContext>;
  /** Opens `url`; the context's first page signs in as `name` at the local provider on the way. */
  open(context: BrowserContext, url: string, name: string): Promise<Page>;
  /** Signs in as `name` on a page that is on the way to the provider's login page. */
  signInAtProvider(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

/** The chart's people's ClusterRoles (charts/userland/values.yaml rbac.*RoleName). */
export const CHART_PEOPLE_ROLES = {
  teacher: "userland-teacher",
  courseTeacher: "userland-course-teacher",
  visitor: "userland-environment-visitor",
} as const;

export async function startClassroom(options: ClassroomOptions): Promise<Classroom> {
  const { namespace } = options;
  const domain = NODE_PLATFORM_DOMAIN;
  const work = mkdtempSync(join(tmpdir(), `userland-${options.release}-`));
  const node = await realNode();
  const { info, kc } = await testCluster();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rest = await adminRest();
  const relays = await nodeRelays();
  const idp = await startLoginProvider(relays, {
    redirectUris: [`http://auth.${domain}/callback/oidc`],
  });

  const image = await buildPlatformImage();
  const containerd = { ctr: join(info.binDir, "ctr"), socket: node.containerdSocket };
  await importImage(containerd.ctr, containerd.socket, image);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "userland-oidc" }, stringData: { "client-secret": idp.clientSecret } },
  });
  // Another release of the same chart (platform.test.ts's, another class's) may have made the
  // people's ClusterRoles already: cluster-wide, one set.
  const rolesMade = await rest
    .get(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${CHART_PEOPLE_ROLES.teacher}`)
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
    namespace,
    release: options.release,
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
  await waitForPlatformReady(kc.makeApiClient(k8s.AppsV1Api), namespace);

  // Teachers, appointed as deploy/README.md says, before their environments exist: the operator
  // mounts the course folders read-write and the collection for them from the start.
  for (const [who, roles] of Object.entries(options.teachers))
    for (const role of roles)
      await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", namespace), {
        metadata: { name: `${role}-${who}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
        subjects: [{ kind: "User", name: `userland:${who}`, apiGroup: "rbac.authorization.k8s.io" }],
      });
  const template = await localTemplate("jupyter.yaml", containerd);
  await createTemplate(namespace, CLASSROOM_TEMPLATE, options.templateSpec?.(template.spec) ?? template.spec);
  for (const user of options.people)
    await createUserland(
      namespace,
      userlandNameFor(user, CLASSROOM_TEMPLATE),
      user,
      CLASSROOM_TEMPLATE,
      true,
    );

  const hosts = await exposePlatform(relays, core, namespace, domain, { console: true });
  const browser = await launchBrowser([`--host-resolver-rules=${hosts.resolverRules}`]);

  const signedIn = new WeakSet<BrowserContext>();
  const signInAtProvider = (page: Page, name: string) => signInAt(idp, page, name);
  return {
    browser,
    idp,
    relays,
    hosts,
    signInAtProvider,
    async newContext() {
      const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
      context.setDefaultNavigationTimeout(120_000);
      context.setDefaultTimeout(60_000);
      return context;
    },
    async open(context, url, name) {
      const page = await context.newPage();
      if (signedIn.has(context)) {
        await page.goto(url, { waitUntil: "domcontentloaded" });
        return page;
      }
      await gotoSignIn(page, url);
      await signInAtProvider(page, name);
      signedIn.add(context);
      return page;
    },
    async close() {
      await browser.close();
      await hosts.close();
      await relays.close();
      await idp.close();
      rmSync(work, { recursive: true, force: true });
      await releaseNamespace(namespace);
    },
  };
}

/**
 * On the way to the local provider's login page: signs in as `name` and waits to be back on the
 * platform (neither the machine's own address nor the auth host).
 */
export async function signInAt(idp: DevIdentityProvider, page: Page, name: string): Promise<void> {
  await page.waitForSelector("input[name=name]", { timeout: 60_000 });
  assert.ok(page.url().startsWith(idp.issuer), `on the provider's login page: ${page.url()}`);
  await page.fill("input[name=name]", name);
  await Promise.all([
    page.waitForURL((u) => u.hostname !== MACHINE_HOST && !u.hostname.startsWith("auth.")),
    page.click("button[type=submit]"),
  ]);
}

/** Where a class test's screenshots and failure pictures go. */
export function classroomArtifacts(): string {
  const dir = join(repoRoot, "artifacts", "node");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** PUT through Jupyter's contents API from one of its pages; fails the test unless Jupyter saved it. */
export async function saveInJupyter(page: Page, path: string, model: unknown): Promise<void> {
  const saved = await jupyterApi(page, "PUT", `/api/contents/${path}`, model);
  assert.ok(
    [200, 201].includes(saved.status),
    `saving ${path}: ${saved.status} ${JSON.stringify(saved.json)}`,
  );
}

/** A text file through Jupyter's contents API (a plain file, not a notebook). */
export const textFile = (content: string) => ({ type: "file", format: "text", content });

/** A file's text through Jupyter's contents API. */
export async function jupyterFileText(page: Page, path: string): Promise<string> {
  const got = await jupyterApi(page, "GET", `/api/contents/${path}?content=1&type=file&format=text`);
  assert.equal(got.status, 200, `reading ${path}: ${JSON.stringify(got.json)}`);
  return (got.json as { content: string }).content;
}
