/**
 * The informer wrapper against the real API server: its cache follows list and watch, its indexes
 * follow every change, update handlers see the object replaced, and a failed list or a broken
 * watch is retried until the cache has caught up. ConfigMaps stand in for any kind.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { kubeconfigYaml } from "../../cluster/controlPlane.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { Informer, namespacedKey, withoutManagedFields } from "../informer.ts";
import { paths } from "../../api/kubePaths.ts";
import { k8s } from "../kube.ts";
import { KubeRest } from "../kubeRest.ts";
import { createLogger } from "../logger.ts";

const LABEL = "userland.dev/informer-test";
const BY_GROUP = "byGroup";
const log = createLogger("informer-test", process.env.INFORMER_TEST_LOG ?? "silent");

const configMapsPath = (ns: string, name?: string) => paths.namespaced("", "v1", "configmaps", ns, name);

/** A client as the cluster's admin; closed by the caller (an informer's stopAfter, or t.after). */
async function adminRest(): Promise<KubeRest> {
  return new KubeRest((await testCluster()).kc, "userland-tests");
}

/**
 * Stops the informer when the test ends, then closes its client. In this order: node:test runs
 * t.after hooks in the order they were added, and a client closed first waits for the informer's
 * open watch to end (its 30 s idle timeout) before the informer is stopped.
 */
function stopAfter(t: TestContext, informer: Informer<V1ConfigMap>, rest: KubeRest): void {
  t.after(async () => {
    await informer.stop();
    await rest.close();
  });
}

function configMap(name: string, group: string, labelled = true): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, labels: labelled ? { [LABEL]: "yes" } : {} },
    data: { group },
  };
}

/**
 * A ConfigMap informer in `ns`, indexed by data.group, stopped (and `rest` closed) when the test
 * ends. Its back-off starts at 50 ms instead of 1 s: the retry test then waits for no real seconds.
 */
function configMapInformer(t: TestContext, rest: KubeRest, ns: string) {
  const informer = new Informer<V1ConfigMap>(rest, {
    path: configMapsPath(ns),
    labelSelector: `${LABEL}=yes`,
    log,
    freeze: true,
    retryBaseMs: 50,
  });
  informer.addIndex(BY_GROUP, (cm) => (cm.data?.group ? [namespacedKey(ns, cm.data.group)] : []));
  stopAfter(t, informer, rest);
  return informer;
}

const names = (objects: readonly V1ConfigMap[]) => objects.map((o) => o.metadata?.name).sort();
const inGroup = (informer: Informer<V1ConfigMap>, ns: string, group: string) =>
  names(informer.byIndex(BY_GROUP, namespacedKey(ns, group)));

test("the cache lists, follows the watch and keeps its index current; update handlers get the replaced object", async (t) => {
  const ns = await testNamespace(t, "informer");
  const rest = await adminRest();
  await rest.create(configMapsPath(ns), configMap("a", "x"));
  await rest.create(configMapsPath(ns), configMap("b", "y"));
  await rest.create(configMapsPath(ns), configMap("unlabelled", "x", false));

  const informer = configMapInformer(t, rest, ns);
  const seen: string[] = [];
  informer.on("add", (cm) => seen.push(`add ${cm.metadata?.name}`));
  informer.on("update", (cm, old) =>
    seen.push(`update ${cm.metadata?.name} ${old?.data?.group}→${cm.data?.group}`),
  );
  informer.on("delete", (cm) => seen.push(`delete ${cm.metadata?.name}`));
  assert.equal(informer.hasSynced, false);
  await informer.start();

  assert.equal(informer.hasSynced, true);
  assert.deepEqual(names(informer.list()), ["a", "b"], "the label selector leaves the unlabelled one out");
  assert.equal(informer.get("a", ns)?.data?.group, "x");
  assert.deepEqual(inGroup(informer, ns, "x"), ["a"]);
  assert.deepEqual(seen.sort(), ["add a", "add b"]);
  assert.throws(() => ((informer.get("a", ns) as { data: Record<string, string> }).data.group = "z"));

  seen.length = 0;
  await rest.create(configMapsPath(ns), configMap("d", "x"));
  await rest.patch(configMapsPath(ns, "a"), { data: { group: "y" } });
  await rest.delete(configMapsPath(ns, "b"));
  await eventually("the watch to deliver three changes", () => seen.length >= 3);
  assert.deepEqual(seen, ["add d", "update a x→y", "delete b"]);
  assert.deepEqual(inGroup(informer, ns, "x"), ["d"]);
  assert.deepEqual(inGroup(informer, ns, "y"), ["a"]);
  assert.deepEqual(inGroup(informer, ns, "none"), []);

  // An index added to a filled cache files what is there already.
  informer.addIndex("byName", (cm) => [cm.metadata?.name ?? ""]);
  assert.deepEqual(names(informer.byIndex("byName", "d")), ["d"]);
  assert.throws(() => informer.addIndex("byName", () => []), /exists already/);
  assert.throws(() => informer.byIndex("missing", "d"), /no index missing/);
});

