/**
 * Where the operator's memory goes and how long its caches take to fill: the operator's own
 * informers (operator/caches.ts), filled from a running cluster one after another (retained heap
 * and list time of each), then all at once as at a restart. Needs `node --expose-gc`.
 *
 *   node --expose-gc bench/cacheMemory.ts <kubeconfig>
 */
import { performance } from "node:perf_hooks";
import { k8s } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { parseWatchNamespaces, ServedNamespaces } from "../lib/namespaces.ts";
import { allInformers, createCaches } from "../operator/caches.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !process.argv[2]) {
  console.error("usage: node --expose-gc bench/cacheMemory.ts <kubeconfig>");
  process.exit(2);
}
const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
const rest = new KubeRest(kc, "cache-memory");
const log = createLogger("cache-memory", "silent");
const namespaces = new ServedNamespaces(parseWatchNamespaces("*"), "userland");
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

const one = createCaches({ rest, namespaces, log });
let base = heap();
const t0 = performance.now();
for (const [name, informer] of Object.entries(one)) {
  const start = performance.now();
  await informer.start();
  const ms = performance.now() - start;
  const now = heap();
  console.log(
    `${name.padEnd(16)} ${String(informer.list().length).padStart(6)} objects  ${mib(now - base).padStart(6)} MiB retained  ${ms.toFixed(0).padStart(6)} ms`,
  );
  base = now;
}
console.log(`one after another: ${(performance.now() - t0).toFixed(0)} ms`);
await Promise.all(allInformers(one).map((i) => i.stop()));
const all = createCaches({ rest, namespaces, log });
const t1 = performance.now();
await Promise.all(allInformers(all).map((i) => i.start()));
console.log(
  `all at once (a restart): ${(performance.now() - t1).toFixed(0)} ms; rss ${mib(process.memoryUsage().rss)} MiB`,
);
await Promise.all(allInformers(all).map((i) => i.stop()));
rest.close();
