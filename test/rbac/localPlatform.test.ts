/**
 * The local platform (dev/platform.ts, behind `npm start`'s demo and the end-to-end tests) runs
 * under exactly the Helm chart's rights: the chart's RBAC is rendered by helm and applied as it is,
 * each component talks as its own chart ServiceAccount, and so the proxy's Start button works with
 * the proxy's own token (issue 13 item 8). No browser: the Start path is driven with a session
 * cookie signed by the platform's key.
 */
import { CONSOLE_TEACHER_ROLES, consoleTeacherBinding } from "../../dev/consoleTeacher.ts";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { userlandNameFor } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { chartObjectPath, type ChartObject } from "../../cluster/chartRbac.ts";
import { kubeconfigYaml } from "../../cluster/controlPlane.ts";
import { DEMO_TEMPLATE, platformRights, startPlatform, type Platform } from "../../dev/platform.ts";
import { paths } from "../../api/kubePaths.ts";
import { k8s } from "../../lib/kube.ts";
import { KubeError, KubeRest } from "../../lib/kubeRest.ts";
import { createSessionSigner, parseSigningKeys, SESSION_COOKIE } from "../../lib/session.ts";
import { eventually } from "../support/cluster.ts";
import { userlandsPath } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";

const dir = join(repoRoot, ".userland", `platform-rights-${randomBytes(3).toString("hex")}`);
let platform: Platform;
const platformLog: string[] = [];

before(async () => {
  platform = await startPlatform({ dir, log: (line) => platformLog.push(line) });
});

