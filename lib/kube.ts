/**
 * client-node, for what lib/kubeConnection.ts does not read itself: kubeconfigs with exec plugins,
 * auth providers, basic auth or proxies (loadKubeConnection() imports this module only then), and
 * the typed clients tests, benchmarks and the local platform use. No component imports it at start:
 * loading client-node's generated API costs a process tens of MiB (docs/decisions/0002-operator.md).
 * Status checks are in lib/kubeRest.ts, the namespace a process works in in lib/kubeConnection.ts.
 */
import * as k8s from "@kubernetes/client-node";

export { k8s };

export function loadKubeConfig(kubeconfigPath = process.env.KUBECONFIG): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromCluster();
  return kc;
}
