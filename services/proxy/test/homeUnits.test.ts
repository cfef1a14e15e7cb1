/**
 * The home page's pieces without a cluster: which host is the home, where each environment opens
 * (shared and per-user origins, PROXY_HOST_TEMPLATES, the default Template), what is offered, and
 * the page's own safety (escaping, the script's hash). The home against the real control plane
 * and user-manager is home.test.ts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import type { Template, Userland } from "../../../api/v1alpha1/index.ts";
import { createLogger } from "../../../lib/logger.ts";
import type { StudentAssignment, UserManagerClient } from "../../../lib/userManagerClient.ts";
import type { ClientInfo } from "../forward/headers.ts";
import { homeView, ownUserland, type HomeConfig } from "../pages/homeView.ts";
import { homePage } from "../pages/homePage.ts";
import { createMetrics } from "../metrics.ts";
import { pageHeaders } from "../pages/pageShell.ts";
import { hostForTemplate, isHomeHost } from "../route/templateHosts.ts";
import type { ClusterView } from "../route/userlandIndex.ts";
import { Starter } from "../endpoints/starter.ts";

const userland = (name: string, user: string, templateName: string): Userland => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name, namespace: "ns", generation: 1 },
  spec: { user, templateName },
  status: { phase: "Ready", observedGeneration: 1, service: { name: `${name}-svc`, port: 80 } },
});

const template = (name: string, spec: Partial<Template["spec"]> = {}): Template => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name, namespace: "ns" },
  spec: { template: { spec: { containers: [{ name: "ide" }] } }, ...spec },
});

function cluster(userlands: Userland[], templates: Template[]): ClusterView {
  return {
    namespace: "ns",
    findUserland: (user, t) => userlands.find((u) => u.spec.user === user && u.spec.templateName === t),
    getTemplate: (name) => templates.find((t) => t.metadata.name === name),
    synced: () => true,
    getUserland: (name) => userlands.find((u) => u.metadata.name === name),
    // Deliberately careless: hands back everyone's, so the home's own check is what is tested.
    userlandsOf: () => userlands,
    templates: () => templates,
  };
}

const starter = new Starter(undefined, createMetrics(), createLogger("home-units", "silent"));
const client = (host: string): ClientInfo => ({ host, proto: "https", trusted: false, peer: "203.0.113.9" });
const config = (extra: Partial<HomeConfig> = {}): HomeConfig => ({
  hostTemplates: new Map(),
  baseDomain: "ide.example.org",
  defaultTemplate: undefined,
  origins: "shared",
  loginUrl: new URL("https://auth.ide.example.org/login"),
  visitQuietMs: 300_000,
  ...extra,
});

test("the home host: the base domain itself, only while it serves no Template", () => {
  const routes = { hostTemplates: new Map<string, string>(), baseDomain: "ide.example.org" };
  assert.equal(isHomeHost("ide.example.org", routes), true);
  assert.equal(isHomeHost("IDE.example.org.:8443", routes), true);
  assert.equal(isHomeHost("code.ide.example.org", routes), false);
  assert.equal(isHomeHost("other.example", routes), false);
  assert.equal(isHomeHost("ide.example.org", { ...routes, defaultTemplate: "code" }), false);
  assert.equal(isHomeHost("ide.example.org", { hostTemplates: new Map() }), false);
});

test("where an environment opens: PROXY_HOST_TEMPLATES, <template>.<domain>, the default Template, per-user hosts", () => {
  const routes = {
    hostTemplates: new Map([
      ["127.0.0.1:4184", "jupyter"],
      ["code.uni.example", "code"],
    ]),
    baseDomain: "ide.example.org",
  };
  assert.equal(hostForTemplate("jupyter", routes, "x", ":4180"), "127.0.0.1:4184");
  assert.equal(hostForTemplate("code", routes, "x", ":8443"), "code.uni.example:8443");
  assert.equal(hostForTemplate("sql", routes, "x", ""), "sql.ide.example.org");
  const local = { hostTemplates: new Map<string, string>(), defaultTemplate: "demo" };
  assert.equal(hostForTemplate("demo", local, "127.0.0.1:4180", ":4180"), "127.0.0.1:4180");
  assert.equal(hostForTemplate("other", local, "127.0.0.1:4180", ":4180"), undefined);

  const view = homeView(
    cluster([userland("alice-x", "alice", "code"), userland("alice-y", "alice", "jupyter")], []),
    starter,
    config({ origins: "perUser" }),
    client("ide.example.org"),
    "alice",
  );
  assert.deepEqual(
    view.environments.map((e) => e.openUrl),
    ["https://alice-x--code.ide.example.org/", "https://alice-y--jupyter.ide.example.org/"],
  );
});

test("the home lists only the session user's Userlands, exactly matched, and offers only self-service Templates they lack", () => {
  const everyone = [
    userland("alice-code", "alice", "code"),
    userland("bob-code", "bob", "code"),
    userland("alice2-code", "Alice", "code"),
  ];
  const templates = [
    template("code", { displayName: "VS Code", selfService: true }),
    template("sql", { displayName: "SQL", selfService: true, description: "a database" }),
    template("secret", { displayName: "Exam" }),
  ];
  const view = homeView(cluster(everyone, templates), starter, config(), client("ide.example.org"), "alice");
  assert.deepEqual(
    view.environments.map((e) => e.name),
    ["alice-code"],
  );
  assert.deepEqual(
    view.available.map((a) => [a.template, a.title, a.description]),
    [["sql", "SQL", "a database"]],
  );
  assert.equal(view.canAct, false, "no user-manager: no buttons");
  assert.equal(view.signOutUrl, "https://auth.ide.example.org/logout");
  assert.equal(ownUserland(cluster(everyone, templates), "alice", "bob-code"), undefined);
  assert.equal(ownUserland(cluster(everyone, templates), "alice", "alice2-code"), undefined);
  assert.equal(ownUserland(cluster(everyone, templates), "alice", "alice-code")?.metadata.name, "alice-code");
  // Without a user-manager the page has no forms.
  assert.doesNotMatch(homePage(view, "/").body, /<form/);
});

test("the home page escapes what Templates and identities say, and its script is allowed by its hash", () => {
  const hostile = '<img src=x onerror="alert(1)">';
  const view = homeView(
    cluster(
      [userland("alice-code", hostile, "code")],
      [template("code", { displayName: hostile, description: hostile })],
    ),
    starter,
    config(),
    client("ide.example.org"),
    hostile,
  );
  const page = homePage(view, "/");
  assert.doesNotMatch(page.body, /<img/);
  const scripts = [...page.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? "");
  assert.equal(scripts.length, 1);
  const hash = `sha256-${createHash("sha256")
    .update(scripts[0] ?? "")
    .digest("base64")}`;
  assert.ok((pageHeaders(page.script)["content-security-policy"] ?? "").includes(`script-src '${hash}'`));
  // A return address off the site falls back to the home.
  assert.doesNotMatch(homePage(view, "https://evil.example/").body, /evil/);
});

test("the user-manager is asked at most ten starts and stops a minute per Userland, and one create per student and Template", async () => {
  const calls: string[] = [];
  const userManager: UserManagerClient = {
    start: (name) => Promise.resolve(void calls.push(`start ${name}`)),
    stop: (name) => Promise.resolve(void calls.push(`stop ${name}`)),
    create: (user, t) => Promise.resolve((calls.push(`create ${user} ${t}`), "created" as const)),
    assignments: () => Promise.reject(new Error("not used")),
    handIn: () => Promise.reject(new Error("not used")),
  };
  const asking = new Starter(userManager, createMetrics(), createLogger("home-units", "silent"));
  const alice = userland("alice-code", "alice", "code");
  const answers: boolean[] = [];
  for (let i = 0; i < 6; i++)
    answers.push(await asking.request(alice, "alice"), await asking.stop(alice, "alice"));
  assert.deepEqual(answers, [...Array<boolean>(10).fill(true), false, false]);
  assert.equal(calls.length, 10);
  assert.equal(
    await asking.stop(userland("bob-code", "bob", "code"), "bob"),
    true,
    "another Userland has its own budget",
  );

  calls.length = 0;
  const created = await Promise.all([1, 2, 3].map(() => asking.create("erin", "sql")));
  assert.deepEqual(created, ["created", "created", "created"]);
  assert.deepEqual(calls, ["create erin sql"]);
  assert.equal(asking.createRequested("erin", "sql"), true);
  assert.equal(asking.createRequested("erin", "code"), false);
});

test("an assignment's grade on the home page: the score once released, the tests the student may see, nothing else", () => {
  const view = homeView(cluster([], []), starter, config(), client("ide.example.org"), "ann");
  const card = (grade: StudentAssignment["grade"]) =>
    homePage(
      {
        ...view,
        assignments: [
          {
            templateName: "lab",
            name: "calc",
            title: "Calculator",
            deadline: "2026-12-10T12:00:00.000Z",
            lateUntil: null,
            closesAt: "2026-12-10T12:00:00.000Z",
            extended: false,
            open: false,
            notOpenBecause: "the assignment closed at 2026-12-10T12:00:00.000Z",
            maxVersions: 5,
            versions: [],
            distributed: true,
            state: "late",
            stateLabel: "late",
            handInRequestedAt: "2026-12-11T10:00:00Z",
            handInRequestedBy: "student",
            receipt: null,
            refusedHandIn: null,
            feedbackFiles: null,
            grade,
          },
        ],
      },
      "/",
    ).body;
  const released = card({
    released: true,
    score: 4.5,
    maxScore: 8,
    latePenaltyPercent: 25,
    rubric: [{ points: -1, description: "No docstrings" }],
    comment: "Good work <b>overall</b>",
    tests: [{ name: "test_add", score: 2, maxScore: 2, passed: true }],
  });
  assert.match(released, /Score: 4\.5 of 8<\/strong> \(less 25% for lateness\)/);
  assert.match(released, /✓ passed <code>test_add<\/code> — 2 of 2/);
  assert.match(released, /<li>-1 No docstrings<\/li>/);
  assert.match(released, /Good work &#60;b&#62;overall&#60;\/b&#62;/, "the comment, escaped");
  const early = card({
    released: false,
    score: null,
    maxScore: null,
    latePenaltyPercent: 0,
    rubric: [],
    comment: null,
    tests: [],
  });
  assert.match(early, /the score comes when your teacher releases grades/);
  assert.doesNotMatch(early, /Score:/);
  assert.doesNotMatch(card(null), /class="grade"/);
});
