/**
 * A client-node connection, as the admin, to a control plane described by its info file (the
 * `cluster.json` that test/run.ts and privateControlPlane.ts write), and real ServiceAccount tokens on it.
 */
import { readFileSync } from "node:fs";
import { k8s } from "../../lib/kube.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import { kubeconfigYaml, type ControlPlaneInfo } from "../controlPlane.ts";
import type { RealNodeInfo } from "../node/realNode.ts";

/** The variable through which test/run.ts hands its control plane's info file to the test files. */
export const CLUSTER_INFO_ENV = "USERLAND_TEST_CLUSTER";

export interface ClusterAccess {
  /** The control plane, and the real node when one was started beside it. */
  info: ControlPlaneInfo & { realNode?: RealNodeInfo };
  /** Cluster-admin client configuration. */
  kc: k8s.KubeConfig;
  /** A client configuration that authenticates with `token`. */
  kubeConfigForToken: (token: string, namespace?: string) => k8s.KubeConfig;
}

/** Connects as the admin; rejects with a clear message when there is no file or the API server does not answer. */
export async function connect(infoFile: string | undefined): Promise<ClusterAccess> {
  if (!infoFile) {
    throw new Error(
      `${CLUSTER_INFO_ENV} is not set: run the tests with \`npm test\`, which starts the control plane`,
    );
  }
  const info = JSON.parse(readFileSync(infoFile, "utf8")) as ClusterAccess["info"];
  const ca = readFileSync(info.caFile);
  const kubeConfigForToken = (token: string, namespace = "default"): k8s.KubeConfig => {
    const kc = new k8s.KubeConfig();
    kc.loadFromString(kubeconfigYaml(info.server, ca, "test", token, namespace));
    return kc;
  };
  const kc = kubeConfigForToken(info.adminToken);
  // Fail now, with the address, rather than in the middle of a run.
  const version = kc.makeApiClient(k8s.VersionApi);
  await version.getCode().catch((error: unknown) => {
    throw new Error(`the test control plane at ${info.server} is unreachable: ${(error as Error).message}`);
  });
  return { info, kc, kubeConfigForToken };
}

/** A real token for a ServiceAccount (created if missing), from the TokenRequest API. */
export async function requestServiceAccountToken(
  cluster: ClusterAccess,
  namespace: string,
  name: string,
): Promise<string> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
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
