/**
 * Operator benchmark on a private kwok control plane (loopback only):
 *   node bench/operator.ts [N ...]            (default: 1000 5000)
 * For each N: N Userlands created at once; time until every Deployment and Service exists and
 * until every Userland is Ready, API requests per Userland (counted by the API server's audit log),
 * and the operator's peak memory. Baseline: the same N Deployments and Services created directly
 * by a client, without the operator (what the cluster itself needs).
 * For profiling: OPERATOR_NODE_OPTIONS is passed to the operator as NODE_OPTIONS (e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"; profiles are written when it exits), and BENCH_DIRECT=off
 * leaves out the direct baseline.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Userland } from "../api/v1alpha1/index.ts";
import { desiredChildren } from "../operator/desired.ts";
import { paths } from "../api/kubePaths.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { privateControlPlane, startAndConnect } from "../cluster/harness/privateControlPlane.ts";
import { operatorKubeconfig, spawnOperator, waitForLeadership } from "../cluster/harness/operator.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import type { Template } from "../api/v1alpha1/index.ts";

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const counts = sizes.length > 0 ? sizes : [1000, 5000];
const TIMEOUT_MS = 15 * 60_000;

const controlPlane = privateControlPlane("bench-operator", { nodes: 2 });
const { info, cluster } = await startAndConnect(controlPlane, { crds: true });
const rest = new KubeRest(cluster.kc, "userland-bench");

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/**
 * A create that waits as long as the API server needs: with thousands of objects at once on a busy
 * machine a Service create was seen taking over 30 s (KubeRest's default timeout), which ended the run.
 */
const create = (path: string, body: unknown) => rest.request("POST", path, { body, timeoutMs: 180_000 });

async function waitUntil(what: string, check: () => Promise<boolean>, started: number): Promise<number> {
  for (;;) {
    const t0 = Date.now();
    if (await check()) return (Date.now() - started) / 1000;
    if (Date.now() - started > TIMEOUT_MS) throw new Error(`timed out waiting for ${what}`);
    // Listing thousands of objects is work for the API server too: poll no more than half the time.
    await new Promise((r) => setTimeout(r, Math.max(250, Date.now() - t0)));
  }
}

async function count(path: string, predicate: (o: never) => boolean): Promise<number> {
  const list = await rest.list<never>(path, { timeoutMs: 120_000 });
  return list.items.filter(predicate).length;
}

/** How many objects exist, without transferring them: one item plus the API server's remainder. */
async function total(path: string): Promise<number> {
  const page = await rest.get<{ items: unknown[]; metadata: { remainingItemCount?: number } }>(path, {
    query: { limit: 1 },
  });
  return page.items.length + (page.metadata.remainingItemCount ?? 0);
}

/** Deletes a namespace and waits until it is gone, so its objects do not load the next phase. */
async function deleteNamespace(ns: string): Promise<void> {
  await rest.delete(`/api/v1/namespaces/${ns}`).catch(() => undefined);
  await waitUntil(
    `namespace ${ns} to be deleted`,
    () =>
      rest.get(`/api/v1/namespaces/${ns}`).then(
        () => false,
        () => true,
      ),
    Date.now(),
  );
}

const available = (d: { status?: { availableReplicas?: number } }) => (d.status?.availableReplicas ?? 0) >= 1;

async function newNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await rest.create("/api/v1/namespaces", { metadata: { name } });
  return name;
}

function auditCount(username: string, since: number): { total: number; writes: number } {
  let total = 0;
  let writes = 0;
  for (const line of readFileSync(info.auditLog, "utf8").split("\n")) {
    if (!line.includes(username)) continue;
    const e = JSON.parse(line) as {
      verb: string;
      user: { username: string };
      stageTimestamp: string;
      objectRef?: { resource?: string };
    };
    if (
      e.user.username !== username ||
      Date.parse(e.stageTimestamp) < since ||
      e.objectRef?.resource === "leases"
    )
      continue;
    total++;
    if (["create", "update", "patch", "delete"].includes(e.verb)) writes++;
  }
  return { total, writes };
}

interface Row {
  n: number;
  baselineExist: number;
  baselineReady: number;
  exist: number;
  ready: number;
  requests: number;
  writes: number;
  peakMiB: number;
}

async function baseline(n: number): Promise<{ exist: number; ready: number }> {
  const ns = await newNamespace("bench-direct");
  const template: Template = {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "code", namespace: ns },
    spec: simpleTemplateSpec(),
  };
  const started = Date.now();
  await pool([...Array(n).keys()], 50, async (i) => {
    const userland: Userland = {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: `user-${i}`, namespace: ns, uid: "" },
      spec: { user: `user-${i}`, templateName: "code" },
    };
    const children = desiredChildren(userland, template);
    for (const o of [children.deployment, children.service]) delete o.metadata?.ownerReferences;
    await create(paths.namespaced("apps", "v1", "deployments", ns), children.deployment);
    await create(paths.namespaced("", "v1", "services", ns), children.service);
  });
  const exist = (Date.now() - started) / 1000;
  const ready = await waitUntil(
    "direct Deployments available",
    async () => (await count(paths.namespaced("apps", "v1", "deployments", ns), available)) === n,
    started,
  );
  await deleteNamespace(ns);
  return { exist, ready };
}

