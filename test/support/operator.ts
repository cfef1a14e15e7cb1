/**
 * The operator for one test (cluster/harness/operator.ts runs it), on the run's control plane unless
 * told otherwise, stopped when the test ends; the CRDs it needs.
 */
import type { TestContext } from "node:test";
import {
  installCrdsOnce,
  operatorKubeconfig,
  spawnOperator,
  waitForLeadership,
  type OperatorProcess,
} from "../../cluster/harness/operator.ts";
import { testCluster, type TestCluster } from "./cluster.ts";

export interface OperatorOptions {
  cluster?: TestCluster;
  env?: Record<string, string>;
  identity?: string;
  /** Wait until this replica leads with synced caches (default true). */
  waitForLeader?: boolean;
  /** Chart values its rights are rendered with (cluster/chartRbac.ts), as an admin who set them. */
  chartValues?: Record<string, unknown>;
}

/** Creates or updates the generated CRDs (on the run's control plane unless given another) and waits until they are served. */
export async function installCrds(cluster?: TestCluster): Promise<void> {
  await installCrdsOnce(cluster ?? (await testCluster()));
}

/** The operator for one test: its own ServiceAccount and namespace, stopped when the test ends. */
export async function startOperator(
  t: TestContext,
  namespace: string,
  opts: OperatorOptions = {},
): Promise<OperatorProcess> {
  await installCrds(opts.cluster);
  const { path, username } = await operatorKubeconfig(
    namespace,
    opts.cluster ?? (await testCluster()),
    opts.chartValues ? { values: opts.chartValues } : {},
  );
  const handle = await spawnOperator(path, username, namespace, opts);
  t.after(async () => {
    await handle.stop("SIGKILL");
    if (process.env.SHOW_OPERATOR_LOGS) console.log(handle.logs());
  });
  if (opts.waitForLeader !== false) await waitForLeadership(handle);
  return handle;
}

/**
 * The operator serving `served` (USERLAND_WATCH_NAMESPACES), its ServiceAccount in `own` bound in
 * each of them too, or for "*" cluster-wide, with `env` besides; stopped when the test ends.
 */
export async function startOperatorServing(
  t: TestContext,
  own: string,
  served: string[] | "*",
  env: Record<string, string> = {},
): Promise<OperatorProcess> {
  await installCrds();
  const cluster = await testCluster();
  const { path, username } = await operatorKubeconfig(own, cluster, {
    watchNamespaces: served === "*" ? ["*"] : served,
    after: (cleanUp) => t.after(cleanUp),
  });
  const operator = await spawnOperator(path, username, own, {
    env: { ...env, USERLAND_WATCH_NAMESPACES: served === "*" ? "*" : served.join(",") },
  });
  t.after(async () => {
    await operator.stop("SIGKILL");
    if (process.env.SHOW_OPERATOR_LOGS) console.log(operator.logs());
  });
  await waitForLeadership(operator);
  return operator;
}
