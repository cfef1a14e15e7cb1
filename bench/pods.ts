/**
 * Pod start-up as the benchmarks measure it: `n` pods of one spec created at once in a namespace of
 * their own, each one's create → Ready (by its own readiness probe) time; then (after `afterReady`)
 * the namespace is deleted and its pods waited out, so that the next measurement has the node to itself.
 */
import type { CoreV1Api, V1Deployment, V1PodSpec } from "@kubernetes/client-node";
import { API_VERSION, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { paths } from "../api/kubePaths.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import { desiredChildren } from "../operator/desired.ts";

/** One measurement: `n` objects created at once in `namespace`, a namespace of their own. */
interface Batch {
  namespace: string;
  n: number;
  /** Runs once every object is ready, before the clean-up (e.g. to read usage counters). */
  afterReady?: () => void | Promise<void>;
}

/** What one kind of object is measured by: how it is made, when it counts as ready, how it is cleared away. */
interface Subject {
  /** Said of those not ready by the deadline, e.g. "pods not Ready". */
  notReady: string;
  createNamespace(): Promise<void>;
  /** The i-th object's name, and the requests that create it. */
  object(i: number): { name: string; create: () => Promise<void> };
  /** The names of the objects ready now. */
  ready(): Promise<string[]>;
  /** Deletes the namespace and waits until its pods are gone. */
  deleteNamespace(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timeReady(subject: Subject, { n, afterReady }: Batch): Promise<number[]> {
  await subject.createNamespace();
  const created = new Map<string, number>();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const { name, create } = subject.object(i);
      created.set(name, performance.now());
      await create();
    }),
  );
  const ready = new Map<string, number>();
  const deadline = performance.now() + 10 * 60_000;
  while (ready.size < n) {
    if (performance.now() > deadline)
      throw new Error(`${n - ready.size} ${subject.notReady} after 10 minutes`);
    for (const name of await subject.ready()) if (!ready.has(name)) ready.set(name, performance.now());
    await sleep(100);
  }
  await afterReady?.();
  await subject.deleteNamespace();
  return [...ready].map(([name, at]) => at - (created.get(name) ?? at)).sort((a, b) => a - b);
}

export function timePodsReady(core: CoreV1Api, spec: V1PodSpec, batch: Batch): Promise<number[]> {
  const { namespace } = batch;
  return timeReady(
    {
      notReady: "pods not Ready",
      createNamespace: async () => {
        await core.createNamespace({ body: { metadata: { name: namespace } } });
      },
      object: (i) => ({
        name: `p${i}`,
        create: async () => {
          await core.createNamespacedPod({ namespace, body: { metadata: { name: `p${i}` }, spec } });
        },
      }),
      ready: async () =>
        (await core.listNamespacedPod({ namespace })).items
          .filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
          .map((p) => p.metadata?.name ?? ""),
      deleteNamespace: async () => {
        await core.deleteNamespace({ name: namespace });
        while ((await core.listNamespacedPod({ namespace })).items.length > 0) await sleep(500);
      },
    },
    batch,
  );
}

/**
 * The same through Deployments: `n` Deployments and Services as the operator would write them for
 * `n` Userlands of `template` (operator/desired.ts), created at once by a client with no operator,
 * each one's create → available time. What Kubernetes' own controllers add to a bare pod; what the
 * platform adds on top is the rest.
 */
export function timeDeploymentsReady(rest: KubeRest, template: Template, batch: Batch): Promise<number[]> {
  const { namespace } = batch;
  const deployments = paths.namespaced("apps", "v1", "deployments", namespace);
  return timeReady(
    {
      notReady: "Deployments not available",
      createNamespace: async () => {
        await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
      },
      object: (i) => {
        const userland: Userland = {
          apiVersion: API_VERSION,
          kind: "Userland",
          metadata: { name: `d${i}`, namespace, uid: "" },
          spec: { user: `d${i}`, templateName: template.metadata.name ?? "" },
        };
        const { deployment, service } = desiredChildren(userland, template);
        // No Userland owns them here.
        for (const o of [deployment, service]) delete o.metadata?.ownerReferences;
        return {
          name: deployment.metadata?.name ?? "",
          create: async () => {
            await rest.create(deployments, deployment);
            await rest.create(paths.namespaced("", "v1", "services", namespace), service);
          },
        };
      },
      ready: async () =>
        (await rest.list<V1Deployment>(deployments)).items
          .filter((d) => (d.status?.availableReplicas ?? 0) >= 1)
          .map((d) => d.metadata?.name ?? ""),
      deleteNamespace: async () => {
        await rest.delete(`/api/v1/namespaces/${namespace}`);
        const pods = paths.namespaced("", "v1", "pods", namespace);
        while ((await rest.list(pods)).items.length > 0) await sleep(500);
      },
    },
    batch,
  );
}
