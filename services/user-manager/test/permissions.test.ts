/** The chart grants the user-manager exactly the rights permissions.ts lists: one list, two readers. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { renderChartRbac, serviceAccountOf, type ChartObject } from "../../../cluster/chartRbac.ts";
import { testCluster } from "../../../test/support/cluster.ts";
import { REQUIRED_PERMISSIONS } from "../permissions.ts";

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

type Binding = ChartObject & {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string }[];
};

/** "<scope> <verb> <resource>.<group>" for every right the chart binds to `serviceAccount`. */
function grantsOf(objects: readonly ChartObject[], serviceAccount: string): string[] {
  const grants: string[] = [];
  const bindings = objects.filter(
    (o): o is Binding =>
      (o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding") &&
      ((o as Binding).subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === serviceAccount),
  );
  for (const binding of bindings) {
    const role = objects.find(
      (o) => o.kind === binding.roleRef.kind && o.metadata.name === binding.roleRef.name,
    );
    assert.ok(role, `${binding.kind} ${binding.metadata.name} refers to a role the chart renders`);
    const scope = role.kind === "Role" ? "namespaced" : "cluster";
    for (const rule of (role.rules ?? []) as Rule[]) {
      assert.equal(rule.resourceNames, undefined, "the user-manager's rights are not limited by name");
      for (const group of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? [])
          for (const verb of rule.verbs ?? []) grants.push(`${scope} ${verb} ${resource}.${group}`);
    }
  }
  return grants.sort();
}

test("the chart's Role and ClusterRole for the user-manager grant exactly REQUIRED_PERMISSIONS", async () => {
  const { info } = await testCluster();
  const objects = await renderChartRbac({
    helm: join(info.binDir, "helm"),
    namespace: "classes",
    release: "userland",
    values: {},
  });
  const expected = REQUIRED_PERMISSIONS.map(
    (p) => `${p.scope === "cluster" ? "cluster" : "namespaced"} ${p.verb} ${p.resource}.${p.group}`,
  ).sort();
  assert.deepEqual(grantsOf(objects, serviceAccountOf(objects, "user-manager")), expected);
});
