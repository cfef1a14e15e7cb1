/**
 * One environment per (student, Template), against the real control plane: a student holds
 * environments of two Templates at once (API and roster import) and reaches each at its own host
 * through the proxy; a Userland named by the older one-per-user rule keeps working; a
 * template-scoped prune leaves other Templates alone; names never collide; lookups are field
 * selectors the API server answers; auto-provisioning creates the default only for a student who
 * has no environment yet.
 */
import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { pino } from "pino";
import { legacyUserlandNameFor, userlandNameFor } from "../../../api/naming.ts";
import { type Userland, userlandFieldSelector } from "../../../api/v1alpha1/index.ts";
import type { ListResult } from "../../../lib/kubeRest.ts";
import { createLogger } from "../../../lib/logger.ts";
import { createMetrics as createAuthMetrics } from "../../auth/metrics.ts";
import { createProvisioner } from "../../auth/provision.ts";
import { send, startProxy, startUpstream, testKeys } from "../../proxy/test/support.ts";
import { eventually, serviceAccountToken } from "../../../test/support/cluster.ts";
import { adminRest, markReady, userlandsPath } from "../../../test/support/resources.ts";
import { UserlandStore } from "../store.ts";
import { admin, startUserManager, type ApiResponse, type Harness } from "./support.ts";

interface View {
  name: string;
  user: string;
  templateName: string;
}
const view = (r: ApiResponse) => r.json as unknown as View;
const itemsOf = (r: ApiResponse) => (r.json.items as View[]).map((i) => [i.user, i.templateName, i.name]);

interface Report {
  created: { line: number; user: string; name: string; templateName: string }[];
  existing: { line: number; user: string; name: string; templateName: string }[];
  invalid: unknown[];
  pruneTemplates?: string[];
  toDelete: { user: string; name: string; templateName: string }[];
  deleted: { user: string; name: string; templateName: string }[];
  dryRun: boolean;
}
const report = (r: ApiResponse) => r.json as unknown as Report;
const refs = (list: { user: string; templateName: string }[]) =>
  list.map((u) => `${u.user}/${u.templateName}`).sort();

const create = (h: Harness, user: string, templateName: string, extra: Record<string, unknown> = {}) =>
  h.call("POST", "/api/v1/userlands", { token: h.teacher, body: { user, templateName, ...extra } });
const userPath = (user: string, rest = "userland") => `/api/v1/users/${encodeURIComponent(user)}/${rest}`;
const pairsOf = async (h: Harness, user: string) =>
  (await admin.listUserlands(h.ns))
    .filter((u) => u.spec.user === user)
    .map((u) => [u.spec.templateName, u.metadata.name])
    .sort();

/**
 * The proxy beside the user-manager (no operator: each Userland is marked Ready by hand, its
 * Service resolved to a loopback upstream): what a session reaches at a Template's host.
 */
async function proxyFor(t: TestContext, h: Harness) {
  const keys = await testKeys(t);
  // PROXY_HOST_TEMPLATES: code.example.test=code, jupyter.example.test=jupyter.
  const proxy = await startProxy(t, h.ns, keys);
  return {
    /** Marks the Userland Ready behind an upstream of its own named `upstream`. */
    async serve(name: string, upstream: string) {
      const service = `${name}-svc`;
      const up = await startUpstream(t, upstream);
      proxy.resolver.set(h.ns, service, up.url);
      await markReady(h.ns, name, { name: service, port: 80 });
    },
    /** Which upstream `user`'s session reaches at `host` (once the proxy's informer has the Userland). */
    async reach(user: string, host: string): Promise<string> {
      const cookie = await keys.cookie(user);
      const body = await eventually(`${user} at ${host} to be proxied`, async () => {
        const r = await send(proxy.port, { headers: { host, cookie, accept: "application/json" } });
        return r.status === 200 ? r.json<{ upstream: string; xUser: string }>() : undefined;
      });
      assert.equal(body.xUser, user, "the environment is told who is there");
      return body.upstream;
    },
    async status(user: string, host: string): Promise<number> {
      const r = await send(proxy.port, {
        headers: { host, cookie: await keys.cookie(user), accept: "application/json" },
      });
      return r.status;
    },
  };
}

