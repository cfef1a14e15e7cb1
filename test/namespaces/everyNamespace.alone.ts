/**
 * USERLAND_WATCH_NAMESPACES="*": the operator reconciles Userlands in every namespace, including one
 * created after it started. Alone (test/run.ts): an operator serving every namespace would also
 * reconcile the Userlands of the other test files' namespaces beside their own operators.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import { testNamespace } from "../support/cluster.ts";
import { startOperatorServing } from "../support/operator.ts";
import { createTemplate, createUserland, simpleTemplateSpec, waitForPhase } from "../support/resources.ts";

test('"*": every namespace, including one created after the operator started', async (t) => {
  const own = await testNamespace(t, "own");
  await startOperatorServing(t, own, "*");
  const later = await testNamespace(t, "later");
  await createTemplate(later, "code", simpleTemplateSpec());
  await createUserland(later, "ada", "ada", "code");
  // Ready: its Deployment and Service were made, in its own namespace.
  const ready = await waitForPhase(later, "ada", "Ready");
  assert.equal(ready.status?.service?.name, childNames("code", "ada").service);
});
