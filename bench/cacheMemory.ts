/**
 * Where the operator's memory goes and how long its caches take to fill: the operator's own
 * informers (operator/caches.ts), filled from a running cluster all at once as at a restart (time,
 * peak RSS), then one after another (the heap each keeps, its list time). Needs `node --expose-gc`.
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
// An informer retries a cluster that went away for ever: give up instead.
setTimeout(() => {
  console.error("cache-memory: no answer within 5 minutes");
  process.exit(1);
}, 300_000).unref();
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

// First all at once, as at a restart: the time until every cache is filled, and the peak RSS.
const all = createCaches({ rest, namespaces, log });
const t1 = performance.now();
await Promise.all(allInformers(all).map((i) => i.start()));
const fill = performance.now() - t1;
const objects = allInformers(all).reduce((n, i) => n + i.list().length, 0);
console.log(
  `all at once (a restart): ${objects} objects in ${fill.toFixed(0)} ms; peak RSS ${mib(process.resourceUsage().maxRSS * 1024)} MiB, heap after ${mib(heap())} MiB`,
);
await Promise.all(allInformers(all).map((i) => i.stop()));

// Then one after another: what each cache keeps.
const one = createCaches({ rest, namespaces, log });
let base = heap();
const t0 = performance.now();
const names = Object.keys(one);
for (const [i, informer] of allInformers(one).entries()) {
  const name = names[i] ?? "";
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
await rest.close();