test("one student holds environments of two Templates (API and roster import) and reaches each at its own host", async (t) => {
  const h = await startUserManager(t);
  const proxy = await proxyFor(t, h);

  // The programming class: a teacher creates Koba's code environment through the API.
  const code = await create(h, "Koba", "code");
  assert.equal(code.status, 201, code.text);
  assert.equal(view(code).name, userlandNameFor("Koba", "code"));
  // The database class: another teacher imports a roster for jupyter with Koba on it.
  const imported = await h.call("POST", "/api/v1/rosters/import?template=jupyter", {
    token: h.teacher,
    raw: { contentType: "text/csv", text: "user\nKoba\nMina\n" },
  });
  assert.equal(imported.status, 200, imported.text);
  assert.deepEqual(
    report(imported).created.map((c) => [c.user, c.templateName, c.name]),
    [
      ["Koba", "jupyter", userlandNameFor("Koba", "jupyter")],
      ["Mina", "jupyter", userlandNameFor("Mina", "jupyter")],
    ],
  );
  assert.deepEqual(await pairsOf(h, "Koba"), [
    ["code", userlandNameFor("Koba", "code")],
    ["jupyter", userlandNameFor("Koba", "jupyter")],
  ]);

  // Lookups: the plural lists both; the singular never picks one silently.
  const all = await h.call("GET", userPath("Koba", "userlands"), { token: h.teacher });
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(itemsOf(all), [
    ["Koba", "code", userlandNameFor("Koba", "code")],
    ["Koba", "jupyter", userlandNameFor("Koba", "jupyter")],
  ]);
  const ambiguous = await h.call("GET", userPath("Koba"), { token: h.teacher });
  assert.equal(ambiguous.status, 409, ambiguous.text);
  assert.match(String(ambiguous.json.message), /2 Userlands of several templates.*\?template=/);
  assert.deepEqual(
    (ambiguous.json.names as string[]).sort(),
    [userlandNameFor("Koba", "code"), userlandNameFor("Koba", "jupyter")].sort(),
  );
  for (const template of ["code", "jupyter"]) {
    const one = await h.call("GET", `${userPath("Koba")}?template=${template}`, { token: h.teacher });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual([view(one).templateName, view(one).name], [template, userlandNameFor("Koba", template)]);
  }
  const single = await h.call("GET", userPath("Mina"), { token: h.teacher });
  assert.equal(single.status, 200, "a user with one Userland is found without ?template= (as before)");
  assert.equal(view(single).templateName, "jupyter");
  const none = await h.call("GET", `${userPath("Mina")}?template=code`, { token: h.teacher });
  assert.equal(none.status, 404);
  assert.match(String(none.json.message), /user "Mina" has no Userland of template "code"/);
  assert.deepEqual(itemsOf(await h.call("GET", userPath("nobody", "userlands"), { token: h.teacher })), []);
  const badTemplate = await h.call("GET", `${userPath("Koba")}?template=Bad_Name`, { token: h.teacher });
  assert.equal(badTemplate.status, 400);
  assert.deepEqual([badTemplate.json.field, badTemplate.json.in], ["template", "query"]);
  assert.equal(
    (await h.call("GET", userPath("Koba", "userlands"), { token: h.student })).status,
    403,
    "listing someone's Userlands needs the list right",
  );

  // Each environment at its own host, for the same session.
  await proxy.serve(userlandNameFor("Koba", "code"), "koba-code");
  await proxy.serve(userlandNameFor("Koba", "jupyter"), "koba-jupyter");
  await proxy.serve(userlandNameFor("Mina", "jupyter"), "mina-jupyter");
  assert.equal(await proxy.reach("Koba", "code.example.test"), "koba-code");
  assert.equal(await proxy.reach("Koba", "jupyter.example.test"), "koba-jupyter");
  assert.equal(await proxy.reach("Mina", "jupyter.example.test"), "mina-jupyter");
  assert.notEqual(await proxy.status("Mina", "code.example.test"), 200, "Mina has no code environment");
});

