/**
 * What a test needs from the shared control plane started by test/run.ts: an admin client,
 * a namespace of its own (deleted afterwards), identities with real ServiceAccount tokens, and
 * the audit log to count requests. A test run without a reachable control plane fails loudly.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { TestContext } from "node:test";
import { k8s } from "../../lib/kube.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ControlPlane, kubeconfigYaml, type ControlPlaneInfo } from "../../cluster/controlPlane.ts";
import type { RealNodeInfo } from "../../cluster/node/realNode.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";

export const CLUSTER_INFO_ENV = "USERLAND_TEST_CLUSTER";

export interface TestCluster {
  /** The control plane, and the real node when test/run.ts started one. */
  info: ControlPlaneInfo & { realNode?: RealNodeInfo };
  /** Cluster-admin client configuration. */
  kc: k8s.KubeConfig;
  /** A client configuration that authenticates with `token`. */
  kubeConfigForToken: (token: string, namespace?: string) => k8s.KubeConfig;
}

let cached: Promise<TestCluster> | undefined;

/** Connects to the control plane of this test run; rejects with a clear message when there is none. */
export function testCluster(): Promise<TestCluster> {
  cached ??= connect(process.env[CLUSTER_INFO_ENV]);
  return cached;
}

export async function connect(infoFile: string | undefined): Promise<TestCluster> {
  if (!infoFile) {
    throw new Error(
      `${CLUSTER_INFO_ENV} is not set: run the tests with \`npm test\`, which starts the control plane`,
    );
  }
  const info = JSON.parse(readFileSync(infoFile, "utf8")) as TestCluster["info"];
  const ca = readFileSync(info.caFile);
  const kubeConfigForToken = (token: string, namespace = "default"): k8s.KubeConfig => {
    const kc = new k8s.KubeConfig();
    kc.loadFromString(kubeconfigYaml(info.server, ca, "test", token, namespace));
    return kc;
  };
  const kc = kubeConfigForToken(info.adminToken);
  // Fail now, with the address, rather than in the middle of a test.
  const version = kc.makeApiClient(k8s.VersionApi);
  await version.getCode().catch((error: unknown) => {
    throw new Error(`the test control plane at ${info.server} is unreachable: ${(error as Error).message}`);
  });
  return { info, kc, kubeConfigForToken };
}

/** A fresh namespace for one test, deleted when the test ends. */
export async function testNamespace(t: TestContext, prefix = "t", cluster?: TestCluster): Promise<string> {
  const { kc } = cluster ?? (await testCluster());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(4).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name, labels: { "userland.dev/test": "true" } } } });
  t.after(async () => {
    await core.deleteNamespace({ name }).catch(() => undefined);
  });
  return name;
}

/** A real token for a ServiceAccount (created if missing), from the TokenRequest API. */
export async function serviceAccountToken(
  namespace: string,
  name: string,
  cluster?: TestCluster,
): Promise<string> {
  const { kc } = cluster ?? (await testCluster());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
    .catch((error: unknown) => {
      if (!isConflict(error)) throw error;
    });
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${name}`);
  return token;
}

/** Polls `check` until it returns a value other than undefined/false, or fails with `what`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError ? ` (last error: ${(lastError as Error).message})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * A control plane of the test's own, stopped when the test ends: for tests that restart
 * kube-apiserver, which would break every test running beside them on the shared one.
 */
export async function privateControlPlane(
  t: TestContext,
  prefix: string,
): Promise<{ controlPlane: ControlPlane; cluster: TestCluster }> {
  const controlPlane = new ControlPlane({
    dir: join(repoRoot, ".userland", `${prefix}-${randomBytes(3).toString("hex")}`),
    nodes: 1,
  });
  const info = await controlPlane.start();
  t.after(() => controlPlane.stop());
  const infoFile = join(info.dir, "cluster.json");
  writeFileSync(infoFile, JSON.stringify(info));
  return { controlPlane, cluster: await connect(infoFile) };
}
