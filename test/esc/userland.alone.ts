/**
 * Issue 12, item 1: an ESC Userland (no spec.user: its name is the user) is accepted with only its
 * apiVersion changed, through the chart's MutatingAdmissionPolicy, and the operator, the proxy's
 * index and the user-manager's lookup all see the same identity: the name.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { UserlandIndex } from "../../services/proxy/route/userlandIndex.ts";
import { UserlandStore } from "../../services/user-manager/store.ts";
import { kubectl, ok } from "../chart/support.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { installCrds, startOperator } from "../support/operator.ts";
import { adminRest, getDeployment, getPvc, getService, getUserland } from "../support/resources.ts";
import { asUserland, escTemplate, escUserland, installUserFromNamePolicy } from "./support.ts";

const apply = async (ns: string, object: unknown, ...flags: string[]) =>
  ok(await kubectl(["apply", ...flags, "-n", ns, "-f", "-"], JSON.stringify(object)), "kubectl apply");

test("an ESC Userland with only its apiVersion changed is accepted: its name becomes spec.user, once", async (t) => {
  const ns = await testNamespace(t, "esc");
  await installCrds();
  await installUserFromNamePolicy(t, ns);
  await startOperator(t, ns);

  await apply(ns, asUserland(escTemplate("vscode")));
  await apply(ns, asUserland(escUserland("koba1t", "vscode")));
  const stored = await getUserland(ns, "koba1t");
  assert.equal(stored.spec.user, "koba1t", "the name is the user");
  assert.equal(stored.spec.enabled, true);

  // The operator reconciles it into ESC's names, for the identity "koba1t".
  const names = childNames("vscode", "koba1t");
  const deployment = await eventually("the ESC-named Deployment", () => getDeployment(ns, names.deployment));
  assert.equal(deployment.metadata?.name, "vscode-koba1t");
  assert.deepEqual(
    deployment.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === "USERLAND_USER"),
    { name: "USERLAND_USER", value: "koba1t" },
  );
  // Created beside the Deployment, not after it (operator/syncUserland.ts): it may land a moment later.
  await eventually("the ESC-named Service", () => getService(ns, "vscode-koba1t-svc"));
  assert.ok(await getPvc(ns, "vscode-koba1t-pvc-user-volume"));

  // The proxy's index and the user-manager's lookup find it by the same identity.
  const index = new UserlandIndex();
  index.upsert(stored);
  assert.equal(index.find("koba1t", "vscode")?.metadata.name, "koba1t");
  const store = new UserlandStore(await adminRest(), ns);
  assert.deepEqual(
    (await store.findByUser("koba1t")).map((u) => u.metadata.name),
    ["koba1t"],
  );

  // Re-applying ESC's file or replacing with it keeps the identity: set once, never removed.
  await apply(ns, asUserland(escUserland("koba1t", "vscode", false)));
  ok(
    await kubectl(
      ["replace", "-n", ns, "-f", "-"],
      JSON.stringify(asUserland(escUserland("koba1t", "vscode", true))),
    ),
    "kubectl replace",
  );
  const after: Userland = await getUserland(ns, "koba1t");
  assert.equal(after.spec.user, "koba1t");
  assert.equal(after.spec.enabled, true);
  assert.equal(after.metadata.uid, stored.metadata.uid);
  // Server-side apply: the applier owns the field the policy set, so applying the file again
  // drops it from the request; the policy puts the stored value back.
  const ssa = ["--server-side", "--field-manager=admin"];
  await apply(ns, asUserland(escUserland("grace", "vscode", true)), ...ssa);
  await apply(ns, asUserland(escUserland("grace", "vscode", false)), ...ssa);
  const grace = await getUserland(ns, "grace");
  assert.equal(grace.spec.user, "grace");
  assert.equal(grace.spec.enabled, false);

  // It is immutable like any spec.user; a Userland that names its user keeps that user.
  const change = await kubectl([
    "patch",
    "userlands.userland.dev",
    "koba1t",
    "-n",
    ns,
    "--type=merge",
    "-p",
    '{"spec":{"user":"mallory"}}',
  ]);
  assert.notEqual(change.code, 0);
  assert.match(change.stderr, /spec.user is immutable/);
  await apply(ns, {
    ...asUserland(escUserland("named", "vscode")),
    spec: { user: "Ada@uni.example", templateName: "vscode" },
  });
  assert.equal((await getUserland(ns, "named")).spec.user, "Ada@uni.example");
});
