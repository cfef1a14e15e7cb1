/**
 * University scale (issue 31): `npm run bench:scale` (`node bench/scale.ts --help`).
 *
 * The local platform (dev/platform.ts: kwok control plane, the operator, user-manager, auth and
 * proxy each a process under the chart's rights) serving every namespace (USERLAND_WATCH_NAMESPACES
 * "*"), then N Userlands (default 10,000) in K namespaces (default 50), one or two Templates each,
 * one class per Template, one class of up to 1,000. Each figure is printed beside the API server's
 * own cost for the same objects:
 *   - the operator's convergence from empty (Userlands written while it is stopped, then started)
 *     and after a restart (it lists everything again and reconciles each Userland once), against
 *     the bench listing the same collections itself;
 *   - writes in steady state over at least one full resync, by identity (the audit log): must be 0;
 *   - every process's RSS at rest, empty and with N, and the growth per 1,000 Userlands;
 *   - the proxy's restart until it routes a signed-in student again, against listing what it lists;
 *   - the user-manager's list and the console's class page for the largest class, against the
 *     API server's list of the same Userlands;
 *   - API requests per sign-in (imported and auto-provisioned students), by identity.
 * Everything is on 127.0.0.1; the load average is printed with the numbers.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { availableParallelism, loadavg } from "node:os";
import type { V1Deployment } from "@kubernetes/client-node";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LABELS, MANAGED_BY, userlandNameFor } from "../api/naming.ts";
import { paths } from "../api/kubePaths.ts";
import { templatesPath, userlandsPath, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, DEMO_TEMPLATE, NAMESPACE, startPlatform } from "../dev/platform.ts";
import { Informer } from "../lib/informer.ts";
import { createLogger } from "../lib/logger.ts";
import { desiredChildren } from "../operator/desired.ts";
import { resources } from "../operator/resources.ts";
import { auditOffset, requestsByVerb, requestsSince, type RequestCount } from "./audit.ts";
import { identityName } from "./identities.ts";
import { childProcesses, rssBytes, sampleUsage, type Usage } from "./processUsage.ts";
import { runBench } from "./run.ts";
import { percentile } from "./stats.ts";
import { StudentClient } from "./studentClient.ts";

const usage = `usage: node bench/scale.ts [--userlands N] [--namespaces K] [--resync 60s] [--signins 10]
  --userlands   Userlands in all (default 10000; env BENCH_SCALE_USERLANDS)
  --namespaces  course namespaces they are spread over (default 50; env BENCH_SCALE_NAMESPACES)
  --resync      the operator's OPERATOR_RESYNC_PERIOD here; the steady-state window covers one (default 60s)
  --signins     students signed in one after another per variant, for requests per sign-in (default 10)
  --direct      Deployments + Services a client creates itself, the convergence's baseline (default min(N, 1000))
  --timeout     seconds any one wait may take (default 1800)
  --restarts    operator restarts measured, one after another (default 1)
  --flag-from-start  each restart also once with V8's --optimize-for-size from the operator's start
                (as before it was set only once the caches were synced, operator/heap.ts), side by side
  --until       the last phase: restart stops after the restarts; fill writes the Userlands with the
                operator stopped and times its caches' first fill in a plain process (bench/cacheMemory.ts),
                without and with --optimize-for-size, --restarts times each (default: every phase)`;

const { values } = parseArgs({
  options: {
    userlands: { type: "string", default: process.env.BENCH_SCALE_USERLANDS ?? "10000" },
    namespaces: { type: "string", default: process.env.BENCH_SCALE_NAMESPACES ?? "50" },
    resync: { type: "string", default: "60s" },
    signins: { type: "string", default: "10" },
    direct: { type: "string" },
    timeout: { type: "string", default: "1800" },
    restarts: { type: "string", default: "1" },
    "flag-from-start": { type: "boolean", default: false },
    until: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const N = Number(values.userlands);
const K = Number(values.namespaces);
const SIGNINS = Number(values.signins);
const DIRECT = Number(values.direct ?? Math.min(N, 1000));
const TIMEOUT_MS = Number(values.timeout) * 1000;
const RESTARTS = Number(values.restarts);
const resyncSeconds = Number(/^(\d+)s$/.exec(values.resync)?.[1]);
if (
  !Number.isInteger(N) ||
  N < 10 ||
  N > 50_000 ||
  !Number.isInteger(K) ||
  K < 1 ||
  K > 500 ||
  !(resyncSeconds >= 10) ||
  !Number.isInteger(SIGNINS) ||
  SIGNINS < 1 ||
  !Number.isInteger(DIRECT) ||
  DIRECT < 1 ||
  !(TIMEOUT_MS > 0) ||
  !Number.isInteger(RESTARTS) ||
  RESTARTS < 1 ||
  (values.until !== undefined && values.until !== "restart" && values.until !== "fill")
) {
  console.error(usage);
  process.exit(2);
}

const log = (line: string) => console.error(`[scale ${new Date().toISOString().slice(11, 19)}] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const msf = (ms: number) => `${ms.toFixed(0)} ms`;
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const load = () => (loadavg()[0] ?? NaN).toFixed(1);

// --- the university: K namespaces, one or two Templates each, one class per Template ---------------

interface Klass {
  namespace: string;
  template: string;
  klass: string;
  users: string[];
}

/**
 * The largest class has min(1,000, N/5) students; the rest are shared out over the other
 * Templates by weights 1–4 in turn, so the classes differ in size as a university's do.
 */
