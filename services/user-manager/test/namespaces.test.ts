/**
 * USERLAND_WATCH_NAMESPACES in the user-manager: a Userland is created in its Template's namespace
 * (of one Template name in several namespaces, the oldest's), lists span the namespaces served,
 * and each check asks RBAC in the namespace concerned: a named Userland's own, every served one for
 * a call that names none.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test, type TestContext } from "node:test";
import { type Userland } from "../../../api/v1alpha1/index.ts";
import { k8s } from "../../../lib/kube.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import { createLogger } from "../../../lib/logger.ts";
import { parseWatchNamespaces } from "../../../lib/namespaces.ts";
import {
  eventually,
  serviceAccountToken,
  testCluster,
  testNamespace,
} from "../../../test/support/cluster.ts";
import { grantChartRights } from "../../../test/support/chartRights.ts";
import { installCrds } from "../../../test/support/operator.ts";
import {
  createTemplate,
  createUserland,
  simpleTemplateSpec,
  tryGet,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { buildApp } from "../app.ts";
import { createMetrics } from "../metrics.ts";
import { defaultConfig, type UserManagerConfig } from "../config.ts";
import { consoleSessions, TEACHER_RULES, USER_PREFIX } from "./consoleSupport.ts";
import { metricValue } from "./support.ts";

const rbacApi = async () => (await testCluster()).kc.makeApiClient(k8s.RbacAuthorizationV1Api);

async function clusterBind(t: TestContext, own: string, sa: string, role: string): Promise<void> {
  const rbac = await rbacApi();
  const name = `${own}-${sa}-${role}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: own }],
    },
  });
  t.after(() => rbac.deleteClusterRoleBinding({ name }).catch(() => undefined));
}

/** The service under USERLAND_WATCH_NAMESPACES=`watch`, with Userland rights there; `call` as a caller. */
async function serve(
  t: TestContext,
  own: string,
  watch: string[] | "*",
  config: Partial<UserManagerConfig> = {},
) {
  const cluster = await testCluster();
  const account = await grantChartRights("user-manager", own, {
    watchNamespaces: watch === "*" ? ["*"] : watch,
    scope: t,
  });
  const token = await serviceAccountToken(own, account);
  const rest = new KubeRest(cluster.kubeConfigForToken(token, own), "userland-user-manager-test");
  // The app first: a closing client waits for its requests, and the app's watch ends with the app.
  const opened: { app?: Awaited<ReturnType<typeof buildApp>> } = {};
  t.after(async () => {
    await opened.app?.close();
    await rest.close();
  });
  const probe = userlandsPath(watch === "*" ? own : (watch[0] ?? own));
  await eventually("the service's grants", async () => {
    try {
      await rest.list(probe);
      return true;
    } catch {
      return false;
    }
  });
  const metrics = createMetrics();
  const app = await buildApp({
    metrics,
    config: defaultConfig({
      watchNamespaces: parseWatchNamespaces(watch === "*" ? "*" : watch.join(",")),
      ...config,
    }),
    rest,
    namespace: own,
    log: createLogger("user-manager", process.env.SHOW_USER_MANAGER_LOGS ? "debug" : "silent"),
  });
  opened.app = app;
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  assert.ok(address && typeof address === "object");
  const base = `http://127.0.0.1:${address.port}`;
  const call = async (method: string, path: string, caller: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${caller}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: (await r.json().catch(() => ({}))) as Record<string, unknown> };
  };
  return { base, call, metrics };
}

/** The service's own namespace and two courses' (the CRDs installed). */
async function namespaces(t: TestContext) {
  await installCrds();
  return {
    own: await testNamespace(t, "um"),
    a: await testNamespace(t, "course"),
    b: await testNamespace(t, "course"),
  };
}

