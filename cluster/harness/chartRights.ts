/**
 * cluster/chartRbac.ts's grantChartRights on a control plane the harness reached: as its admin,
 * with its helm, the client closed when done (and again after the clean-up of cluster-scoped
 * objects, which reuses it). The operator, proxy and user-manager of tests, benchmarks, chaos and
 * soak runs get their rights here.
 */
import { join } from "node:path";
import { KubeRest } from "../../lib/kubeRest.ts";
import { grantChartRights, type Component, type GrantOptions } from "../chartRbac.ts";
import type { ClusterAccess } from "./connect.ts";

/** Grants `component`'s ServiceAccount in `namespace` the chart's rights; returns the account's name. */
export function grantComponentRights(
  cluster: ClusterAccess,
  component: Component,
  namespace: string,
  grant: GrantOptions = {},
): Promise<string> {
  const rest = new KubeRest(cluster.kc, "userland-tests");
  const { after } = grant;
  return grantChartRights(rest, join(cluster.info.binDir, "helm"), component, namespace, {
    ...grant,
    ...(after ? { after: (cleanUp) => after(() => cleanUp().finally(() => rest.close())) } : {}),
  }).finally(() => rest.close());
}
