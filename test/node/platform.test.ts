/**
 * The platform installed for real: its image built from the repository's Dockerfile (buildah),
 * imported into the real node, and the Helm chart installed with it the way deploy/README.md says
 * (session keys from scripts/session-keys.ts, a login provider's secret, helm install). Every
 * component then runs as real pods: Ready by their own probes, non-root, read-only root file
 * system, under the chart's NetworkPolicies; the proxy answers through its Service's DNS name.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { POD_CIDR, SERVICE_CIDR, NODE_IP } from "../../cluster/addresses.ts";
import { REAL_NODE_LABEL } from "../../cluster/node/config.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { repoRoot } from "../../cluster/controlPlane.ts";
import { k8s } from "../../lib/kube.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { execInContainer, onRealNode, realNode } from "../support/realNode.ts";
import { chartDir, helm, kubectl, ok, run } from "../chart/support.ts";

const COMPONENTS = ["operator", "auth", "proxy", "user-manager"];

test("the chart installs the platform's own image on the real node: every component Ready, non-root, read-only, behind its NetworkPolicies", async (t) => {
  const node = await realNode();
  const { info, kc } = await testCluster();
  const started = Date.now();
  const image = await buildPlatformImage();
  await importImage(`${info.binDir}/ctr`, node.containerdSocket, image);
  t.diagnostic(`platform image built (or cached) and imported in ${Date.now() - started} ms: ${image.ref}`);

  // deploy/README.md, section 1, in this cluster's terms.
  const ns = await testNamespace(t, "ide");
  const work = mkdtempSync(join(tmpdir(), "userland-install-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const keys = ok(
    await run(process.execPath, [join(repoRoot, "scripts", "session-keys.ts")]),
    "session-keys.ts",
  );
  writeFileSync(join(work, "keys.json"), keys);
  const publicKeys = ok(
    await run(process.execPath, [
      join(repoRoot, "scripts", "session-keys.ts"),
      "--public",
      join(work, "keys.json"),
    ]),
    "session-keys.ts --public",
  );
  writeFileSync(join(work, "public.json"), publicKeys);
  ok(
    await kubectl([
      "-n",
      ns,
      "create",
      "secret",
      "generic",
      "userland-session-keys",
      `--from-file=keys.json=${join(work, "keys.json")}`,
    ]),
    "create the session key Secret",
  );
  ok(
    await kubectl([
      "-n",
      ns,
      "create",
      "configmap",
      "userland-session-public-keys",
      `--from-file=keys.json=${join(work, "public.json")}`,
    ]),
    "create the public key ConfigMap",
  );
  // GitHub as the login provider: it needs no discovery at start-up, so the auth service is Ready
  // without a provider reachable from the node (OpenID Connect waits for its issuer's metadata).
  ok(
    await kubectl([
      "-n",
      ns,
      "create",
      "secret",
      "generic",
      "userland-github",
      "--from-literal=client-secret=not-used-here",
    ]),
    "create the login provider's Secret",
  );
  const [repository, tag] = [
    image.ref.slice(0, image.ref.lastIndexOf(":")),
    image.ref.slice(image.ref.lastIndexOf(":") + 1),
  ];
  const values = {
    baseDomain: "ide.test",
    image: { repository, tag, pullPolicy: "Never" },
    auth: { github: { clientId: "userland-test", clientSecret: { existingSecret: "userland-github" } } },
    networkPolicy: {
      podCIDRs: [POD_CIDR],
      serviceCIDRs: [SERVICE_CIDR],
      extraDeniedCIDRs: [`${NODE_IP}/32`],
    },
    nodeSelector: REAL_NODE_LABEL,
    tolerations: onRealNode.tolerations,
  };
  writeFileSync(join(work, "values.json"), JSON.stringify(values));
  const installStarted = Date.now();
  ok(
    await helm(["install", "userland", chartDir, "--namespace", ns, "--values", join(work, "values.json")], {
      kubeconfig: info.kubeconfig,
    }),
    "helm install",
  );

  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await eventually(
    "every component's Deployment to be available",
    async () => {
      const deployments = (await apps.listNamespacedDeployment({ namespace: ns })).items;
      const ready = deployments.filter((d) => (d.status?.readyReplicas ?? 0) >= (d.spec?.replicas ?? 1));
      return deployments.length === COMPONENTS.length && ready.length === COMPONENTS.length;
    },
    300_000,
    1000,
  ).catch(async (error: unknown) => {
    const pods = (await core.listNamespacedPod({ namespace: ns })).items;
    const states = pods.map(
      (p) => `${p.metadata?.name}: ${JSON.stringify(p.status?.containerStatuses?.[0]?.state)}`,
    );
    throw new Error(`${(error as Error).message}\n${states.join("\n")}`);
  });
  t.diagnostic(`helm install → every component Ready: ${Date.now() - installStarted} ms`);

  const pods = (await core.listNamespacedPod({ namespace: ns })).items;
  for (const component of COMPONENTS) {
    const mine = pods.filter((p) => p.metadata?.labels?.["app.kubernetes.io/component"] === component);
    assert.ok(mine.length > 0, `${component} has pods`);
    for (const pod of mine) {
      const name = pod.metadata?.name ?? "";
      assert.equal(pod.spec?.nodeName, node.name, `${name} runs on the real node`);
      const status = pod.status?.containerStatuses?.[0];
      assert.equal(status?.ready, true, `${name} is Ready by its probes`);
      assert.equal(status?.restartCount, 0, `${name} never restarted`);
      assert.equal(status?.imageID?.includes("sha256:"), true, `${name} runs a real image`);
      // What the process really is, asked inside its container.
      const id = await execInContainer(pod, ["node", "-e", "process.stdout.write(String(process.getuid()))"]);
      assert.equal(id.stdout, "10001", `${name} runs as uid 10001: ${id.stderr}`);
      const write = await execInContainer(pod, ["node", "-e", "require('fs').writeFileSync('/app/x', 'x')"]);
      assert.notEqual(write.code, 0, `${name} cannot write its root file system`);
    }
  }
  const policies = kc.makeApiClient(k8s.NetworkingV1Api);
  assert.equal(
    (await policies.listNamespacedNetworkPolicy({ namespace: ns })).items.length,
    2,
    "the NetworkPolicies are on",
  );

  // The proxy through its Service's DNS name, from another component's pod (the platform's pods may
  // talk to each other): its admin port answers /healthz.
  const operatorPod = pods.find((p) => p.metadata?.labels?.["app.kubernetes.io/component"] === "operator");
  assert.ok(operatorPod);
  const services = (await core.listNamespacedService({ namespace: ns })).items;
  const proxyAdmin = services.find((s) => s.spec?.ports?.some((p) => p.port === 9090));
  assert.ok(proxyAdmin, "the proxy's admin Service");
  const url = `http://${proxyAdmin.metadata?.name}.${ns}.svc.cluster.local:9090/healthz`;
  const health = await execInContainer(operatorPod, [
    "node",
    "-e",
    `fetch(${JSON.stringify(url)}).then(async (r) => process.stdout.write(r.status + " " + await r.text()))`,
  ]);
  assert.match(health.stdout, /^200 /, `${url}: ${health.stdout} ${health.stderr}`);
});