test("several namespaces: create in the Template's namespace, list across, check RBAC where the Userland is", async (t) => {
  const { own, a, b } = await namespaces(t);
  // "code" in both (a's is older: the one served), "jupyter" only in b.
  await createTemplate(a, "code", simpleTemplateSpec());
  await new Promise((r) => setTimeout(r, 1100)); // creationTimestamp has whole seconds
  await createTemplate(b, "code", simpleTemplateSpec());
  await createTemplate(b, "jupyter", simpleTemplateSpec());

  const { base, call } = await serve(t, own, [a, b]);

  // A teacher of both courses, and one of course a only.
  const rbac = await rbacApi();
  for (const ns of [a, b])
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: "userland-teacher" },
        rules: [
          {
            apiGroups: ["userland.dev"],
            resources: ["userlands"],
            verbs: ["get", "list", "create", "patch", "delete"],
          },
        ],
      },
    });
  const teacherRole = async (sa: string, namespaces: string[]) => {
    for (const namespace of namespaces)
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: sa },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "userland-teacher" },
          subjects: [{ kind: "ServiceAccount", name: sa, namespace: own }],
        },
      });
    return serviceAccountToken(own, sa);
  };
  const both = await teacherRole("both", [a, b]);
  const onlyA = await teacherRole("only-a", [a]);

  const jupyter = await eventually("the teacher's grants", async () => {
    const r = await call("POST", "/api/v1/userlands", both, { user: "ada", templateName: "jupyter" });
    return r.status === 201 ? r : undefined;
  });
  const jupyterName = String(jupyter.json.name);
  assert.ok(await tryGet<Userland>(userlandsPath(b, jupyterName)), "in jupyter's namespace");
  const code = await call("POST", "/api/v1/userlands", both, { user: "ada", templateName: "code" });
  assert.equal(code.status, 201);
  const codeName = String(code.json.name);
  assert.ok(await tryGet<Userland>(userlandsPath(a, codeName)), "in the older code Template's namespace");
  assert.equal(await tryGet<Userland>(userlandsPath(b, codeName)), undefined);

  const listed = await call("GET", "/api/v1/users/ada/userlands", both);
  assert.equal(listed.status, 200);
  assert.deepEqual(
    (listed.json.items as { templateName: string }[]).map((u) => u.templateName),
    ["code", "jupyter"],
  );

  // The teacher of course a alone: the Userland in a yes, the one in b no (checked in b); lists
  // show course a's only; creating works for a's Templates and is refused for b's.
  assert.equal((await call("GET", `/api/v1/userlands/${codeName}`, onlyA)).status, 200);
  const refused = await call("POST", `/api/v1/userlands/${jupyterName}/stop`, onlyA);
  assert.equal(refused.status, 403);
  assert.match(JSON.stringify(refused.json), new RegExp(`namespace \\\\"${b}\\\\"`));
  const names = async (path: string, caller: string) => {
    const r = await call("GET", path, caller);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return (r.json.items as { name: string }[]).map((u) => u.name).sort();
  };
  assert.deepEqual(await names("/api/v1/userlands", onlyA), [codeName]);
  assert.deepEqual(await names("/api/v1/users/ada/userlands", onlyA), [codeName]);
  assert.deepEqual(await names("/api/v1/userlands", both), [codeName, jupyterName].sort());
  const inB = await call("POST", "/api/v1/userlands", onlyA, { user: "grace", templateName: "jupyter" });
  assert.equal(inB.status, 403);
  assert.match(JSON.stringify(inB.json), new RegExp(b));
  assert.equal(
    (await call("POST", "/api/v1/userlands", onlyA, { user: "grace", templateName: "code" })).status,
    201,
  );
  // Someone with no rights anywhere learns nothing: a list is refused, not empty.
  const nobody = await serviceAccountToken(own, "nobody");
  assert.equal((await call("GET", "/api/v1/userlands", nobody)).status, 403);
  assert.equal((await call("GET", `/api/v1/userlands/${jupyterName}`, nobody)).status, 403);
  assert.equal((await call("GET", "/api/v1/userlands/no-such-userland", nobody)).status, 403);

  // A roster puts each line's Userland in its Template's namespace. The teacher of course a alone
  // imports a's lines; the line for b's Template is invalid, naming b; a roster for b's Template
  // is refused whole.
  const roster = { templateName: "code", users: ["erin", { user: "frank", templateName: "jupyter" }] };
  const partly = await call("POST", "/api/v1/rosters/import", onlyA, roster);
  assert.equal(partly.status, 200, JSON.stringify(partly.json));
  assert.deepEqual(
    (partly.json.created as { user: string }[]).map((c) => c.user),
    ["erin"],
  );
  const invalid = partly.json.invalid as { line: number; user: string; reason: string }[];
  assert.deepEqual(
    invalid.map((i) => i.user),
    ["frank"],
  );
  assert.match(invalid[0]?.reason ?? "", new RegExp(`namespace "${b}", where Template "jupyter" is`));
  const wholeB = await call("POST", "/api/v1/rosters/import", onlyA, {
    templateName: "jupyter",
    users: ["gina"],
  });
  assert.equal(wholeB.status, 403);
  assert.match(JSON.stringify(wholeB.json), new RegExp(b));
  const imported = await call("POST", "/api/v1/rosters/import", both, roster);
  assert.equal(imported.status, 200, JSON.stringify(imported.json));
  assert.deepEqual(
    (imported.json.created as { user: string }[]).map((c) => c.user),
    ["frank"],
  );
  assert.deepEqual(
    (imported.json.existing as { user: string }[]).map((c) => c.user),
    ["erin"],
  );
  const createdIn = async (user: string, template: string) => {
    const r = await call("GET", `/api/v1/users/${user}/userland?template=${template}`, both);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const name = String(r.json.name);
    return (await tryGet<Userland>(userlandsPath(a, name)))
      ? a
      : (await tryGet<Userland>(userlandsPath(b, name)))
        ? b
        : undefined;
  };
  assert.equal(await createdIn("erin", "code"), a);
  assert.equal(await createdIn("frank", "jupyter"), b);

  // Ready although the service has no rights in its own namespace: it probes where it serves.
  assert.equal((await fetch(`${base}/readyz`)).status, 200);

  // The teacher of both stops the one in b: it is patched where it is.
  assert.equal((await call("POST", `/api/v1/userlands/${jupyterName}/stop`, both)).status, 200);
  assert.equal((await tryGet<Userland>(userlandsPath(b, jupyterName)))?.spec.enabled, false);
  assert.equal((await call("DELETE", `/api/v1/userlands/${codeName}`, both)).status, 204);
  await eventually(
    "the Userland in a to go",
    async () => (await tryGet(userlandsPath(a, codeName))) === undefined,
  );
});

