/** cluster/chartRbac.ts's grantChartRights for a test: the shared cluster, clean-up when the test ends. */
import { join } from "node:path";
import type { TestContext } from "node:test";
import { grantChartRights as grant, type Component } from "../../cluster/chartRbac.ts";
import { testCluster, type TestCluster } from "./cluster.ts";
import { KubeRest } from "../../lib/kubeRest.ts";

/** Grants `component`'s ServiceAccount in `namespace` the chart's rights; returns the account's name. */
export async function grantChartRights(
  component: Component,
  namespace: string,
  options: { watchNamespaces?: readonly string[]; scope?: TestContext; cluster?: TestCluster } = {},
): Promise<string> {
  const cluster = options.cluster ?? (await testCluster());
  const { scope } = options;
  const rest = new KubeRest(cluster.kc, "userland-tests");
  return grant(rest, join(cluster.info.binDir, "helm"), component, namespace, {
    ...(options.watchNamespaces ? { watchNamespaces: options.watchNamespaces } : {}),
    ...(scope ? { after: (cleanUp) => scope.after(() => cleanUp().finally(() => rest.close())) } : {}),
  }).finally(() => rest.close());
}