test("a Userland named by the one-per-user rule keeps its name and keeps working: found for its pair, never duplicated", async (t) => {
  const h = await startUserManager(t);
  const proxy = await proxyFor(t, h);
  const old = legacyUserlandNameFor("Koba1t");
  assert.equal(old, "koba1t-diqpq3fpyd");
  await admin.createUserland(h.ns, old, "Koba1t", "code");

  const again = await create(h, "Koba1t", "code");
  assert.equal(again.status, 409, again.text);
  assert.equal((again.json.userland as View | undefined)?.name, old);
  const roster = await h.call("POST", "/api/v1/rosters/import", {
    token: h.teacher,
    body: { templateName: "code", users: ["Koba1t"] },
  });
  assert.equal(roster.status, 200, roster.text);
  assert.deepEqual(report(roster).created, []);
  assert.deepEqual(report(roster).existing, [{ line: 1, user: "Koba1t", name: old, templateName: "code" }]);
  const found = await h.call("GET", `${userPath("Koba1t")}?template=code`, { token: h.teacher });
  assert.equal(view(found).name, old);
  assert.equal(view(await h.call("GET", userPath("Koba1t"), { token: h.teacher })).name, old);
  // First-login provisioning finds it too: the user has an environment.
  const firstOnly = await create(h, "Koba1t", "jupyter", { ifUserHasNone: true });
  assert.equal(firstOnly.status, 409, firstOnly.text);
  assert.equal((firstOnly.json.userland as View | undefined)?.name, old);
  assert.deepEqual(await pairsOf(h, "Koba1t"), [["code", old]], "nothing created for the old pair");

  // A second Template gets a new pair name beside it.
  const second = await create(h, "Koba1t", "jupyter");
  assert.equal(second.status, 201, second.text);
  assert.equal(view(second).name, userlandNameFor("Koba1t", "jupyter"));
  assert.deepEqual(await pairsOf(h, "Koba1t"), [
    ["code", old],
    ["jupyter", userlandNameFor("Koba1t", "jupyter")],
  ]);

  await proxy.serve(old, "old-code");
  await proxy.serve(userlandNameFor("Koba1t", "jupyter"), "new-jupyter");
  assert.equal(await proxy.reach("Koba1t", "code.example.test"), "old-code");
  assert.equal(await proxy.reach("Koba1t", "jupyter.example.test"), "new-jupyter");
});

test("pruning covers only the Templates the import names; other Templates' Userlands are left alone", async (t) => {
  const h = await startUserManager(t);
  for (const [user, template] of [
    ["alice", "code"],
    ["alice", "jupyter"],
    ["bob", "code"],
    ["bob", "jupyter"],
    ["carol", "jupyter"],
  ] as const) {
    assert.equal((await create(h, user, template)).status, 201);
  }
  const prune = (query: string, text: string) =>
    h.call("POST", `/api/v1/rosters/import?prune=true${query}`, {
      token: h.teacher,
      raw: { contentType: "text/csv", text },
    });

  // Without ?template=, the lines' templates are covered: code only here.
  const byLines = await prune("", "user,template\nalice,code\n");
  assert.equal(byLines.status, 200, byLines.text);
  assert.deepEqual(report(byLines).pruneTemplates, ["code"]);
  assert.deepEqual(refs(report(byLines).toDelete), ["bob/code"]);
  assert.equal(report(byLines).dryRun, true);

  // The database class's roster names jupyter; a line asking bob for code neither protects nor prunes code.
  const dry = await prune("&template=jupyter", "user,template\nalice,\nbob,code\n");
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(report(dry).pruneTemplates, ["jupyter"]);
  assert.deepEqual(refs(report(dry).toDelete), ["bob/jupyter", "carol/jupyter"]);
  assert.deepEqual(refs(report(dry).existing), ["alice/jupyter", "bob/code"]);

  const done = await prune("&template=jupyter&dryRun=false", "user,template\nalice,\nbob,code\n");
  assert.equal(done.status, 200, done.text);
  assert.equal(report(done).dryRun, false);
  assert.deepEqual(refs(report(done).deleted), ["bob/jupyter", "carol/jupyter"]);
  await eventually("the pruned Userlands to be gone", async () => {
    const left = (await admin.listUserlands(h.ns)).filter((u) => !u.metadata.deletionTimestamp);
    return left.length === 3;
  });
  const left = (await admin.listUserlands(h.ns)).filter((u) => !u.metadata.deletionTimestamp);
  assert.deepEqual(refs(left.map((u) => u.spec)), ["alice/code", "alice/jupyter", "bob/code"]);
});

