/**
 * USERLAND_WATCH_NAMESPACES in the proxy: a student whose Userland is in a second namespace is
 * routed, and of one Template name in two namespaces only the oldest serves (docs/decisions/0010).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { grantChartRights } from "../../../test/support/chartRights.ts";
import { installCrds } from "../../../test/support/operator.ts";
import { eventually, testNamespace } from "../../../test/support/cluster.ts";
import {
  createTemplate,
  createUserland,
  markReady,
  simpleTemplateSpec,
} from "../../../test/support/resources.ts";
import { send, startProxy, startUpstream, testKeys } from "./support.ts";

test("several namespaces: routed in the second namespace; a younger duplicate Template is not served", async (t) => {
  await installCrds();
  const own = await testNamespace(t, "proxy");
  const a = await testNamespace(t, "course");
  const b = await testNamespace(t, "course");
  await grantChartRights("proxy", own, { watchNamespaces: [a, b] });
  await createTemplate(a, "code", simpleTemplateSpec());
  await new Promise((r) => setTimeout(r, 1100)); // creationTimestamp has whole seconds
  await createTemplate(b, "code", simpleTemplateSpec());
  await createTemplate(b, "jupyter", simpleTemplateSpec());
  await createUserland(a, "ada-code", "ada", "code");
  await createUserland(b, "ada-jupyter", "ada", "jupyter");
  await createUserland(b, "grace-code", "grace", "code");
  for (const [ns, name] of [
    [a, "ada-code"],
    [b, "ada-jupyter"],
    [b, "grace-code"],
  ] as const)
    await markReady(ns, name, { name: `${name}-svc`, port: 80 });

  const keys = await testKeys(t);
  const proxy = await startProxy(t, own, keys, { USERLAND_WATCH_NAMESPACES: `${a},${b}` });
  for (const [ns, name] of [
    [a, "ada-code"],
    [b, "ada-jupyter"],
    [b, "grace-code"],
  ] as const)
    proxy.resolver.set(ns, `${name}-svc`, (await startUpstream(t, `${ns}/${name}`)).url);

  const get = async (host: string, user: string) =>
    send(proxy.port, { path: "/", headers: { host, cookie: await keys.cookie(user) } });
  const ada = await get("jupyter.example.test", "ada");
  assert.equal(ada.status, 200, ada.body);
  assert.equal(ada.json<{ upstream: string }>().upstream, `${b}/ada-jupyter`);
  const adaCode = await get("code.example.test", "ada");
  assert.equal(adaCode.json<{ upstream: string }>().upstream, `${a}/ada-code`);
  // grace's Userland uses the younger "code" (in b): the host serves a's, where she has none.
  const grace = await get("code.example.test", "grace");
  assert.doesNotMatch(grace.body, /"upstream"/);
  assert.deepEqual(
    proxy.app.cluster
      .templates?.()
      .map((x) => `${x.metadata.namespace}/${x.metadata.name}`)
      .sort(),
    [`${a}/code`, `${b}/jupyter`].sort(),
  );
});

test('"*": a Userland in a namespace created after the proxy started is routed', async (t) => {
  await installCrds();
  const own = await testNamespace(t, "proxy");
  await grantChartRights("proxy", own, { watchNamespaces: ["*"], scope: t });
  const keys = await testKeys(t);
  const proxy = await startProxy(t, own, keys, { USERLAND_WATCH_NAMESPACES: "*" });

  const later = await testNamespace(t, "course");
  // Every namespace of a shared test cluster is served: a Template name no other test uses.
  const template = `t${randomBytes(4).toString("hex")}`;
  await createTemplate(later, template, simpleTemplateSpec());
  await createUserland(later, "ada-code", "ada", template);
  await markReady(later, "ada-code", { name: "ada-code-svc", port: 80 });
  proxy.resolver.set(later, "ada-code-svc", (await startUpstream(t, "later")).url);
  const routed = await eventually("the proxy to route ada in the new namespace", async () => {
    const r = await send(proxy.port, {
      path: "/",
      headers: { host: `${template}.apps.example.test`, cookie: await keys.cookie("ada") },
    });
    // Until the caches have it, a page; then the upstream's JSON.
    return r.body.includes('"upstream"') ? r : undefined;
  });
  assert.equal(routed.json<{ upstream: string }>().upstream, "later");
});
