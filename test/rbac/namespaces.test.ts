/**
 * watchNamespaces in the chart: a Role and RoleBinding per listed namespace for the operator, the
 * user-manager and the proxy (the operator's Lease stays in the release namespace), or ClusterRoles
 * for "*"; the USERLAND_WATCH_NAMESPACES they read; the ESC user-default policy bound to the same
 * namespaces. Proven with real ServiceAccount tokens: each component acts in a listed namespace
 * and is refused in one that is not listed.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { paths } from "../../api/kubePaths.ts";
import { KubeError, KubeRest } from "../../lib/kubeRest.ts";
import { kubeconfigYaml } from "../../cluster/controlPlane.ts";
import { serviceAccountToken, testCluster, testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { templatesPath, userlandsPath } from "../support/resources.ts";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  applyManifests,
  helm,
  ok,
  cleanUpClusterScoped,
  isolatedValues,
  parseManifests,
  renderChart,
  type KubeObject,
} from "../chart/support.ts";
import { k8s } from "../../lib/kube.ts";

const RELEASE = "ul";
const PREFIX = "ul-userland";
const deploymentsPath = (ns: string) => paths.namespaced("apps", "v1", "deployments", ns);
const leasesPath = (ns: string) => paths.namespaced("coordination.k8s.io", "v1", "leases", ns);

async function render(release: string, values: Record<string, unknown>): Promise<KubeObject[]> {
  return parseManifests(await renderChart(RELEASE, release, isolatedValues(release, values)));
}

/** Applies each namespace's objects there (cluster-scoped ones with the release's). */
async function apply(t: TestContext, release: string, objects: KubeObject[]): Promise<void> {
  cleanUpClusterScoped(t, objects);
  const byNamespace = new Map<string, KubeObject[]>();
  for (const o of objects) {
    const ns = o.metadata.namespace ?? release;
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), o]);
  }
  for (const [ns, list] of byNamespace) await applyManifests(ns, list);
}

async function as(release: string, component: string): Promise<KubeRest> {
  const { info } = await testCluster();
  const token = await serviceAccountToken(release, `${PREFIX}-${component}`);
  const kc = new k8s.KubeConfig();
  kc.loadFromString(kubeconfigYaml(info.server, readFileSync(info.caFile), component, token, release));
  return new KubeRest(kc, `test-${component}`);
}

async function outcome(request: Promise<unknown>): Promise<"allowed" | "forbidden"> {
  try {
    await request;
    return "allowed";
  } catch (error) {
    if (error instanceof KubeError && error.code === 403) return "forbidden";
    throw error;
  }
}

const envOf = (objects: KubeObject[], component: string): string | undefined => {
  const d = objects.find((o) => o.kind === "Deployment" && o.metadata.name === `${PREFIX}-${component}`) as
    | { spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } } }
    | undefined;
  return d?.spec.template.spec.containers[0]?.env?.find((e) => e.name === "USERLAND_WATCH_NAMESPACES")?.value;
};

test("a list: a Role per listed namespace for each component; acting there works, elsewhere is refused", async (t) => {
  await installCrds();
  const release = await testNamespace(t, "rel");
  const a = await testNamespace(t, "course");
  const b = await testNamespace(t, "course");
  const unlisted = await testNamespace(t, "other");
  const objects = await render(release, {
    watchNamespaces: [a, b],
    auth: { provision: { enabled: true, template: "code" } },
  });

  const roles = (name: string) =>
    objects
      .filter((o) => o.kind === "Role" && o.metadata.name === name)
      .map((o) => o.metadata.namespace)
      .sort();
  // The operator's Lease Role stays in the release namespace; the others only where Userlands are.
  assert.deepEqual(roles(`${PREFIX}-operator`), [a, b, release].sort());
  for (const c of ["user-manager", "proxy", "auth-provision"])
    assert.deepEqual(roles(`${PREFIX}-${c}`), [a, b].sort());
  // Session records (api/sessions.ts) live in the release namespace alone.
  for (const c of [
    "user-manager-session-records",
    "proxy-session-records",
    "operator-session-records",
    "auth-ended-sessions",
  ])
    assert.deepEqual(roles(`${PREFIX}-${c}`), [release]);
  assert.equal(
    objects.filter((o) => o.kind === "ClusterRole" && /all-namespaces/.test(o.metadata.name)).length,
    0,
  );
  for (const c of ["operator", "proxy", "user-manager"]) assert.equal(envOf(objects, c), `${a},${b}`);
  // Not the auth service: the session records it watches are in its own namespace.
  assert.equal(envOf(objects, "auth"), undefined);

  await apply(t, release, objects);
  const operator = await as(release, "operator");
  const userManager = await as(release, "user-manager");
  const proxy = await as(release, "proxy");
  for (const ns of [a, b]) {
    assert.equal(
      await outcome(operator.list(userlandsPath(ns))),
      "allowed",
      `operator lists Userlands in ${ns}`,
    );
    assert.equal(
      await outcome(operator.list(deploymentsPath(ns))),
      "allowed",
      `operator lists Deployments in ${ns}`,
    );
    assert.equal(
      await outcome(userManager.list(userlandsPath(ns))),
      "allowed",
      `user-manager lists in ${ns}`,
    );
    assert.equal(await outcome(proxy.list(templatesPath(ns))), "allowed", `proxy lists Templates in ${ns}`);
  }
  assert.equal(await outcome(operator.list(userlandsPath(unlisted))), "forbidden");
  assert.equal(await outcome(operator.list(deploymentsPath(unlisted))), "forbidden");
  assert.equal(await outcome(userManager.list(userlandsPath(unlisted))), "forbidden");
  assert.equal(await outcome(proxy.list(templatesPath(unlisted))), "forbidden");
  // Leader election only in the release namespace; nothing cluster-wide.
  assert.equal(await outcome(operator.list(leasesPath(a))), "forbidden");
  assert.equal(await outcome(operator.list("/apis/userland.dev/v1alpha1/userlands")), "forbidden");
  assert.equal(await outcome(proxy.list("/apis/userland.dev/v1alpha1/templates")), "forbidden");
});