function university(): Klass[] {
  const slots: { namespace: string; template: string }[] = [];
  for (let i = 0; i < K; i++) {
    const namespace = `scale-${String(i).padStart(2, "0")}`;
    slots.push({ namespace, template: `course${i}-code` });
    if (i % 2 === 1) slots.push({ namespace, template: `course${i}-db` });
  }
  const big = Math.min(1000, Math.floor(N / 5));
  const rest = slots.slice(1);
  const weights = rest.map((_, j) => 1 + (j % 4));
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = [big, ...weights.map((w) => Math.floor(((N - big) * w) / sum))];
  sizes[sizes.length - 1] = (sizes.at(-1) ?? 0) + N - sizes.reduce((a, b) => a + b, 0);
  let next = 0;
  return slots.map((slot, j) => ({
    ...slot,
    klass: `class-${j}`,
    users: Array.from({ length: sizes[j] ?? 0 }, () => `s${next++}`),
  }));
}

const classes = university();
const namespaces = [...new Set(classes.map((c) => c.namespace))];
const largest = classes[0] as Klass;

// --- the platform -------------------------------------------------------------------------------

const dir = join(repoRoot, ".userland", "bench-scale");
/** The operator's Node options at its next start: a restart's variant changes them. */
const nodeArgs: { operator?: string[] } = {};
const platform = await startPlatform({
  dir,
  log: (line) => log(`platform: ${line}`),
  watchNamespaces: ["*"],
  componentEnv: { operator: { OPERATOR_RESYNC_PERIOD: values.resync } },
  nodeArgs,
});
const rest = platform.rest;
const auditLog = platform.controlPlane.auditLog;
const proxyUrl = new URL(platform.url);
const portFor = (url: URL) => (url.hostname === "127.0.0.1" ? Number(url.port) : undefined);
const USERLANDS_ALL = paths.allNamespaces("userland.dev", "v1alpha1", "userlands");
const OWNED = `${LABELS.managedBy}=${MANAGED_BY}`;

/** Counts the scale namespaces' Userlands by phase from one watch (cheaper than listing 10,000 again). */
const userlands = new Informer<Userland>(rest, {
  path: USERLANDS_ALL,
  log: createLogger("bench-scale", "warn"),
});
const readyCount = () =>
  userlands.list().filter((u) => u.metadata.namespace?.startsWith("scale-") && u.status?.phase === "Ready")
    .length;