/**
 * A TCP relay to the API server that can be cut: cutting closes every connection through it and
 * refuses new ones until it is restored.
 */
async function cuttableRelay(
  t: TestContext,
  server: string,
): Promise<{ url: string; cut(): void; restore(): void }> {
  const target = new URL(server);
  const sockets = new Set<Socket>();
  let open = true;
  const relay = createServer((client) => {
    if (!open) return client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on("error", () => to.destroy());
      from.on("close", () => (sockets.delete(from), to.destroy()));
      from.pipe(to);
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  // close() waits for open connections, such as the informer's watch: end them too.
  t.after(
    () =>
      new Promise<void>((resolve) => {
        relay.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  );
  const address = relay.address() as { port: number };
  return {
    url: `https://127.0.0.1:${address.port}`,
    cut: () => {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    restore: () => (open = true),
  };
}

test("a failed first list and a broken watch are retried until the cache has caught up", async (t) => {
  const cluster = await testCluster();
  const ns = await testNamespace(t, "informer");
  const admin = await adminRest();
  t.after(() => admin.close());
  await admin.create(configMapsPath(ns), configMap("a", "x"));

  const relay = await cuttableRelay(t, cluster.info.server);
  const kc = new k8s.KubeConfig();
  kc.loadFromString(
    kubeconfigYaml(relay.url, readFileSync(cluster.info.caFile), "test", cluster.info.adminToken, ns),
  );
  const rest = new KubeRest(kc, "userland-tests");
  const informer = configMapInformer(t, rest, ns);
  const deleted: string[] = [];
  informer.on("delete", (cm) => deleted.push(cm.metadata?.name ?? ""));

  // The first list fails: start() waits for a later one instead of rejecting.
  relay.cut();
  const started = informer.start();
  await eventually("a retry after the failed list", () => informer.restarts >= 1);
  assert.equal(informer.hasSynced, false);
  relay.restore();
  await started;
  assert.deepEqual(names(informer.list()), ["a"]);

  // The watch breaks; what changes meanwhile reaches the cache once the API server is reachable.
  const restartsBefore = informer.restarts;
  relay.cut();
  await admin.create(configMapsPath(ns), configMap("b", "x"));
  await admin.patch(configMapsPath(ns, "a"), { data: { group: "y" } });
  await eventually("a retry after the broken watch", () => informer.restarts > restartsBefore);
  await admin.delete(configMapsPath(ns, "b"));
  await admin.create(configMapsPath(ns), configMap("c", "x"));
  relay.restore();
  await eventually(
    "the cache to catch up",
    () => names(informer.list()).join() === "a,c" && informer.get("a", ns)?.data?.group === "y",
    60_000,
  );
  assert.deepEqual(inGroup(informer, ns, "x"), ["c"]);
  assert.deepEqual(inGroup(informer, ns, "y"), ["a"]);
  assert.ok(!deleted.includes("a"));
});

test("a transform shapes every listed and watched object before it is cached or handed out", async (t) => {
  const ns = await testNamespace(t, "informer");
  const rest = await adminRest();
  await rest.create(configMapsPath(ns), configMap("listed", "x"));
  const informer = new Informer<V1ConfigMap>(rest, {
    path: configMapsPath(ns),
    labelSelector: `${LABEL}=yes`,
    log,
    freeze: true,
    transform: (cm) => {
      withoutManagedFields(cm);
      if (cm.data) cm.data.seen = "transformed";
      return cm;
    },
  });
  stopAfter(t, informer, rest);
  const handed: V1ConfigMap[] = [];
  informer.on("add", (cm) => handed.push(cm));
  informer.on("update", (cm) => handed.push(cm));
  await informer.start();
  await rest.create(configMapsPath(ns), configMap("watched", "x"));
  await rest.patch(configMapsPath(ns, "listed"), { data: { group: "y" } });
  await eventually("the watch to deliver two changes", () => handed.length >= 3);
  for (const cm of [...informer.list(), ...handed]) {
    assert.equal(cm.metadata?.managedFields, undefined, `${cm.metadata?.name} has no managedFields`);
    assert.equal(cm.data?.seen, "transformed");
  }
  assert.equal(informer.get("listed", ns)?.data?.group, "y");
});

test("the first list comes page by page, and a page's objects are cached as the rest would be", async (t) => {
  const ns = await testNamespace(t, "informer");
  const rest = await adminRest();
  for (let i = 0; i < 5; i++) await rest.create(configMapsPath(ns), configMap(`cm-${i}`, "x"));
  await rest.create(configMapsPath(ns), configMap("other", "x", false));
  // Each list request the informer makes, as it makes it.
  const asked: Record<string, unknown>[] = [];
  const list = rest.list.bind(rest);
  rest.list = (path, opts) => {
    asked.push({ ...opts?.query });
    return list(path, opts);
  };
  const informer = new Informer<V1ConfigMap>(rest, {
    path: configMapsPath(ns),
    labelSelector: `${LABEL}=yes`,
    log,
    freeze: true,
    listPageSize: 2,
    transform: withoutManagedFields,
  });
  stopAfter(t, informer, rest);
  await informer.start();
  assert.deepEqual(names(informer.list()), ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);
  assert.equal(asked.length, 3, "5 objects, 2 a page");
  assert.ok(asked.every((q) => q.limit === 2 && q.labelSelector === `${LABEL}=yes`));
  assert.ok(asked.slice(1).every((q) => typeof q.continue === "string" && q.continue !== ""));
  assert.equal(informer.get("cm-0", ns)?.metadata?.managedFields, undefined);
  // The watch starts where the pages' snapshot ends: nothing missed, nothing twice.
  await rest.create(configMapsPath(ns), configMap("cm-5", "x"));
  await eventually("the watch to bring cm-5", () => informer.get("cm-5", ns) !== undefined);
  assert.equal(informer.list().length, 6);
});

test("several collections (one per namespace) fill one cache: lists, gets, indexes and events span them, and no other namespace leaks in", async (t) => {
  const [a, b, other] = [
    await testNamespace(t, "informer"),
    await testNamespace(t, "informer"),
    await testNamespace(t, "informer"),
  ];
  const rest = await adminRest();
  await rest.create(configMapsPath(a), configMap("same", "x"));
  await rest.create(configMapsPath(b), configMap("same", "x"));
  await rest.create(configMapsPath(other), configMap("same", "x"));
  const informer = new Informer<V1ConfigMap>(rest, {
    path: [configMapsPath(a), configMapsPath(b)],
    labelSelector: `${LABEL}=yes`,
    log,
    freeze: true,
  });
  informer.addIndex(BY_GROUP, (cm) => (cm.data?.group ? [cm.data.group] : []));
  const added: string[] = [];
  informer.on("add", (cm) => added.push(namespacedKey(cm.metadata?.namespace, cm.metadata?.name)));
  stopAfter(t, informer, rest);
  await informer.start();
  assert.equal(informer.hasSynced, true, "synced once every collection has been listed");

  const where = (objects: readonly V1ConfigMap[]) => objects.map((o) => o.metadata?.namespace).sort();
  assert.deepEqual(where(informer.list()), [a, b].sort());
  assert.deepEqual(where(informer.list(b)), [b]);
  assert.equal(informer.get("same", b)?.metadata?.namespace, b);
  assert.equal(informer.get("same", other), undefined);
  assert.deepEqual(where(informer.byIndex(BY_GROUP, "x")), [a, b].sort());

  // The watch of each collection: a change in b arrives, one in the other namespace does not.
  await rest.create(configMapsPath(b), configMap("later", "y"));
  await rest.create(configMapsPath(other), configMap("later", "y"));
  await eventually("b's new ConfigMap", () => informer.get("later", b) !== undefined);
  assert.equal(informer.get("later", other), undefined);
  assert.deepEqual(added.sort(), [`${a}/same`, `${b}/later`, `${b}/same`].sort());
});