test("names never collide across users; identities with field-selector characters are found exactly by the API server", async (t) => {
  const h = await startUserManager(t, { templates: ["code"] });
  const users = ["a,b", "a=b", "a\\b", "a\\,b", "a", "A", "!a", "a b", "spec.user=a", "a==b", "a!=b"];
  const names = new Set<string>();
  for (const user of users) {
    const r = await create(h, user, "code");
    assert.equal(r.status, 201, `${user}: ${r.text}`);
    names.add(view(r).name);
  }
  assert.equal(names.size, users.length, "every user has a name of their own");
  // The store asks the API server (it would log a warning once if it had to list everything instead).
  const warnings: string[] = [];
  const store = new UserlandStore(
    h.rest,
    h.ns,
    pino({ level: "warn" }, { write: (line) => warnings.push(line) }),
  );
  for (const user of users) {
    assert.deepEqual(
      (await store.findPair(user, "code")).map((u) => u.spec.user),
      [user],
    );
  }
  assert.deepEqual(warnings, [], "no fallback to listing every Userland");
  const rest = await adminRest();
  for (const user of users) {
    // The selector the store sends, answered by the API server itself (400 if the CRD had no such field).
    const selected = await rest.request<ListResult<Userland>>("GET", userlandsPath(h.ns), {
      query: { fieldSelector: userlandFieldSelector({ user, templateName: "code" }) },
    });
    assert.deepEqual(
      selected.items.map((u) => u.spec.user),
      [user],
      `the API server selects exactly ${JSON.stringify(user)}`,
    );
    const found = await h.call("GET", userPath(user), { token: h.teacher });
    assert.equal(found.status, 200, `${user}: ${found.text}`);
    assert.equal(view(found).user, user);
    const listed = await h.call("GET", `/api/v1/userlands?user=${encodeURIComponent(user)}&template=code`, {
      token: h.teacher,
    });
    assert.deepEqual(
      itemsOf(listed).map(([u]) => u),
      [user],
    );
  }
});

test("auto-provisioning (the auth service's client) creates the default Template only for a student with no environment, and nothing at a sign-in to the console", async (t) => {
  const h = await startUserManager(t);
  // The auth service's right: create only, with its token in a file (a projected token in a pod).
  await h.callerWith("auth", [{ apiGroups: ["userland.dev"], resources: ["userlands"], verbs: ["create"] }]);
  const tokenFile = join(tmpdir(), `pairs-auth-token-${h.ns}`);
  await writeFile(tokenFile, await serviceAccountToken(h.ns, "auth"));
  t.after(() => rm(tokenFile, { force: true }));
  const provisioner = createProvisioner(
    {
      url: new URL(h.base),
      templateName: "code",
      tokenFile,
      timeoutMs: 10_000,
      skipUrls: [new URL("https://userland.example.test/console/")],
    },
    createLogger("auth", "silent"),
    createAuthMetrics(),
  );

  const app = "https://code.userland.example.test/";
  // A teacher signing in to the console gets no environment (issue 44 item 6); the same person
  // signing in to an environment's host does.
  for (const console of [
    "https://userland.example.test/console/",
    "https://userland.example.test/console/class?template=code",
  ])
    assert.equal(await provisioner.provision("newbie", console), "skipped");
  assert.deepEqual(await pairsOf(h, "newbie"), [], "nothing created for the console");
  assert.equal(await provisioner.provision("newbie", "https://userland.example.test/consoles"), "created");
  assert.deepEqual(await pairsOf(h, "newbie"), [["code", userlandNameFor("newbie", "code")]]);
  assert.equal(await provisioner.provision("newbie", app), "exists", "a second sign-in creates nothing");

  // A student the database class gave a jupyter environment signs in: no code environment on top.
  assert.equal((await create(h, "assigned", "jupyter")).status, 201);
  assert.equal(await provisioner.provision("assigned", app), "exists");
  assert.deepEqual(await pairsOf(h, "assigned"), [["jupyter", userlandNameFor("assigned", "jupyter")]]);
});