test('"*": ClusterRoles instead, reaching a namespace the chart never named', async (t) => {
  await installCrds();
  const release = await testNamespace(t, "rel");
  // This test is about RBAC's reach. A "*" release's start-stop admission policy is bound in every
  // namespace and exempts only this release's own accounts, so, applied to the shared test cluster,
  // it would refuse the proxy and user-manager of every other test's release (a "*" release is alone
  // in its cluster: docs/decisions/0010-namespaces.md). Its rules are proven in rbac.test.ts.
  const objects = await render(release, {
    watchNamespaces: ["*"],
    rbac: { startStopAdmissionPolicy: false },
  });
  const clusterRoles = objects
    .filter((o) => o.kind === "ClusterRole" && /all-namespaces$/.test(o.metadata.name))
    .map((o) => o.metadata.name)
    .sort();
  assert.deepEqual(
    clusterRoles,
    ["auth-sign-out", "operator", "proxy", "user-manager"].map(
      (c) => `${release}-${PREFIX}-${c}-all-namespaces`,
    ),
  );
  // Only the operator's Lease Role and the session records' Roles are namespaced, in the release's.
  assert.deepEqual(
    objects
      .filter((o) => o.kind === "Role")
      .map((o) => `${o.metadata.namespace}/${o.metadata.name}`)
      .sort(),
    [
      "auth-ended-sessions",
      "operator",
      "operator-session-records",
      "proxy-session-records",
      "user-manager-session-records",
    ].map((c) => `${release}/${PREFIX}-${c}`),
  );
  for (const c of ["operator", "proxy", "user-manager"]) assert.equal(envOf(objects, c), "*");

  await apply(t, release, objects);
  const elsewhere = await testNamespace(t, "other");
  const operator = await as(release, "operator");
  const proxy = await as(release, "proxy");
  assert.equal(await outcome(operator.list("/apis/userland.dev/v1alpha1/userlands")), "allowed");
  assert.equal(await outcome(operator.list(deploymentsPath(elsewhere))), "allowed");
  assert.equal(await outcome(proxy.list(templatesPath(elsewhere))), "allowed");
  // Still no Lease outside its own namespace.
  assert.equal(await outcome(operator.list(leasesPath(elsewhere))), "forbidden");
});

test("watchNamespaces that are not namespace names, or * among names, fail the render", async () => {
  await assert.rejects(
    renderChart(RELEASE, "rel", { watchNamespaces: ["*", "course-a"] }),
    /cannot be combined/,
  );
  await assert.rejects(
    renderChart(RELEASE, "rel", { watchNamespaces: ["Course_A"] }),
    /does not match pattern/,
  );
});

test("the ESC user-default policy is bound to the namespaces served", async () => {
  const renderWithPolicy = async (values: unknown) => {
    const file = join(mkdtempSync(join(tmpdir(), "ns-values-")), "values.json");
    writeFileSync(file, JSON.stringify(values));
    const text = ok(
      await helm([
        "template",
        RELEASE,
        "charts/userland",
        "--namespace",
        "rel",
        "--values",
        file,
        "--api-versions",
        "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
      ]),
      "helm template",
    );
    return parseManifests(text).find((o) => o.kind === "MutatingAdmissionPolicyBinding") as
      | { spec: { matchResources?: { namespaceSelector: { matchExpressions: { values: string[] }[] } } } }
      | undefined;
  };
  assert.deepEqual(
    (await renderWithPolicy({}))?.spec.matchResources?.namespaceSelector.matchExpressions[0]?.values,
    ["rel"],
  );
  assert.deepEqual(
    (await renderWithPolicy({ watchNamespaces: ["a", "b"] }))?.spec.matchResources?.namespaceSelector
      .matchExpressions[0]?.values,
    ["a", "b"],
  );
  assert.equal((await renderWithPolicy({ watchNamespaces: ["*"] }))?.spec.matchResources, undefined);
});