/** The operator's memory by part (MiB), from its process metrics: where RSS goes beyond the live heap. */
const MEMORY_PARTS = {
  rss: "process_resident_memory_bytes",
  heapTotal: "nodejs_heap_size_total_bytes",
  heapUsed: "nodejs_heap_size_used_bytes",
  external: "nodejs_external_memory_bytes",
} as const;
type MemoryParts = Record<keyof typeof MEMORY_PARTS, number>;

function memoryParts(metrics: string): MemoryParts {
  const mib = (name: string) =>
    Number(new RegExp(`^userland_operator_${name} (\\S+)$`, "m").exec(metrics)?.[1] ?? 0) / 2 ** 20;
  return Object.fromEntries(
    Object.entries(MEMORY_PARTS).map(([part, name]) => [part, mib(name)]),
  ) as MemoryParts;
}

async function withOperator(n: number): Promise<Omit<Row, "n" | "baselineExist" | "baselineReady">> {
  const ns = await newNamespace("bench-operator");
  const { path, username } = await operatorKubeconfig(ns, cluster);
  const operator = await spawnOperator(path, username, ns, {
    env: {
      LOG_LEVEL: "warn",
      OPERATOR_FREEZE_CACHE: "false",
      ...(process.env.OPERATOR_NODE_OPTIONS ? { NODE_OPTIONS: process.env.OPERATOR_NODE_OPTIONS } : {}),
    },
  });
  let peakKiB = 0;
  // Each part's highest value seen, sampled from /metrics (the parts need not peak together).
  const peakParts: MemoryParts = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0 };
  const partsSampler = setInterval(() => {
    operator.metrics().then(
      (text) => {
        const parts = memoryParts(text);
        for (const part of Object.keys(peakParts) as (keyof MemoryParts)[])
          peakParts[part] = Math.max(peakParts[part], parts[part]);
      },
      () => undefined,
    );
  }, 2000);
  const sampler = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${operator.child.pid}/status`, "utf8");
      peakKiB = Math.max(peakKiB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      /* exited */
    }
  }, 500);
  try {
    await waitForLeadership(operator);
    await rest.create(paths.namespaced("userland.dev", "v1alpha1", "templates", ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Template",
      metadata: { name: "code" },
      spec: simpleTemplateSpec(),
    });
    const since = Date.now();
    await pool([...Array(n).keys()], 50, (i) =>
      create(paths.namespaced("userland.dev", "v1alpha1", "userlands", ns), {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Userland",
        metadata: { name: `user-${i}` },
        spec: { user: `user-${i}`, templateName: "code" },
      }),
    );
    const started = since;
    const exist = await waitUntil(
      "children",
      async () =>
        (await total(paths.namespaced("apps", "v1", "deployments", ns))) === n &&
        (await total(paths.namespaced("", "v1", "services", ns))) === n,
      started,
    );
    const ready = await waitUntil(
      "Ready",
      async () =>
        (await count(
          paths.namespaced("userland.dev", "v1alpha1", "userlands", ns),
          (u: Userland) => u.status?.phase === "Ready",
        )) === n,
      started,
    );
    // Events are written in the background after the objects: count them all (a field selector
    // leaves out remainingItemCount, so they are listed).
    await waitUntil(
      "Events",
      async () =>
        (
          await rest.list(paths.namespaced("", "v1", "events", ns), {
            query: { fieldSelector: "involvedObject.kind=Userland,reason=Created" },
            timeoutMs: 120_000,
          })
        ).items.length >= n,
      started,
    );
    await new Promise((r) => setTimeout(r, 2000)); // audit batches
    const parts = Object.entries(peakParts).map(([part, mib]) => `${part} ${mib.toFixed(0)}`);
    console.error(`N=${n}: operator memory, highest of each part (MiB): ${parts.join(", ")}`);
    const audit = auditCount(username, since);
    return { exist, ready, requests: audit.total / n, writes: audit.writes / n, peakMiB: peakKiB / 1024 };
  } finally {
    clearInterval(sampler);
    clearInterval(partsSampler);
    await operator.stop("SIGTERM");
    await deleteNamespace(ns);
  }
}

const fmt = (x: number, d = 1) => x.toFixed(d);
console.log("\nOperator benchmark (kwok control plane on loopback, 2 cores)\n");
console.log(
  "| Userlands | children exist: direct / operator (s) | all Ready: direct / operator (s) | ratio Ready | API requests per Userland (writes) | operator peak RSS (MiB) |",
);
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
try {
  for (const n of counts) {
    console.error(`N=${n}: baseline (Deployments and Services created directly)…`);
    const base = process.env.BENCH_DIRECT === "off" ? { exist: NaN, ready: NaN } : await baseline(n);
    console.error(`N=${n}: with the operator…`);
    const r: Row = { n, baselineExist: base.exist, baselineReady: base.ready, ...(await withOperator(n)) };
    // One row as soon as it is measured: a long run that is cut short still reports.
    console.log(
      `| ${r.n} | ${fmt(r.baselineExist)} / ${fmt(r.exist)} | ${fmt(r.baselineReady)} / ${fmt(r.ready)} | ${fmt(r.ready / r.baselineReady, 2)}× | ${fmt(r.requests, 2)} (${fmt(r.writes, 2)}) | ${fmt(r.peakMiB, 0)} |`,
    );
  }
} finally {
  await rest.close();
  await controlPlane.stop();
}
console.log(
  "\ndirect: a client creates the same Deployments and Services itself (no operator); Ready: Deployment available (direct) or Userland phase Ready (operator).",
);
console.log(
  "API requests: everything the operator's ServiceAccount sent, from the API server's audit log, except Lease renewals.",
);