async function cleanup(): Promise<void> {
  await userlands.stop().catch(() => undefined);
  await platform.stop();
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

async function until(what: string, check: () => Promise<boolean> | boolean, everyMs = 500): Promise<void> {
  const deadline = performance.now() + TIMEOUT_MS;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/**
 * How many objects of a kind the scale namespaces hold, without transferring them: one item and
 * the API server's remainder per namespace (it gives no remainder for a label-selected list).
 */
async function total(group: string, plural: string): Promise<number> {
  const counts = await Promise.all(
    namespaces.map(async (namespace) => {
      const page = await rest.get<{ items: unknown[]; metadata: { remainingItemCount?: number } }>(
        paths.namespaced(group, "v1", plural, namespace),
        { query: { limit: 1 }, timeoutMs: 120_000 },
      );
      return page.items.length + (page.metadata.remainingItemCount ?? 0);
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * Every process's RSS at rest: the platform's components and the control plane's, each the lowest
 * of one sample a second over `ms` (a collector's run lowers it; the lowest is the least garbage).
 */
async function restingRss(ms: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const deadline = performance.now() + ms; performance.now() < deadline;) {
    const components = platform.pids();
    const samples: [string, number][] = Object.entries(components).map(([name, pid]) => [
      name,
      rssBytes(pid),
    ]);
    const own = new Set(Object.values(components));
    for (const p of childProcesses()) if (!own.has(p.pid)) samples.push([p.name, rssBytes(p.pid)]);
    for (const [name, bytes] of samples) out.set(name, Math.min(out.get(name) ?? Infinity, bytes));
    await sleep(1000);
  }
  return out;
}

/** Requests by identity (named as the platform's components) since `offset`, every namespace. */
function requestsByIdentity(offset: number, untilMs = Infinity): Map<string, RequestCount> {
  const out = new Map<string, RequestCount>();
  for (const [user, count] of requestsSince(auditLog, offset, undefined, untilMs)) {
    const name = identityName(user, platform);
    const sum = out.get(name) ?? { total: 0, writes: 0 };
    out.set(name, { total: sum.total + count.total, writes: sum.writes + count.writes });
  }
  return out;
}

/** The operator's /metrics (its port is in its latest log's start line). */
async function operatorMetrics(): Promise<string | undefined> {
  const line = readFileSync(join(platform.logsDir, "operator.log"), "utf8")
    .split("\n")
    .find((l) => l.includes('"operator started"'));
  const http = line ? (JSON.parse(line) as { http?: string }).http : undefined;
  if (!http) return undefined;
  return fetch(`${http}/metrics`).then(
    (r) => r.text(),
    () => undefined,
  );
}

/** When the operator's latest log says it started, became leader and had its caches synced (epoch ms). */
function operatorLogTimes(): { started: number; leader: number; synced: number } {
  const at = (msg: string) => {
    const line = readFileSync(join(platform.logsDir, "operator.log"), "utf8")
      .split("\n")
      .find((l) => l.includes(`"msg":"${msg}"`));
    return line ? Date.parse((JSON.parse(line) as { time: string }).time) : NaN;
  };
  return {
    started: at("operator started"),
    leader: at("became leader"),
    synced: at("caches synced; starting workers"),
  };
}

/** The user-manager's /metrics (its admin port, from its log). */
async function userManagerMetrics(): Promise<string> {
  const line = readFileSync(join(platform.logsDir, "user-manager.log"), "utf8")
    .split("\n")
    .find((l) => l.includes('"user-manager listening"'));
  const admin = line ? (JSON.parse(line) as { adminUrl?: string }).adminUrl : undefined;
  if (!admin) throw new Error("the user-manager's log names no adminUrl");
  return (await fetch(`${admin.replace(/\/$/, "")}/metrics`)).text();
}

function metric(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, "gm")))
    if ((m[1] ?? "").includes(labels)) sum += Number(m[2]);
  return sum;
}

/** The operator's collections, listed as its informers list them (cluster-wide, its label selectors). */
const operatorCollections: { what: string; path: string; labelSelector?: string }[] = [
  { what: "Templates", r: resources.Template },
  { what: "Userlands", r: resources.Userland },
  { what: "Deployments", r: resources.Deployment, owned: true },
  { what: "Services", r: resources.Service, owned: true },
  { what: "PVCs", r: resources.PersistentVolumeClaim, owned: true },
  { what: "EndpointSlices", r: resources.EndpointSlice, owned: true },
  { what: "Pods", r: resources.Pod, owned: true },
].map(({ what, r, owned }) => ({
  what,
  path: paths.allNamespaces(r.group, r.version, r.plural),
  labelSelector: owned ? OWNED : undefined,
}));

/** Lists `collections` side by side as an informer start does; ms for all, and each one's count. */
async function timeLists(collections: { what: string; path: string; labelSelector?: string }[]) {
  const started = performance.now();
  const counts = await Promise.all(
    collections.map(async (c) => {
      const list = await rest.list(c.path, { query: { labelSelector: c.labelSelector }, timeoutMs: 300_000 });
      return `${list.items.length} ${c.what}`;
    }),
  );
  return { ms: performance.now() - started, counts };
}

// --- the report ---------------------------------------------------------------------------------

const rows: string[][] = [];
function row(what: string, measured: string, baseline: string, ratio = ""): void {
  rows.push([what, measured, baseline, ratio]);
  console.log(`| ${what} | ${measured} | ${baseline} | ${ratio} |`);
}
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const notes: string[] = [];
const note = (line: string) => {
  notes.push(line);
  console.log(`\n${line}`);
};

function describeRequests(requests: Map<string, RequestCount>, per = 1): string {
  return [...requests]
    .sort((a, b) => b[1].total - a[1].total)
    .map(
      ([name, c]) =>
        `${name} ${(c.total / per).toFixed(per === 1 ? 0 : 1)} (${(c.writes / per).toFixed(per === 1 ? 0 : 1)} writes)`,
    )
    .join("; ");
}

// --- the phases ---------------------------------------------------------------------------------

async function createUniversity(): Promise<number> {
  for (const namespace of namespaces)
    await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
  for (const c of classes)
    await rest.create(templatesPath(c.namespace), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Template",
      metadata: { name: c.template },
      spec: simpleTemplateSpec(),
    });
  // The largest class's teacher, bound in that course's namespace only (as deploy/README.md binds a
  // course's teacher): the console's and the API's teacher.
  await rest.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", largest.namespace), {
    metadata: { name: "teacher" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: platform.teacher },
    subjects: [
      { kind: "ServiceAccount", name: platform.teacher, namespace: NAMESPACE },
      { kind: "User", name: `userland:${CONSOLE_TEACHER}`, apiGroup: "rbac.authorization.k8s.io" },
    ],
  });
  const items = classes.flatMap((c) => c.users.map((user) => ({ c, user })));
  const started = performance.now();
  let done = 0;
  await pool(items, 50, async ({ c, user }) => {
    await rest.request("POST", userlandsPath(c.namespace), {
      body: {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Userland",
        metadata: { name: userlandNameFor(user, c.template), labels: { [LABELS.class]: c.klass } },
        spec: { user, templateName: c.template },
      },
      timeoutMs: 180_000,
    });
    if (++done % 1000 === 0) log(`${done} Userlands written`);
  });
  return performance.now() - started;
}