after(async () => {
  await platform?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const userlandPath = (name?: string) => userlandsPath(platform.namespace, name);

/** A client that authenticates with the credentials file the platform gave a component. */
function clientFrom(kind: "kubeconfig" | "token", file: string): KubeRest {
  const kc = new k8s.KubeConfig();
  if (kind === "kubeconfig") kc.loadFromFile(file);
  else {
    const ca = readFileSync(platform.controlPlane.caFile);
    kc.loadFromString(
      kubeconfigYaml(
        platform.controlPlane.server,
        ca,
        "component",
        readFileSync(file, "utf8"),
        platform.namespace,
      ),
    );
  }
  return new KubeRest(kc, "local-platform-test");
}

async function whoAmI(rest: KubeRest): Promise<string | undefined> {
  const review = await rest.create<{ status?: { userInfo?: { username?: string } } }>(
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  );
  return review.status?.userInfo?.username;
}

test("the platform's Roles, ClusterRoles, bindings and admission policy are the chart's, and no others", async () => {
  const rendered = await platformRights(platform.controlPlane.binDir);
  const { rest, namespace } = platform;
  for (const object of rendered) {
    const live = await rest.get<Record<string, unknown>>(
      chartObjectPath(object, namespace, object.metadata.name),
    );
    for (const key of ["rules", "roleRef", "subjects"])
      if (key in object)
        assert.deepEqual(live[key], object[key], `${object.kind} ${object.metadata.name}: ${key}`);
    if (object.kind === "ValidatingAdmissionPolicy") {
      const spec = object.spec as Record<string, unknown>;
      const liveSpec = live.spec as Record<string, unknown>;
      for (const key of ["matchConditions", "variables", "validations"])
        assert.deepEqual(
          liveSpec[key],
          spec[key],
          `ValidatingAdmissionPolicy ${object.metadata.name}: ${key}`,
        );
    }
  }
  const names = (kind: string) =>
    rendered
      .filter((o) => o.kind === kind)
      .map((o) => o.metadata.name)
      .sort();
  const liveNames = async (path: string) =>
    (await rest.list<ChartObject>(path)).items.map((o) => o.metadata.name).sort();
  assert.deepEqual(
    await liveNames(paths.namespaced("rbac.authorization.k8s.io", "v1", "roles", namespace)),
    names("Role"),
    "every Role in the namespace is the chart's",
  );
  assert.deepEqual(
    (await liveNames(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", namespace))).filter(
      (n) => n !== platform.teacher && !CONSOLE_TEACHER_ROLES.map(consoleTeacherBinding).includes(n),
    ),
    names("RoleBinding"),
    "every RoleBinding but the teachers' (people, bound as the admin guide says) is the chart's",
  );
  // No ClusterRoleBinding gives a platform ServiceAccount more than the chart's.
  const clusterBindings = await rest.list<
    ChartObject & { subjects?: { kind: string; namespace?: string }[] }
  >("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings");
  assert.deepEqual(
    clusterBindings.items
      .filter((b) => b.subjects?.some((s) => s.kind === "ServiceAccount" && s.namespace === namespace))
      .map((b) => b.metadata.name)
      .sort(),
    names("ClusterRoleBinding"),
  );
  // docs/decisions/0004-rbac.md: the user-manager asks RBAC per namespace, never cluster-wide.
  const review = await rest.create<{ status?: { allowed?: boolean } }>(
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: `system:serviceaccount:${namespace}:${platform.serviceAccounts["user-manager"]}`,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
        resourceAttributes: {
          group: "authorization.k8s.io",
          resource: "subjectaccessreviews",
          verb: "create",
        },
      },
    },
  );
  assert.equal(
    review.status?.allowed,
    false,
    "the user-manager may not create cluster-wide SubjectAccessReviews",
  );
});

test("each component gets credentials of its own chart ServiceAccount", async () => {
  const { serviceAccounts, credentials, namespace } = platform;
  assert.equal(new Set(Object.values(serviceAccounts)).size, 4, "four components, four ServiceAccounts");
  assert.deepEqual(credentials.map((c) => `${c.component} ${c.kind}`).sort(), [
    // Its kubeconfig: the ended-session marks (list and watch userlands, the chart's default).
    "auth kubeconfig",
    // Its token for the user-manager: sign-out everywhere and provisioning share one, as in the chart.
    "auth token",
    "operator kubeconfig",
    "proxy kubeconfig",
    "proxy token",
    "user-manager kubeconfig",
  ]);
  for (const credential of credentials) {
    assert.equal(credential.serviceAccount, serviceAccounts[credential.component]);
    const rest = clientFrom(credential.kind, credential.file);
    try {
      assert.equal(
        await whoAmI(rest),
        `system:serviceaccount:${namespace}:${serviceAccounts[credential.component]}`,
        `${credential.component}'s ${credential.kind}`,
      );
    } finally {
      await rest.close();
    }
  }
});

test("the proxy's Start button starts a stopped environment through the user-manager with the proxy's own token", async () => {
  const user = "sam";
  const name = userlandNameFor(user, DEMO_TEMPLATE);
  await platform.rest.create(userlandPath(), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name },
    spec: { user, templateName: DEMO_TEMPLATE, enabled: false },
  });
  const keys = await parseSigningKeys(
    JSON.parse(readFileSync(join(dir, "session-keys.private.json"), "utf8")),
  );
  const cookie = `${SESSION_COOKIE}=${await createSessionSigner(keys).sign(user, 600)}`;
  const origin = new URL(platform.url).origin;

  // The proxy learns of the Userland through its informer.
  await eventually("the proxy to see the stopped environment", async () => {
    const response = await fetch(`${platform.url}_userland/status`, { headers: { cookie } });
    const status = (await response.json()) as { state?: string };
    return status.state === "stopped";
  });
  const response = await fetch(`${platform.url}_userland/start`, {
    method: "POST",
    headers: {
      cookie,
      origin,
      accept: "application/json",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "rd=/",
  });
  assert.equal(response.status, 202, await response.clone().text());
  assert.deepEqual(await response.json(), { state: "starting", template: DEMO_TEMPLATE });
  const started = await platform.rest.get<Userland>(userlandPath(name));
  assert.equal(started.spec.enabled, true, "started by the user-manager on the proxy's request");
});

test("with its own token the proxy may patch a Userland's activity, and the chart's admission policy refuses the rest", async () => {
  const user = "tia";
  const name = userlandNameFor(user, DEMO_TEMPLATE);
  await platform.rest.create(userlandPath(), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name },
    spec: { user, templateName: DEMO_TEMPLATE, enabled: false },
  });
  const credential = platform.credentials.find((c) => c.component === "proxy" && c.kind === "kubeconfig");
  assert.ok(credential);
  const proxy = clientFrom(credential.kind, credential.file);
  try {
    const at = new Date().toISOString();
    await proxy.patch(userlandPath(name), {
      metadata: { annotations: { "userland.dev/last-activity": at } },
    });
    const patched = await platform.rest.get<Userland>(userlandPath(name));
    assert.equal(patched.metadata.annotations?.["userland.dev/last-activity"], at);
    await assert.rejects(
      proxy.patch(userlandPath(name), { spec: { enabled: true } }),
      (e: unknown) => e instanceof KubeError && e.code === 403 && /spec must not change/.test(e.message),
    );
  } finally {
    await proxy.close();
  }
});
