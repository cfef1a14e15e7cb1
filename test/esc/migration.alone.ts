/**
 * docs/migrating-from-esc.md, replayed: ESC's CRDs and objects as ESC's controller left them (its
 * Userlands own every Deployment, Service and claim), then the guide's commands as written (only
 * the namespaces substituted) with the real operator running. Every claim must be the same object
 * on the same volume afterwards, and every user must be routed to their environment.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { childNames, LABELS } from "../../api/naming.ts";
import { type Userland, userlandsPath } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { UserlandIndex } from "../../services/proxy/route/userlandIndex.ts";
import { UserlandStore } from "../../services/user-manager/store.ts";
import { run } from "../chart/support.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { guideCommands } from "../support/guide.ts";
import { installCrds, startOperator } from "../support/operator.ts";
import { adminRest, deploymentsPath, getPvc, pvcsPath, servicesPath } from "../support/resources.ts";
import {
  createEsc,
  escChildren,
  escPath,
  escTemplate,
  escUserland,
  installEscCrds,
  installUserFromNamePolicy,
} from "./support.ts";

const GUIDE = join(repoRoot, "docs", "migrating-from-esc.md");
const USERS = ["koba1t", "ada", "grace"];
const TEMPLATE = "vscode";
const VOLUME = "user-volume";

test("docs/migrating-from-esc.md keeps every user's volume and routes every user", async (t) => {
  const ns = await testNamespace(t, "esc");
  const rest = await adminRest();
  await installCrds();
  await installEscCrds(t);
  await installUserFromNamePolicy(t, ns);

  // ESC as it ran: its controller, a Template, and per user a Userland with what ESC made for it.
  const labels = { "control-plane": "controller-manager" };
  await rest.create(deploymentsPath(ns), {
    metadata: { name: "esc-controller-manager" },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: "manager", image: "koba1t/esc:v1" }] } },
    },
  });
  await createEsc(ns, escTemplate(TEMPLATE));
  const claims = new Map<string, { uid: string; volume: string }>();
  for (const user of USERS) {
    const esc = await createEsc<{ metadata: { name: string; uid: string } }>(ns, escUserland(user, TEMPLATE));
    await escChildren(ns, esc, TEMPLATE, [VOLUME]);
    claims.set(user, { uid: "", volume: await bindVolume(t, ns, childNames(TEMPLATE, user).pvc(VOLUME)) });
  }
  // ESC's proxy and Ingress, which step 6 removes.
  await rest.create(servicesPath(ns), {
    metadata: { name: "esc-proxy" },
    spec: { selector: { app: "esc-proxy" }, ports: [{ port: 80, targetPort: 8080 }] },
  });
  await rest.create(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, {
    metadata: { name: "external-auth-oauth2" },
    spec: {
      rules: [
        {
          host: "ide.uni.example",
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "esc-proxy", port: { number: 80 } } },
              },
            ],
          },
        },
      ],
    },
  });
  for (const user of USERS) {
    const pvc = await eventually(`${user}'s ESC claim to be bound`, async () => {
      const c = await getPvc(ns, childNames(TEMPLATE, user).pvc(VOLUME));
      return c?.status?.phase === "Bound" ? c : undefined;
    });
    const claim = claims.get(user);
    if (claim) claim.uid = pvc.metadata?.uid ?? "";
  }

  await startOperator(t, ns);
  // Step 1 is the chart's install (deploy/README.md, replayed by test/node/platform.test.ts); here
  // the operator runs from source and the policy was installed above. Its check command holds:
  await replay(ns, "## 1. Install Userland");
  for (const step of [
    "## 2. Stop ESC's controller",
    "## 3. Copy the Templates and Userlands",
    "## 4. Wait until every environment runs under Userland",
    "## 5. Delete ESC's objects, keeping the volumes",
    "## 6. Switch the proxy",
  ]) {
    await replay(ns, step);
  }

  // ESC is gone from the namespace; its controller is stopped.
  assert.deepEqual((await rest.list(escPath("userlands", ns))).items, []);
  assert.deepEqual((await rest.list(escPath("templates", ns))).items, []);
  const controller = await rest.get<{ spec: { replicas: number } }>(
    deploymentsPath(ns, "esc-controller-manager"),
  );
  assert.equal(controller.spec.replicas, 0);

  // Every volume kept: the same claim (UID), bound to the same volume, now the user's.
  const userlands = (await rest.list<Userland>(userlandsPath(ns))).items;
  assert.deepEqual(userlands.map((u) => u.metadata.name).sort(), [...USERS].sort());
  for (const user of USERS) {
    const pvc = await getPvc(ns, childNames(TEMPLATE, user).pvc(VOLUME));
    assert.equal(pvc?.metadata?.uid, claims.get(user)?.uid, `${user}'s claim is the one ESC made`);
    assert.equal(pvc?.spec?.volumeName, claims.get(user)?.volume, `${user}'s claim is on the same volume`);
    assert.equal(pvc?.status?.phase, "Bound");
    assert.ok(pvc?.metadata?.labels?.[LABELS.userHash], `${user}'s claim is labelled as theirs`);
    assert.deepEqual(pvc?.metadata?.ownerReferences ?? [], [], `${user}'s claim outlives any Userland`);
  }

  // Every user routed: the proxy's index (fed from the same objects as its informer) and the
  // user-manager's lookup find each user's Userland by the identity the sign-in reports, the name,
  // and the environment it names is the one running on the user's claim.
  const index = new UserlandIndex();
  for (const u of userlands) index.upsert(u);
  const store = new UserlandStore(rest, ns);
  for (const user of USERS) {
    const routed = index.find(user, TEMPLATE);
    assert.equal(routed?.metadata.name, user, `${user} is routed to their Userland`);
    assert.equal(routed?.spec.user, user);
    assert.equal(routed?.status?.phase, "Ready");
    assert.deepEqual(routed?.status?.service, { name: `${TEMPLATE}-${user}-svc`, port: 80 });
    assert.deepEqual(
      (await store.findByUser(user)).map((u) => u.metadata.name),
      [user],
    );
    const deployment = await rest.get<{ spec: { template: { spec: { volumes: unknown[] } } } }>(
      deploymentsPath(ns, `${TEMPLATE}-${user}`),
    );
    assert.deepEqual(deployment.spec.template.spec.volumes, [
      { name: VOLUME, persistentVolumeClaim: { claimName: childNames(TEMPLATE, user).pvc(VOLUME) } },
    ]);
  }
  assert.equal((await rest.list(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`)).items.length, 0);
});

/** Runs the commands of one section of the guide as a reader would, in this test's namespaces. */
async function replay(ns: string, heading: string): Promise<void> {
  const { info } = await testCluster();
  const env = {
    PATH: `${info.binDir}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: process.env.HOME ?? "/tmp",
    KUBECONFIG: info.kubeconfig,
  };
  for (const block of guideCommands(GUIDE, heading).flatMap((s) => s.blocks)) {
    for (const original of block) {
      const command = original.replaceAll("code-editor", ns).replaceAll("esc-system", ns);
      const result = await run("bash", ["-euo", "pipefail", "-c", command], { env, timeoutMs: 600_000 });
      if (result.code !== 0) {
        throw new Error(
          `${heading}: \`${command}\` failed (exit ${result.code}):\n${result.stderr}\n${result.stdout}`,
        );
      }
    }
  }
}

/**
 * A volume for a claim, bound to it in advance (this control plane has no provisioner): so the
 * test can show the claim ends on the same volume, and pods that mount it can start.
 */
async function bindVolume(t: TestContext, ns: string, claim: string): Promise<string> {
  const rest = await adminRest();
  const pvc = await rest.get<V1PersistentVolumeClaim>(pvcsPath(ns, claim));
  const name = `${ns}-${claim}`.slice(0, 253);
  await rest.create("/api/v1/persistentvolumes", {
    metadata: { name },
    spec: {
      capacity: { storage: "2Gi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: pvc.spec?.storageClassName ?? "",
      hostPath: { path: `/tmp/userland-esc-test/${name}` },
      claimRef: { namespace: ns, name: claim, uid: pvc.metadata?.uid },
    },
  });
  t.after(async () => {
    await rest.delete(`/api/v1/persistentvolumes/${name}`).catch(() => undefined);
  });
  return name;
}
