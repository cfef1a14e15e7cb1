/**
 * The student's home page, served by the proxy in-process against the real control plane, with the
 * real user-manager in-process (its own ServiceAccount, TokenReview and access reviews): the proxy
 * calls it with its own ServiceAccount token, under a Role with the chart's rights for the proxy.
 * Userlands are made by the admin; no operator runs, so states are written as status by hand.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import { eventually, serviceAccountToken, testCluster } from "../../../test/support/cluster.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getUserland,
  markReady,
  simpleTemplateSpec,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { startUserManager } from "../../user-manager/test/support.ts";
import type { HomeView } from "../pages/homeView.ts";
import { timeAgo } from "../pages/homePage.ts";
import { proxyKubeConfig, send, startProxy, testKeys } from "./support.ts";

const APEX = "apps.example.test";
const CODE_HOST = "code.example.test";
const html = { accept: "text/html,application/xhtml+xml" };
const json = { accept: "application/json" };

/** What a browser sends with a form from a no-referrer page of the site over https: Origin "null", Sec-Fetch-Site. */
const sameOrigin: Record<string, string> = { "sec-fetch-site": "same-origin", origin: "null" };

const listUserlands = async (ns: string) =>
  (await (await adminRest()).list<Userland>(userlandsPath(ns))).items;

