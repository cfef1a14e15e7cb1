/**
 * Installs the generated CRDs (api/crds.ts) and waits until the API server serves them: the one
 * install-and-wait for the local platform (dev/platform.ts) and the tests (test/support), which
 * run their components outside the chart.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { customResourceDefinitions } from "../api/crds.ts";
import { isConflict, isNotFound, type KubeRest } from "../lib/kubeRest.ts";

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

interface CrdState {
  metadata: { resourceVersion: string };
  status?: { conditions?: { type: string; status: string }[] };
}

/**
 * Creates each CRD, or replaces it when it exists (the tests share one control plane, and one run's
 * CRDs may be older than this tree's), then waits until it is Established.
 *
 * Raw JSON through KubeRest: the typed client would drop the x-kubernetes-* keys it spells in
 * camelCase.
 */
export async function installCustomResourceDefinitions(
  rest: KubeRest,
  opts: { timeoutMs?: number } = {},
): Promise<void> {
  for (const crd of customResourceDefinitions) {
    const name = crd.metadata?.name ?? "";
    await createOrReplace(rest, name, crd);
    await waitUntilEstablished(rest, name, opts.timeoutMs ?? 30_000);
  }
}

/**
 * Test files run in parallel processes that install the same CRDs: another one may create or
 * replace a CRD between our read and our write (409). Then read again and write again; every
 * process writes the same definition, so whoever wins leaves the right one.
 */
async function createOrReplace(
  rest: KubeRest,
  name: string,
  crd: (typeof customResourceDefinitions)[number],
) {
  for (let attempt = 1; ; attempt++) {
    const existing = await rest.get<CrdState>(`${CRD_PATH}/${name}`).catch((error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    });
    try {
      if (existing)
        await rest.replace(`${CRD_PATH}/${name}`, {
          ...crd,
          metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
        });
      else await rest.create(CRD_PATH, crd);
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= 5) throw error;
    }
  }
}

async function waitUntilEstablished(rest: KubeRest, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const crd = await rest.get<CrdState>(`${CRD_PATH}/${name}`);
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError ? ` (last error: ${(lastError as Error).message})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for CRD ${name} to be established${detail}`);
    }
    await sleep(100);
  }
}
