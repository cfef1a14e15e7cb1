/**
 * Pod start-up as the benchmarks measure it: `n` pods of one spec created at once in a namespace of
 * their own, each one's create → Ready (by its own readiness probe) time; then (after `afterReady`)
 * the namespace is deleted and its pods waited out, so that the next measurement has the node to itself.
 */
import type { CoreV1Api, V1PodSpec } from "@kubernetes/client-node";

export async function timePodsReady(
  core: CoreV1Api,
  namespace: string,
  n: number,
  spec: V1PodSpec,
  /** Runs once every pod is Ready, before the clean-up (e.g. to read usage counters). */
  afterReady: () => void | Promise<void> = () => undefined,
): Promise<number[]> {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const created = new Map<string, number>();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `p${i}`;
      created.set(name, performance.now());
      await core.createNamespacedPod({ namespace, body: { metadata: { name }, spec } });
    }),
  );
  const ready = new Map<string, number>();
  const deadline = performance.now() + 10 * 60_000;
  while (ready.size < n) {
    if (performance.now() > deadline) throw new Error(`${n - ready.size} pods not Ready after 10 minutes`);
    for (const p of (await core.listNamespacedPod({ namespace })).items) {
      const name = p.metadata?.name ?? "";
      if (!ready.has(name) && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
        ready.set(name, performance.now());
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await afterReady();
  await core.deleteNamespace({ name: namespace });
  while ((await core.listNamespacedPod({ namespace })).items.length > 0)
    await new Promise((r) => setTimeout(r, 500));
  return [...ready].map(([name, at]) => at - (created.get(name) ?? at)).sort((a, b) => a - b);
}