/**
 * The convergence's baseline, before anything else is in the cluster: the Deployments and Services
 * the operator would write for `DIRECT` Userlands (operator/desired.ts), created by a client with
 * 50 in flight (as bench/operator.ts's baseline: all at once, Service creates time out on this
 * machine) until all are available; then the namespace is deleted and waited out.
 */
async function directBaseline(): Promise<number> {
  log(`baseline: ${DIRECT} Deployments and Services created directly`);
  const namespace = "scale-direct";
  const template: Template = {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "direct", namespace },
    spec: simpleTemplateSpec(),
  };
  await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
  const deployments = paths.namespaced("apps", "v1", "deployments", namespace);
  const started = performance.now();
  await pool([...Array(DIRECT).keys()], 50, async (i) => {
    const userland: Userland = {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: `d${i}`, namespace, uid: "" },
      spec: { user: `d${i}`, templateName: "direct" },
    };
    const { deployment, service } = desiredChildren(userland, template);
    for (const o of [deployment, service]) delete o.metadata?.ownerReferences;
    await rest.request("POST", deployments, { body: deployment, timeoutMs: 180_000 });
    await rest.request("POST", paths.namespaced("", "v1", "services", namespace), {
      body: service,
      timeoutMs: 180_000,
    });
  });
  await until(
    "the direct Deployments available",
    async () =>
      (await rest.list<V1Deployment>(deployments, { timeoutMs: 120_000 })).items.filter(
        (d) => (d.status?.availableReplicas ?? 0) >= 1,
      ).length >= DIRECT,
    1000,
  );
  const readyMs = performance.now() - started;
  log(`direct: available after ${sec(readyMs)}; deleting them`);
  await rest.delete(`/api/v1/namespaces/${namespace}`);
  await until(
    "the direct namespace to be gone",
    () =>
      rest.get(`/api/v1/namespaces/${namespace}`).then(
        () => false,
        () => true,
      ),
    1000,
  );
  return readyMs;
}

/**
 * The operator's caches filled as at a restart, in a plain process (bench/cacheMemory.ts, the
 * operator's own informers and its credentials), without and with V8's --optimize-for-size, each
 * beside the bench listing the same collections just before: the flag's cost alone, without
 * Node's start or the operator's reconciles.
 */
async function cacheFills(): Promise<void> {
  const kubeconfig = platform.credentials.find((c) => c.component === "operator" && c.kind === "kubeconfig");
  if (!kubeconfig) throw new Error("no kubeconfig for the operator");
  for (let round = 1; round <= RESTARTS; round++)
    for (const flag of [false, true]) {
      const lists = await timeLists(operatorCollections);
      const args = [
        "--expose-gc",
        ...(flag ? ["--optimize-for-size"] : []),
        "bench/cacheMemory.ts",
        kubeconfig.file,
      ];
      const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: repoRoot });
      const m = /(\d+) objects in (\d+) ms; peak RSS ([\d.]+) MiB/.exec(stdout);
      const fillMs = Number(m?.[2]);
      row(
        `caches filled at once ${round} (${flag ? "optimize-for-size" : "no heap flag, as shipped until synced"}): ${m?.[1] ?? "?"} objects, peak RSS ${m?.[3] ?? "?"} MiB`,
        msf(fillMs),
        `${msf(lists.ms)} (the bench listing the same)`,
        `${ratio(fillMs, lists.ms)}, load ${load()}`,
      );
    }
}

