/**
 * Pod start-up as the benchmarks measure it: `n` pods of one spec created at once in a namespace of
 * their own, each one's create → Ready (by its own readiness probe) time; then (after `afterReady`)
 * the namespace is deleted and its pods waited out, so that the next measurement has the node to itself.
 */
import type { CoreV1Api, V1Deployment, V1PodSpec } from "@kubernetes/client-node";
import { API_VERSION, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { paths, type KubeRest } from "../lib/kubeRest.ts";
import { desiredChildren } from "../operator/desired.ts";

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

/**
 * The same through Deployments: `n` Deployments and Services as the operator would write them for
 * `n` Userlands of `template` (operator/desired.ts), created at once by a client with no operator,
 * each one's create → available time. What Kubernetes' own controllers add to a bare pod; what the
 * platform adds on top is the rest.
 */
export async function timeDeploymentsReady(
  rest: KubeRest,
  namespace: string,
  n: number,
  template: Template,
  afterReady: () => void | Promise<void> = () => undefined,
): Promise<number[]> {
  await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
  const created = new Map<string, number>();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const userland: Userland = {
        apiVersion: API_VERSION,
        kind: "Userland",
        metadata: { name: `d${i}`, namespace, uid: "" },
        spec: { user: `d${i}`, templateName: template.metadata.name ?? "" },
      };
      const { deployment, service } = desiredChildren(userland, template);
      // No Userland owns them here.
      for (const o of [deployment, service]) delete o.metadata?.ownerReferences;
      created.set(deployment.metadata?.name ?? "", performance.now());
      await rest.create(paths.namespaced("apps", "v1", "deployments", namespace), deployment);
      await rest.create(paths.namespaced("", "v1", "services", namespace), service);
    }),
  );
  const ready = new Map<string, number>();
  const deadline = performance.now() + 10 * 60_000;
  while (ready.size < n) {
    if (performance.now() > deadline)
      throw new Error(`${n - ready.size} Deployments not available after 10 minutes`);
    const list = await rest.list<V1Deployment>(paths.namespaced("apps", "v1", "deployments", namespace));
    for (const d of list.items) {
      const name = d.metadata?.name ?? "";
      if (!ready.has(name) && (d.status?.availableReplicas ?? 0) >= 1) ready.set(name, performance.now());
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await afterReady();
  await rest.delete(`/api/v1/namespaces/${namespace}`);
  const pods = paths.namespaced("", "v1", "pods", namespace);
  while ((await rest.list(pods)).items.length > 0) await new Promise((r) => setTimeout(r, 500));
  return [...ready].map(([name, at]) => at - (created.get(name) ?? at)).sort((a, b) => a - b);
}