test("the home page: own environments only, states, Start/Stop/Create without JavaScript, no cross-site forms", async (t) => {
  const um = await startUserManager(t, { templates: [] });
  const ns = um.ns;
  await createTemplate(
    ns,
    "code",
    simpleTemplateSpec("registry.invalid/code:1", {
      displayName: "VS Code",
      description: "An editor in the browser",
    }),
  );
  await createTemplate(
    ns,
    "jupyter",
    simpleTemplateSpec("registry.invalid/jupyter:1", { displayName: "Jupyter" }),
  );
  await createTemplate(
    ns,
    "sql",
    simpleTemplateSpec("registry.invalid/sql:1", {
      displayName: "SQL playground",
      description: "A database of your own",
      selfService: true,
    }),
  );

  // alice: VS Code ready and used 5 minutes ago, Jupyter stopped. bob: VS Code ready.
  // carol: failed. dave: starting (nothing reconciled it). erin: nothing at all.
  await createUserland(ns, "alice-code", "alice", "code");
  await markReady(ns, "alice-code", { name: "alice-code-svc", port: 80 });
  const usedAt = new Date(Date.now() - 5 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
  await (
    await adminRest()
  ).patch(userlandsPath(ns, "alice-code"), {
    metadata: { annotations: { [UserlandAnnotations.lastActivity]: usedAt } },
  });
  await createUserland(ns, "alice-jupyter", "alice", "jupyter", false);
  await createUserland(ns, "bob-code", "bob", "code");
  await markReady(ns, "bob-code", { name: "bob-code-svc", port: 80 });
  await createUserland(ns, "carol-code", "carol", "code");
  await (
    await adminRest()
  ).patch(userlandsPath(ns, "carol-code", "status"), {
    status: { phase: "Failed", message: "image registry.invalid/code:1 cannot be pulled" },
  });
  await createUserland(ns, "dave-code", "dave", "code");

  // The proxy's ServiceAccount, with the chart's rights, is also who it is to the user-manager.
  await proxyKubeConfig(ns);
  const token = await serviceAccountToken(ns, "userland-proxy");
  const keys = await testKeys(t);
  const tokenFile = join(keys.dir, "proxy-token");
  await writeFile(tokenFile, token);
  await waitForGrant(ns, "userland-proxy", "create");
  const proxy = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: um.base,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
  });
  const cookie = (user: string) => keys.cookie(user);
  const get = async (user: string, accept: Record<string, string>, host = APEX, path = "/") =>
    send(proxy.port, { path, headers: { host, cookie: await cookie(user), ...accept } });
  const view = async (user: string, host = APEX) => {
    const r = await get(user, json, host, "/_userland/home");
    assert.equal(r.status, 200, r.body);
    return r.json<HomeView>();
  };
  const post = async (user: string, action: string, form: Record<string, string>, headers = sameOrigin) =>
    send(proxy.port, {
      method: "POST",
      path: `/_userland/${action}`,
      headers: {
        host: APEX,
        cookie: await cookie(user),
        "content-type": "application/x-www-form-urlencoded",
        ...html,
        ...headers,
      },
      body: new URLSearchParams(form).toString(),
    });
  // Every Userland above is in the proxy's cache before the first look.
  await eventually("the proxy's cache to hold every Userland", () =>
    ["alice", "bob", "carol", "dave"].every((u) => (proxy.app.cluster.userlandsOf?.(u).length ?? 0) > 0),
  );

  await t.test(
    "a student sees exactly their own environments, with Open links to their Templates' hosts",
    async () => {
      const alice = await view("alice");
      assert.equal(alice.user, "alice");
      assert.deepEqual(
        alice.environments.map((e) => [e.name, e.template, e.title, e.openUrl]),
        [
          ["alice-jupyter", "jupyter", "Jupyter", "http://jupyter.example.test/"],
          ["alice-code", "code", "VS Code", "http://code.example.test/"],
        ],
      );
      const page = await get("alice", html);
      assert.equal(page.status, 200);
      assert.match(String(page.headers["content-type"]), /text\/html/);
      for (const text of [
        "VS Code",
        "An editor in the browser",
        "Jupyter",
        'href="http://code.example.test/"',
      ])
        assert.ok(page.body.includes(text), `the page shows ${text}`);
      for (const other of ["bob-code", "carol-code", "dave-code", "bob<"])
        assert.ok(!page.body.includes(other), `nothing of ${other} on alice's home`);
      const bob = await view("bob");
      assert.deepEqual(
        bob.environments.map((e) => e.name),
        ["bob-code"],
      );
      // The same home at its fixed path on a Template's host.
      assert.deepEqual(
        (await view("alice", CODE_HOST)).environments.map((e) => e.name),
        ["alice-jupyter", "alice-code"],
      );
      // Case matters: identities are exact.
      assert.deepEqual((await view("Alice")).environments, []);
    },
  );

  await t.test("states: ready, stopped, failed with its message, starting; last use", async () => {
    const alice = await view("alice");
    const code = alice.environments.find((e) => e.name === "alice-code");
    const jupyter = alice.environments.find((e) => e.name === "alice-jupyter");
    assert.equal(code?.state, "ready");
    assert.equal(code?.lastActivity, usedAt);
    assert.equal(jupyter?.state, "stopped");
    assert.equal(jupyter?.lastActivity, undefined);
    const carol = (await view("carol")).environments[0];
    assert.equal(carol?.state, "failed");
    assert.equal(carol?.detail, "image registry.invalid/code:1 cannot be pulled");
    assert.equal((await view("dave")).environments[0]?.state, "starting");

    const page = (await get("alice", html)).body;
    assert.match(page, /class="state state-ready">Ready</);
    assert.match(page, /class="state state-stopped">Stopped</);
    assert.match(page, new RegExp(`<time datetime="${usedAt}"[^>]*>\\s*5 minutes ago\\s*</time`));
    assert.match(page, /Not used yet/);
    // Ready: Stop; stopped: Start; each form names its own Userland.
    assert.match(
      page,
      /action="\/_userland\/stop">\s*<input type="hidden" name="userland" value="alice-code"/,
    );
    assert.match(
      page,
      /action="\/_userland\/start">\s*<input type="hidden" name="userland" value="alice-jupyter"/,
    );
    const carolPage = (await get("carol", html)).body;
    assert.match(carolPage, /state-failed">Failed</);
    assert.match(carolPage, /cannot be pulled/);
    // Something starting: the page also refreshes itself without JavaScript.
    assert.match(
      (await get("dave", html)).body,
      /<noscript><meta http-equiv="refresh" content="5" \/><\/noscript>/,
    );
    assert.equal(timeAgo("2026-01-01T10:00:00Z", new Date("2026-01-03T11:00:00Z")), "2 days ago");
  });

  await t.test(
    "the page has the starting page's strict CSP and its one script is allowed by hash",
    async () => {
      const page = await get("alice", html);
      const csp = String(page.headers["content-security-policy"]);
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /form-action 'self'/);
      assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'$/);
      assert.equal([...page.body.matchAll(/<script/g)].length, 1, "one inline script, no third-party asset");
      assert.doesNotMatch(page.body, /(src|href)="https?:\/\/(?!code\.|jupyter\.|auth\.)/);
      assert.equal(page.headers["cache-control"], "no-store");
    },
  );

  await t.test(
    "a student with nothing sees the empty home and the self-service Templates, never an error",
    async () => {
      const r = await get("erin", html);
      assert.equal(r.status, 200);
      assert.match(r.body, /You have no environments yet/);
      assert.match(r.body, /Your teacher assigns them/);
      assert.match(r.body, /SQL playground/);
      assert.match(
        r.body,
        /action="\/_userland\/create">\s*<input type="hidden" name="template" value="sql"/,
      );
      const erin = await view("erin");
      assert.deepEqual(erin.environments, []);
      // Only self-service Templates are offered.
      assert.deepEqual(
        erin.available.map((a) => a.template),
        ["sql"],
      );
    },
  );

  await t.test("without a session a browser is sent to sign in and comes back to the home", async () => {
    const r = await send(proxy.port, { headers: { host: APEX, ...html } });
    assert.equal(r.status, 302);
    const location = new URL(r.headers.location ?? "");
    assert.equal(location.searchParams.get("rd"), `http://${APEX}/`);
    const api = await send(proxy.port, { path: "/_userland/home", headers: { host: APEX, ...json } });
    assert.equal(api.status, 401);
    // Nothing but the home lives on the apex.
    assert.equal((await get("alice", html, APEX, "/somewhere")).status, 404);
  });

  await t.test("cross-site forms are refused and change nothing", async () => {
    const refused: [string, Record<string, string>][] = [
      ["another site's Origin", { origin: "https://evil.example" }],
      ["a Template host's Origin", { origin: `http://${CODE_HOST}` }],
      ["Sec-Fetch-Site: cross-site", { origin: "null", "sec-fetch-site": "cross-site" }],
      ["Sec-Fetch-Site: same-site (an environment on a Template host)", { "sec-fetch-site": "same-site" }],
    ];
    for (const [what, headers] of refused) {
      assert.equal(
        (await post("alice", "stop", { userland: "alice-code", rd: "/" }, headers)).status,
        403,
        what,
      );
      assert.equal((await post("erin", "create", { template: "sql", rd: "/" }, headers)).status, 403, what);
    }
    assert.equal((await getUserland(ns, "alice-code")).spec.enabled, true, "still running");
    assert.deepEqual(
      (await listUserlands(ns)).filter((u) => u.spec.user === "erin"),
      [],
    );
    const offSite = await post("alice", "stop", { userland: "alice-code", rd: "https://evil.example/" });
    assert.equal(offSite.status, 400, "a return address off the site");
  });

  await t.test("Stop and Start work as plain forms, only ever on the session's own environment", async () => {
    // bob's environment, named in alice's form: as if it did not exist.
    const foreign = await post("alice", "stop", { userland: "bob-code", rd: "/" });
    assert.equal(foreign.status, 404);
    assert.equal((await post("alice", "start", { userland: "bob-code", rd: "/" })).status, 404);
    assert.equal((await getUserland(ns, "bob-code")).spec.enabled, true, "bob's environment untouched");

    const stopped = await post("alice", "stop", { userland: "alice-code", rd: "/" });
    assert.equal(stopped.status, 303, stopped.body);
    assert.equal(stopped.headers.location, "/");
    const after = await getUserland(ns, "alice-code");
    assert.equal(after.spec.enabled, false);
    await eventually(
      "alice's home to show VS Code stopped",
      async () =>
        (await view("alice")).environments.find((e) => e.name === "alice-code")?.state === "stopped",
    );

    const started = await post("alice", "start", { userland: "alice-jupyter", rd: "/_userland/home" });
    assert.equal(started.status, 303, started.body);
    assert.equal(started.headers.location, "/_userland/home");
    assert.equal((await getUserland(ns, "alice-jupyter")).spec.enabled, true);
    assert.equal((await getUserland(ns, "alice-code")).spec.enabled, false, "only the named one started");
    assert.equal((await getUserland(ns, "bob-code")).spec.enabled, true);
  });

  await t.test(
    "a self-service Template: one click creates exactly one Userland, other Templates none",
    async () => {
      const notOffered = await post("erin", "create", { template: "code", rd: "/" });
      assert.equal(notOffered.status, 404);
      assert.equal((await post("erin", "create", { template: "nope", rd: "/" })).status, 404);

      // A double click, and a second tab: one Userland.
      const answers = await Promise.all(
        [1, 2, 3].map(() => post("erin", "create", { template: "sql", rd: "/" })),
      );
      assert.deepEqual(
        answers.map((a) => a.status),
        [303, 303, 303],
        answers.map((a) => a.body).join("\n"),
      );
      const erin = await eventually("erin's environment on her home", async () => {
        const v = await view("erin");
        return v.environments.length > 0 ? v : undefined;
      });
      assert.deepEqual(
        erin.environments.map((e) => e.template),
        ["sql"],
      );
      assert.deepEqual(erin.available, [], "no longer offered once held");
      assert.equal(
        (await post("erin", "create", { template: "sql", rd: "/" })).status,
        303,
        "again: nothing to do",
      );
      const held = (await listUserlands(ns)).filter((u) => u.spec.user === "erin");
      assert.deepEqual(
        held.map((u) => u.spec.templateName),
        ["sql"],
      );
      // Created by the user-manager on the proxy's request.
      assert.equal(
        held[0]?.metadata.annotations?.["userland.dev/created-by"],
        `system:serviceaccount:${ns}:userland-proxy`,
      );
      assert.equal((await listUserlands(ns)).length, 6, "nobody else got anything");

      // A student who holds environments of other Templates gets one more, of this one.
      assert.equal((await post("alice", "create", { template: "sql", rd: "/" })).status, 303);
      const alice = await eventually("alice's third environment", async () => {
        const v = await view("alice");
        return v.environments.length === 3 ? v : undefined;
      });
      assert.deepEqual(alice.environments.map((e) => e.template).sort(), ["code", "jupyter", "sql"]);
      assert.equal((await listUserlands(ns)).length, 7);
    },
  );
});

/** Waits until RBAC lets `sa` do `verb` on userlands (the user-manager asks RBAC the same). */
async function waitForGrant(ns: string, sa: string, verb: string): Promise<void> {
  const admin = new KubeRest((await testCluster()).kc);
  try {
    await eventually(`RBAC to let ${sa} ${verb} userlands`, async () => {
      const review = await admin.create<{ status?: { allowed?: boolean } }>(
        `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: "LocalSubjectAccessReview",
          spec: {
            user: `system:serviceaccount:${ns}:${sa}`,
            groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`, "system:authenticated"],
            resourceAttributes: { namespace: ns, group: "userland.dev", resource: "userlands", verb },
          },
        },
      );
      return review.status?.allowed === true;
    });
  } finally {
    await admin.close();
  }
}