test('"*": a named Userland is checked in its namespace; a teacher bound in one namespace lists and imports there', async (t) => {
  const { own, a, b: later } = await namespaces(t);
  // Every namespace of a shared test cluster is served: Template names no other test uses.
  const suffix = randomBytes(4).toString("hex");
  const [codeT, jupyterT, user] = [`c${suffix}`, `j${suffix}`, `ada-${suffix}`];
  await createTemplate(a, codeT, simpleTemplateSpec());
  const { call, metrics } = await serve(t, own, "*");
  await createTemplate(later, jupyterT, simpleTemplateSpec());

  const rbac = await rbacApi();
  const teacherRules = [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get", "list", "create", "patch", "delete"],
    },
  ];
  await rbac.createClusterRole({ body: { metadata: { name: `${own}-teacher` }, rules: teacherRules } });
  t.after(() => rbac.deleteClusterRole({ name: `${own}-teacher` }).catch(() => undefined));
  await clusterBind(t, own, "everywhere", `${own}-teacher`);
  const everywhere = await serviceAccountToken(own, "everywhere");
  await rbac.createNamespacedRoleBinding({
    namespace: a,
    body: {
      metadata: { name: "only-a" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${own}-teacher` },
      subjects: [{ kind: "ServiceAccount", name: "only-a", namespace: own }],
    },
  });
  const onlyA = await serviceAccountToken(own, "only-a");

  // A Template in a namespace created after the service started is found; the Userland goes there.
  const created = await eventually("the cluster-wide teacher's grants", async () => {
    const r = await call("POST", "/api/v1/userlands", everywhere, { user, templateName: jupyterT });
    return r.status === 201 ? r : undefined;
  });
  assert.ok(await tryGet<Userland>(userlandsPath(later, String(created.json.name))));
  const code = await call("POST", "/api/v1/userlands", everywhere, { user, templateName: codeT });
  assert.equal(code.status, 201);
  const listed = await call("GET", `/api/v1/users/${user}/userlands`, everywhere);
  assert.equal((listed.json.items as unknown[]).length, 2);

  // Bound in one namespace only: its Userlands by name; lists show that namespace's only.
  assert.equal((await call("GET", `/api/v1/userlands/${String(code.json.name)}`, onlyA)).status, 200);
  assert.equal((await call("GET", `/api/v1/userlands/${String(created.json.name)}`, onlyA)).status, 403);
  const names = async (path: string, caller: string) => {
    const r = await call("GET", path, caller);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return (r.json.items as { name: string }[]).map((u) => u.name).sort();
  };
  assert.deepEqual(await names("/api/v1/userlands", onlyA), [String(code.json.name)]);
  assert.deepEqual(await names(`/api/v1/users/${user}/userlands`, onlyA), [String(code.json.name)]);
  assert.equal((await names("/api/v1/userlands", everywhere)).length >= 2, true);

  // Its roster import creates the lines of a's Template; the other namespace's line is invalid.
  const roster = {
    users: [
      { user: `erin-${suffix}`, templateName: codeT },
      { user: `frank-${suffix}`, templateName: jupyterT },
    ],
  };
  const imported = await call("POST", "/api/v1/rosters/import", onlyA, roster);
  assert.equal(imported.status, 200, JSON.stringify(imported.json));
  assert.deepEqual(
    (imported.json.created as { user: string }[]).map((c) => c.user),
    [`erin-${suffix}`],
  );
  const invalid = imported.json.invalid as { user: string; reason: string }[];
  assert.deepEqual(
    invalid.map((i) => i.user),
    [`frank-${suffix}`],
  );
  assert.match(invalid[0]?.reason ?? "", new RegExp(`namespace "${later}"`));

  // Without a right anywhere: a list is refused, naming the cluster-wide right. Asked again at
  // once, the scan of every namespace holding a Template is not repeated: two reviews a request.
  const nobody = await serviceAccountToken(own, "nobody");
  const list = await call("GET", "/api/v1/userlands", nobody);
  assert.equal(list.status, 403);
  assert.match(JSON.stringify(list.json), /in every namespace/);
  const reviews = async () =>
    metricValue(await metrics.registry.metrics(), "userland_user_manager_access_reviews_total", {
      verb: "list",
      result: "denied",
    });
  const before = await reviews();
  for (let i = 0; i < 3; i++) assert.equal((await call("GET", "/api/v1/userlands", nobody)).status, 403);
  assert.equal((await reviews()) - before, 6, "the cluster-wide review and the refusal's, each time");
});

test("several namespaces in the console: a course's teacher sees that course's class whole, and a refusal's hint names the course's namespace", async (t) => {
  const { own, a, b } = await namespaces(t);
  await createTemplate(a, "code", simpleTemplateSpec());
  await createTemplate(b, "jupyter", simpleTemplateSpec());
  await createUserland(a, "ada-code", "ada", "code");
  await createUserland(b, "bob-jupyter", "bob", "jupyter");

  const sessions = await consoleSessions(t);
  const { base } = await serve(t, own, [a, b], sessions.config);

  // carol teaches course a: a Role there, bound to her session's Kubernetes user.
  const rbac = await rbacApi();
  await rbac.createNamespacedRole({
    namespace: a,
    body: { metadata: { name: "teacher" }, rules: TEACHER_RULES },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: a,
    body: {
      metadata: { name: "carol" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "teacher" },
      subjects: [{ kind: "User", name: `${USER_PREFIX}carol`, apiGroup: "rbac.authorization.k8s.io" }],
    },
  });
  const cookie = await sessions.cookie("carol");
  const page = async (path: string) => {
    const r = await fetch(base + path, { redirect: "manual", headers: { cookie, accept: "text/html" } });
    return { status: r.status, text: await r.text() };
  };

  const index = await eventually("carol's Role to take effect", async () => {
    const r = await page("/console/");
    return r.status === 200 ? r : undefined;
  });
  assert.match(index.text, /code/);
  assert.doesNotMatch(index.text, /jupyter/);
  assert.match(index.text, new RegExp(`${a}.*${b}`, "s"), "the index names the namespaces served");

  // Her class, listable in its namespace: shown whole, not "one by one".
  const klass = await page("/console/class?template=code");
  assert.equal(klass.status, 200, klass.text);
  assert.match(klass.text, /ada/);
  assert.doesNotMatch(klass.text, /one by one/);

  // Course b's class: refused, and the hint binds her where the right was missing.
  const other = await page("/console/class?template=jupyter");
  assert.equal(other.status, 403);
  assert.doesNotMatch(other.text, /bob/);
  assert.match(other.text, new RegExp(`kubectl -n ${b} create rolebinding`));
});

test("several namespaces in the console: the index costs reviews per namespace, not per Userland of the other courses", async (t) => {
  const { own, a, b } = await namespaces(t);
  await createTemplate(a, "code", simpleTemplateSpec());
  await createTemplate(b, "jupyter", simpleTemplateSpec());
  await createUserland(a, "ada-code", "ada", "code");
  // Course b is large; carol teaches course a only, dora two of b's students (a Role naming them).
  const others = Array.from({ length: 40 }, (_, i) => `s${i}-jupyter`);
  for (const name of others) await createUserland(b, name, name.replace(/-jupyter$/, ""), "jupyter");

  const sessions = await consoleSessions(t);
  const { base, metrics } = await serve(t, own, [a, b], sessions.config);
  const rbac = await rbacApi();
  const bind = async (namespace: string, user: string, rules: k8s.V1PolicyRule[]) => {
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name: user }, rules } });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: user },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: user },
        subjects: [{ kind: "User", name: `${USER_PREFIX}${user}`, apiGroup: "rbac.authorization.k8s.io" }],
      },
    });
  };
  await bind(a, "carol", TEACHER_RULES);
  await bind(b, "dora", [
    {
      apiGroups: ["userland.dev"],
      resources: ["userlands"],
      verbs: ["get"],
      resourceNames: others.slice(0, 2),
    },
    { apiGroups: ["userland.dev"], resources: ["userlands/console"], verbs: ["get"] },
  ]);
  // Every access review the service sent, whatever its verb and answer.
  const reviews = async () => {
    let sum = 0;
    for (const line of (await metrics.registry.metrics()).split("\n"))
      if (line.startsWith("userland_user_manager_access_reviews_total{"))
        sum += Number(line.split(" ").pop());
    return sum;
  };
  const view = async (user: string) => {
    const cookie = await sessions.cookie(user);
    const before = await reviews();
    const r = await fetch(`${base}/console/`, {
      redirect: "manual",
      headers: { cookie, accept: "text/html" },
    });
    return { status: r.status, text: await r.text(), reviews: (await reviews()) - before };
  };

  const carol = await eventually("carol's Role to take effect", async () => {
    const r = await view("carol");
    return r.status === 200 ? r : undefined;
  });
  assert.match(carol.text, /template=code/);
  assert.doesNotMatch(carol.text, /jupyter/);
  // The door's (three rights, each in a and b) and the view's: the list everywhere, then the list
  // and the console's right in b. Nothing for each of b's 40 Userlands (the old console: 40 more).
  assert.ok(carol.reviews <= 12, `${carol.reviews} access reviews for carol's index view`);

  const dora = await eventually("dora's Role to take effect", async () => {
    const r = await view("dora");
    return r.status === 200 ? r : undefined;
  });
  assert.match(dora.text, /jupyter/);
  assert.doesNotMatch(dora.text, /template=code/);
  assert.match(dora.text, /<td>2<\/td>/, "her two students");
  // Named one by one where her Role is: each of b's Userlands once, then the grants are reused.
  assert.ok(dora.reviews <= others.length + 12, `${dora.reviews} access reviews for dora's first view`);
});