async function fromEmpty(directMs: number): Promise<void> {
  log(`operator stopped; writing ${N} Userlands in ${namespaces.length} namespaces`);
  let writeMs = 0;
  const procs = () => childProcesses();
  await platform.restart("operator", async () => {
    writeMs = await createUniversity();
    if (values.until === "fill") await cacheFills();
  });
  if (values.until === "fill") return;
  const offset = auditOffset(auditLog);
  const sampler = sampleUsage(procs(), 1000);
  const started = performance.now();
  await until(
    "the operator's Deployments and Services",
    async () => (await total("apps", "deployments")) >= N && (await total("", "services")) >= N,
    2000,
  );
  const existMs = performance.now() - started;
  log(`children exist after ${sec(existMs)}; waiting for Ready`);
  await until("every Userland Ready", () => readyCount() >= N, 1000);
  const readyMs = performance.now() - started;
  const usageNow = sampler.stop();
  log(`all ${N} Ready after ${sec(readyMs)}`);
  await sleep(2000); // the audit log is written in batches
  const requests = requestsByIdentity(offset);
  const op = requests.get("operator") ?? { total: 0, writes: 0 };
  const lists = await timeLists(operatorCollections);
  row(`Userlands written by the bench (50 in flight), API server alone`, sec(writeMs), "", "");
  row(
    `operator from empty: every Deployment and Service exists`,
    sec(existMs),
    `${sec(writeMs)} (the bench writing the ${N} Userlands themselves)`,
    ratio(existMs, writeMs),
  );
  const per1000 = (readyMs / N) * 1000;
  const directPer1000 = (directMs / DIRECT) * 1000;
  row(`operator from empty: every Userland Ready`, sec(readyMs), "");
  row(
    `operator from empty: time per 1,000 Userlands Ready`,
    sec(per1000),
    `${sec(directPer1000)} (${DIRECT} Deployments + Services created directly → available in ${sec(directMs)})`,
    ratio(per1000, directPer1000),
  );
  row(
    `operator from empty: API requests per Userland (writes)`,
    `${(op.total / N).toFixed(2)} (${(op.writes / N).toFixed(2)})`,
    "4 writes per new Userland (0002)",
  );
  note(
    `from empty, by identity: ${describeRequests(requests)}\nlists by the bench: ${lists.counts.join(", ")}\nCPU s and peak RSS MiB while converging: ${describeUsage(usageNow)}\nload average (1 min) ${load()} on ${availableParallelism()} CPUs`,
  );
}

function describeUsage(usage: Usage[]): string {
  return usage.map((u) => `${u.name} ${u.cpuSeconds.toFixed(0)} s / ${mib(u.peakRssBytes)}`).join(", ");
}

/**
 * The operator restarted: the time until it leads with synced caches and until it has reconciled
 * every Userland once, against the bench listing the same collections just before; then its RSS at
 * rest (lowest over 15 s). `flagFromStart`: V8's --optimize-for-size from the process's start, as
 * operator/heap.ts set it before it waited for the caches to sync.
 */
