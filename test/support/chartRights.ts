/** The chart's rights for a component in a test: the shared cluster, clean-up when the test ends. */
import type { TestContext } from "node:test";
import type { Component } from "../../cluster/chartRbac.ts";
import { grantComponentRights } from "../../cluster/harness/chartRights.ts";
import { testCluster, type TestCluster } from "./cluster.ts";

/** Grants `component`'s ServiceAccount in `namespace` the chart's rights; returns the account's name. */
export async function grantChartRights(
  component: Component,
  namespace: string,
  options: { watchNamespaces?: readonly string[]; scope?: TestContext; cluster?: TestCluster } = {},
): Promise<string> {
  const { scope } = options;
  return grantComponentRights(options.cluster ?? (await testCluster()), component, namespace, {
    ...(options.watchNamespaces ? { watchNamespaces: options.watchNamespaces } : {}),
    ...(scope ? { after: (cleanUp) => scope.after(cleanUp) } : {}),
  });
}