async function restartOnce(round: number, flagFromStart: boolean): Promise<void> {
  const variant = flagFromStart ? "optimize-for-size from the start" : "as shipped";
  log(`restart ${round} (${variant}): the bench lists the operator's collections first`);
  const lists = await timeLists(operatorCollections);
  log(`listed in ${sec(lists.ms)}; restarting the operator`);
  nodeArgs.operator = flagFromStart ? ["--optimize-for-size"] : [];
  const offset = auditOffset(auditLog);
  await platform.restart("operator");
  const started = performance.now();
  await until(
    "the restarted operator to reconcile every Userland once",
    async () => {
      const text = await operatorMetrics();
      if (!text) return false;
      return (
        metric(text, "userland_operator_reconcile_total", 'kind="Userland"') >= N &&
        metric(text, "userland_operator_workqueue_depth") === 0
      );
    },
    250,
  );
  const convergedMs = performance.now() - started;
  const at = operatorLogTimes();
  // From its log, not by polling /readyz: in a 10,000 run the polls never saw the operator ready
  // under the flag from the start (both rounds printed NaN), though its log said when.
  const syncedMs = at.synced - (started + performance.timeOrigin);
  const rss = (await restingRss(15_000)).get("operator") ?? NaN;
  const op = requestsByIdentity(offset).get("operator") ?? { total: 0, writes: 0 };
  const what = `operator restart ${round} (${variant})`;
  row(
    `${what}: leading (caches synced)`,
    sec(syncedMs),
    `${sec(lists.ms)} (the bench listing the same: ${lists.counts.join(", ")})`,
    ratio(syncedMs, lists.ms),
  );
  row(
    `${what}: every Userland reconciled, queue empty`,
    sec(convergedMs),
    `${sec(lists.ms)}; target ≤ 2×`,
    ratio(convergedMs, lists.ms),
  );
  row(
    `${what}: its log, Node's start → leading → caches synced`,
    `${sec(at.started - started - performance.timeOrigin)} → ${sec(at.leader - at.started)} → ${sec(at.synced - at.leader)}`,
    `${sec(lists.ms)} (the bench's lists)`,
    `fill ${ratio(at.synced - at.leader, lists.ms)}`,
  );
  row(`${what}: its requests (writes)`, `${op.total} (${op.writes})`, "0 writes");
  row(`${what}: RSS at rest after (lowest over 15 s), MiB`, mib(rss), "", `load ${load()}`);
  nodeArgs.operator = [];
}

async function afterRestart(): Promise<void> {
  for (let round = 1; round <= RESTARTS; round++) {
    await restartOnce(round, false);
    if (values["flag-from-start"]) await restartOnce(round, true);
  }
}

async function steadyState(): Promise<void> {
  const windowMs = (resyncSeconds + 20) * 1000;
  log(`steady state: ${sec(windowMs)} (the operator resyncs every ${values.resync})`);
  const offset = auditOffset(auditLog);
  const text0 = (await operatorMetrics()) ?? "";
  const before = metric(text0, "userland_operator_reconcile_total", 'kind="Userland"');
  await sleep(windowMs);
  const after = metric(
    (await operatorMetrics()) ?? "",
    "userland_operator_reconcile_total",
    'kind="Userland"',
  );
  await sleep(2000);
  const requests = requestsByIdentity(offset, Date.now() - 2000);
  const platformWrites = ["operator", "proxy", "user-manager", "auth"].reduce(
    (sum, c) => sum + (requests.get(c)?.writes ?? 0),
    0,
  );
  row(`steady state, ${sec(windowMs)}: writes by the platform`, String(platformWrites), "0 (target)");
  note(
    `steady state: ${after - before} Userland reconciles by the operator's resync in the window; requests by identity: ${describeRequests(requests)}`,
  );
}

async function proxyStart(): Promise<void> {
  log("proxy: a signed-in student, then the proxy restarted");
  const user = "probe";
  await rest.create(userlandsPath(NAMESPACE), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name: userlandNameFor(user, DEMO_TEMPLATE) },
    spec: { user, templateName: DEMO_TEMPLATE },
  });
  const client = new StudentClient(portFor);
  const owner = `<span id="owner">${user}</span>`;
  const landed = await client.signIn(proxyUrl, user);
  await client.openLikeBrowser(
    proxyUrl,
    (a) => a.status === 200 && a.body.includes(owner),
    TIMEOUT_MS,
    landed,
  );
  const lists = await timeLists([
    { what: "Userlands", path: USERLANDS_ALL },
    { what: "Templates", path: paths.allNamespaces("userland.dev", "v1alpha1", "templates") },
  ]);
  await platform.restart("proxy");
  const started = performance.now();
  let firstAnswer = NaN;
  await until(
    "the restarted proxy to route",
    async () => {
      const answer = await client.send(proxyUrl).catch(() => undefined);
      if (answer && Number.isNaN(firstAnswer)) firstAnswer = performance.now() - started;
      return answer?.status === 200 && answer.body.includes(owner);
    },
    50,
  );
  const routedMs = performance.now() - started;
  row("proxy restart: first answer", msf(firstAnswer), "");
  row(
    "proxy restart: routes the signed-in student again",
    msf(routedMs),
    `${msf(lists.ms)} (listing ${lists.counts.join(", ")})`,
    ratio(routedMs, lists.ms),
  );
}

async function timed(times: number, fn: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out.sort((a, b) => a - b);
}
const spread = (t: number[]) =>
  `p50 ${msf(percentile(t, 50))}, max ${msf(t.at(-1) ?? NaN)} (first ${msf(t[0] ?? NaN)}…)`;

async function classPages(): Promise<void> {
  const size = largest.users.length;
  log(`the largest class (${size}): the user-manager's list and the console's page`);
  const fieldSelector = `spec.templateName=${largest.template}`;
  const direct = await timed(5, async () => {
    const list = await rest.list(userlandsPath(largest.namespace), { query: { fieldSelector } });
    if (list.items.length !== size) throw new Error(`API server listed ${list.items.length} of ${size}`);
  });
  const token = await platform.token(platform.teacher);
  let firstApi = NaN;
  const api = await timed(5, async () => {
    const t0 = performance.now();
    const r = await fetch(
      `${platform.userManagerUrl}/api/v1/userlands?template=${encodeURIComponent(largest.template)}`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    const body = (await r.json()) as { items?: unknown[] };
    if (Number.isNaN(firstApi)) firstApi = performance.now() - t0;
    if (body.items?.length !== size)
      throw new Error(`user-manager listed ${body.items?.length} of ${size}: ${r.status}`);
  });
  row(
    `user-manager GET /api/v1/userlands?template= (class of ${size}, course teacher)`,
    `p50 ${msf(percentile(api, 50))}, first ${msf(firstApi)}`,
    `p50 ${msf(percentile(direct, 50))} (API server, same list)`,
    ratio(percentile(api, 50), percentile(direct, 50)),
  );
  const client = new StudentClient(portFor);
  const console0 = new URL(platform.consoleUrl);
  await client.signIn(console0, CONSOLE_TEACHER);
  const classUrl = new URL(
    `class?template=${encodeURIComponent(largest.template)}&class=${encodeURIComponent(largest.klass)}`,
    console0,
  );
  // The index first, while the teacher's refusals are not yet remembered (5 s): its first view
  // pays every access review it needs.
  const reviews = async () =>
    metric(await userManagerMetrics(), "userland_user_manager_access_reviews_total");
  const reviewsBefore = await reviews();
  const index = await timed(3, async () => {
    const answer = await client.send(console0);
    if (answer.status !== 200) throw new Error(`console: ${answer.status}`);
  });
  const indexReviews = (await reviews()) - reviewsBefore;
  let page = { status: 0, body: "" };
  const pageTimes = await timed(5, async () => {
    page = await client.send(classUrl);
    if (page.status !== 200) throw new Error(`console class page: ${page.status} ${page.body.slice(0, 200)}`);
  });
  const rowsOnPage = (page.body.match(/<tr/g) ?? []).length;
  // A teacher looking for one student: the page's search (console/classPages.ts).
  const student = largest.users[Math.floor(largest.users.length / 2)] ?? "";
  const searchUrl = new URL(classUrl);
  searchUrl.searchParams.set("q", student);
  let found = { status: 0, body: "" };
  const search = await timed(5, async () => {
    found = await client.send(searchUrl);
    if (found.status !== 200) throw new Error(`console search: ${found.status}`);
  });
  row(
    `console class page (class of ${size})`,
    `p50 ${msf(percentile(pageTimes, 50))}, max ${msf(pageTimes.at(-1) ?? NaN)}`,
    `p50 ${msf(percentile(direct, 50))} (API server, same list)`,
    ratio(percentile(pageTimes, 50), percentile(direct, 50)),
  );
  row(
    `console index (the teacher's Templates and classes)`,
    `${spread(index)}; ${indexReviews} access reviews for ${index.length} views`,
    "",
  );
  row(
    `console class page, search for one student (class of ${size})`,
    `p50 ${msf(percentile(search, 50))}, ${(found.body.match(/<span class="user">/g) ?? []).length} row(s)`,
    `p50 ${msf(percentile(direct, 50))} (API server, whole class)`,
    ratio(percentile(search, 50), percentile(direct, 50)),
  );
  note(
    `console class page: ${(page.body.length / 1024).toFixed(0)} KiB, ${rowsOnPage} table rows (header included) for ${size} students (pages of 100, console/classPages.ts)`,
  );
}

async function signIns(): Promise<void> {
  for (const variant of ["imported", "auto"] as const) {
    const users = Array.from({ length: SIGNINS }, (_, i) => `${variant}-${i}`);
    if (variant === "imported") {
      for (const user of users)
        await rest.create(userlandsPath(NAMESPACE), {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Userland",
          metadata: { name: userlandNameFor(user, DEMO_TEMPLATE) },
          spec: { user, templateName: DEMO_TEMPLATE },
        });
      const names = new Set(users.map((u) => userlandNameFor(u, DEMO_TEMPLATE)));
      await until(
        "the imported students' Userlands Ready",
        () =>
          userlands
            .list(NAMESPACE)
            .filter((u) => names.has(u.metadata.name ?? "") && u.status?.phase === "Ready").length ===
          names.size,
      );
      await sleep(3000); // the demo environments' addresses reach the proxy's override file
    }
    log(`${SIGNINS} ${variant} students sign in, one after another`);
    const offset = auditOffset(auditLog);
    const times: number[] = [];
    // Pages that are neither the starting page nor the student's environment (issue 43: none).
    const wrong = new Map<number, number>();
    let sawWrong = 0;
    for (const user of users) {
      const client = new StudentClient(portFor);
      const t0 = performance.now();
      const landed = await client.signIn(proxyUrl, user);
      const owner = `<span id="owner">${user}</span>`;
      const visit = await client.openLikeBrowser(
        proxyUrl,
        (a) => a.status === 200 && a.body.includes(owner),
        TIMEOUT_MS,
        landed,
      );
      times.push(visit.answer.firstByteAt - t0);
      const seen = visit.pages.filter((p) => !p.starting);
      if (seen.length > 0) sawWrong++;
      for (const { status } of seen) wrong.set(status, (wrong.get(status) ?? 0) + 1);
    }
    await sleep(2000);
    const requests = requestsByIdentity(offset, Date.now() - 2000);
    times.sort((a, b) => a - b);
    const platformRequests = ["operator", "proxy", "user-manager", "auth"].reduce(
      (sum, c) => sum + (requests.get(c)?.total ?? 0),
      0,
    );
    row(
      `sign-in → first proxied byte, ${variant}, one at a time`,
      `p50 ${msf(percentile(times, 50))}, p95 ${msf(percentile(times, 95))}, max ${msf(times.at(-1) ?? NaN)}; wrong pages: ${sawWrong} of ${users.length}${
        wrong.size > 0 ? ` (${[...wrong].map(([status, count]) => `${count}× ${status}`).join(", ")})` : ""
      }`,
      "wrong pages: neither the starting page nor the environment; must be 0",
    );
    row(
      `API requests per sign-in by the platform, ${variant}`,
      (platformRequests / SIGNINS).toFixed(1),
      "must not grow with N",
    );
    const calls = (["user-manager", "proxy", "auth", "operator"] as const)
      .map((c) => {
        const username = `system:serviceaccount:${NAMESPACE}:${platform.serviceAccounts[c]}`;
        const byVerb = requestsByVerb(auditLog, offset, undefined, username, Date.now() - 2000);
        const list = [...byVerb].map(([call, count]) => `${call} ${(count / SIGNINS).toFixed(1)}`);
        return list.length > 0 ? `${c}: ${list.join(", ")}` : "";
      })
      .filter(Boolean);
    note(
      `per ${variant} sign-in, by identity: ${describeRequests(requests, SIGNINS)}\n  the platform's calls per sign-in (reviews count as creates): ${calls.join("; ")}`,
    );
  }
}

function memoryRows(empty: Map<string, number>, full: Map<string, number>): void {
  for (const [name, bytes] of full) {
    const before = empty.get(name);
    const growth = before === undefined ? NaN : ((bytes - before) / N) * 1000;
    row(
      `RSS at rest (lowest over 20 s): ${name} (MiB)`,
      `${mib(bytes)} with ${N}`,
      `${before === undefined ? "?" : mib(before)} empty`,
      `${Number.isNaN(growth) ? "?" : mib(growth)} MiB per 1,000`,
    );
  }
}

await runBench("bench/scale.ts", cleanup, async () => {
  await userlands.start();
  console.log(
    `\n# University scale: ${N} Userlands in ${namespaces.length} namespaces (${classes.length} Templates, one class each: ${Math.min(...classes.map((c) => c.users.length))}–${largest.users.length} students), every component serving "*"\n`,
  );
  console.log(`load average (1 min) ${load()} at the start, on ${availableParallelism()} CPUs\n`);
  console.log("| measure | platform | baseline (the API server's own cost) | ratio |");
  console.log("| --- | ---: | ---: | ---: |");
  const empty = await restingRss(20_000); // every component started and idle
  await fromEmpty(values.until === "fill" ? NaN : await directBaseline());
  if (values.until !== "fill") await afterRestart();
  if (values.until === undefined) {
    await steadyState();
    memoryRows(empty, await restingRss(20_000));
    log(`load average ${load()}`);
    await proxyStart();
    await classPages();
    await signIns();
  }
  console.log(`\nload average (1 min) ${load()} at the end`);
  console.log("\n## All figures\n");
  console.log("| measure | platform | baseline (the API server's own cost) | ratio |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  for (const line of notes) console.log(`\n${line}`);
});
