/**
 * The class-start rush: `node bench/rush.ts [--students 100,300] [--variants auto,imported]
 * [--window 10]` (`npm run bench:rush`; `--help`).
 *
 * Starts the local platform (dev/platform.ts: kwok control plane, every component a process of
 * its own, the local OpenID provider in a process of its own too, demo environments standing in
 * for IDEs through the proxy's upstream override file). For each class size N:
 *   - baselines: the demo Template's pod spec as N bare Pods created at once, create → Ready; and
 *     the Deployments and Services the operator would write, created at once, create → available;
 *   - per variant, N students start their sign-in spread evenly over the window (10 s), through
 *     the real flow (proxy → auth → the provider's form → auth's callback → proxy), then do what
 *     the proxy's pages tell a browser to do until their own environment's first byte:
 *       auto: nobody has a Userland yet; the auth service provisions one at first login;
 *       imported: a teacher imported the roster beforehand and every environment is Ready.
 * Printed: sign-in → first proxied byte p50/p95/max, beside it how many students saw a page that is
 * neither the starting page nor their environment (issue 43: there must be none), where the time
 * goes (each step's time since the student's sign-in started, from watch events), each process's
 * CPU seconds and peak RSS, the API server's requests by identity (its audit log) and the
 * operator's queue wait. At the end,
 * after an idle spell (`--idle`), each process's RSS beside its RSS at rest: the run fails when
 * the auth service, the user-manager or the proxy keeps more than 1.5x (issue 32).
 *
 * With `--classes K` (issue 31, the 8 a.m. rush across classes) each size is one rush instead of
 * one per variant: the students belong to K classes; half of each class was imported beforehand,
 * by one roster import per class (K teachers at once), the other half is auto-provisioned; all of
 * them start signing in, interleaved, within the window, and the two halves are reported apart.
 * The platform then serves every namespace (USERLAND_WATCH_NAMESPACES "*", as bench:scale). The
 * classes share the demo Template and namespace: auto-provisioning creates the one default
 * Template's environment, and the proxy serves one Template per host.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { V1PodSpec } from "@kubernetes/client-node";
import { userlandNameFor } from "../api/naming.ts";
import { templatesPath, userlandsPath, type Template } from "../api/v1alpha1/index.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { DEMO_TEMPLATE, NAMESPACE, startPlatform } from "../dev/platform.ts";
import { k8s } from "../lib/kube.ts";
import { auditOffset, requestsSince, type RequestCount } from "./audit.ts";
import { timeDeploymentsReady, timePodsReady } from "./pods.ts";
import { identityName } from "./identities.ts";
import { childProcesses, rssNow, sampleUsage, type Proc, type Usage } from "./processUsage.ts";
import { STEPS, Timeline } from "./rushTimeline.ts";
import { percentile } from "./stats.ts";
import { StrandedError, StudentClient } from "./studentClient.ts";
import { runBench } from "./run.ts";

const VARIANTS = ["auto", "imported"] as const;
/**
 * The platform's own services, after the rushes and an idle spell, may hold at most this times
 * their RSS at rest (the soak's rule for the proxy, docs/decisions/0003): a rush must not leave
 * the auth service or the user-manager permanently bigger.
 */
const IDLE_RSS_SHARE = 1.5;
const MEMORY_CHECKED = ["auth", "user-manager", "proxy"];
type Variant = (typeof VARIANTS)[number];

const usage = `usage: node bench/rush.ts [--students 100,300] [--variants auto,imported] [--classes 0] [--window 10] [--timeout 600] [--idle 60] [--no-baselines]
  --students  class sizes, comma-separated (default 100,300); with --classes, all students of the K classes
  --variants  auto (provisioned at first login), imported (roster imported and Ready beforehand)
  --classes   K > 0: one rush per size across K classes, half of each imported (one roster import
              per class), half auto-provisioned, all signing in within the window; --variants is
              then ignored (default 0; env BENCH_RUSH_CLASSES)
  --window    seconds over which the students start signing in (default 10)
  --timeout   seconds one rush may take before it counts as failed (default 600)
  --no-baselines  no bare Pods or direct Deployments before each rush (a run at 1,000 bounded in time;
              their figures at 100–300: docs/capacity.md)
  --idle      seconds left idle after the last rush before each component's RSS is read again
              (default 60; the platform's services must then be within ${IDLE_RSS_SHARE}x their RSS at rest)`;

const { values } = parseArgs({
  options: {
    students: { type: "string", default: "100,300" },
    variants: { type: "string", default: VARIANTS.join(",") },
    window: { type: "string", default: "10" },
    classes: { type: "string", default: process.env.BENCH_RUSH_CLASSES ?? "0" },
    timeout: { type: "string", default: "600" },
    idle: { type: "string", default: "60" },
    "no-baselines": { type: "boolean", default: false },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const sizes = values.students.split(",").map(Number);
const variants = values.variants.split(",");
const windowMs = Number(values.window) * 1000;
const timeoutMs = Number(values.timeout) * 1000;
const idleMs = Number(values.idle) * 1000;
const classes = Number(values.classes);
if (
  !Number.isInteger(classes) ||
  classes < 0 ||
  sizes.some((n) => n < 2 * classes) ||
  sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 1000) ||
  variants.some((v) => !(VARIANTS as readonly string[]).includes(v)) ||
  !(windowMs >= 0) ||
  !(timeoutMs > 0) ||
  !(idleMs >= 0)
) {
  console.error(usage);
  process.exit(2);
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)}`;
const firstLine = (error: unknown) =>
  String((error as Error).message ?? error)
    .split("\n")[0]
    ?.slice(0, 200);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => console.error(`[rush] ${line}`);

interface Student {
  user: string;
  started: number;
  signedIn: number;
  proxyReady: number | undefined;
  firstByte: number;
  /** The proxy's pages the student saw before the environment: status, and whether the starting page. */
  pages: { status: number; starting: boolean }[];
}

interface Measured {
  label: string;
  n: number;
  /** Sign-in → first byte (rush) or create → Ready (baseline), ascending, ms. */
  times: number[];
  /** Each step's time since the student's start, ascending, ms. */
  steps: Map<string, number[]>;
  usage: Usage[];
  requests: Map<string, RequestCount>;
  wallMs: number;
  notes: string[];
  /** Another row's label when this row is a part of that row's rush (its processes and requests). */
  partOf?: string;
  /**
   * Students who saw a page that is neither the starting page nor their environment (issue 43: the
   * target is none), and those pages by status; absent for baselines, which show no pages.
   */
  wrongPages?: { students: number; byStatus: Map<number, number> };
}

const dir = join(repoRoot, ".userland", "bench-rush");
const platform = await startPlatform({
  dir,
  log: (line) => log(`platform: ${line}`),
  ...(classes > 0 ? { watchNamespaces: ["*"] } : {}),
  identityProviderProcess: true,
});
const kc = new k8s.KubeConfig();
kc.loadFromFile(platform.controlPlane.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const timeline = new Timeline(kc, platform.rest, NAMESPACE, join(dir, "upstreams.json"));
const proxyUrl = new URL(platform.url);
const portFor = (url: URL) => (url.hostname === "127.0.0.1" ? Number(url.port) : undefined);

async function cleanup(): Promise<void> {
  await timeline.stop().catch(() => undefined);
  await platform.stop();
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

/** Everything measured around `step`: CPU and peak RSS per process, API requests by identity. */
async function measure<T>(
  procs: readonly Proc[],
  namespace: string,
  step: (done: () => void) => Promise<T>,
): Promise<{
  result: T;
  usage: Usage[];
  requests: Map<string, RequestCount>;
  wallMs: number;
  load: string;
}> {
  // The machine's load beside the numbers: other work on a 2-core machine changes them a lot.
  const loadBefore = loadavg()[0] ?? NaN;
  const offset = auditOffset(platform.controlPlane.auditLog);
  const sampler = sampleUsage([...procs, { name: "bench (students, demos)", pid: process.pid }]);
  const started = performance.now();
  let usage: Usage[] | undefined;
  let wallMs = 0;
  let until = Infinity;
  const done = () => {
    wallMs = performance.now() - started;
    until = Math.min(until, Date.now());
    usage ??= sampler.stop();
  };
  const result = await step(done).finally(done);
  await sleep(2000); // the audit log is written in batches of up to a second
  const requests = new Map<string, RequestCount>();
  for (const [user, count] of requestsSince(platform.controlPlane.auditLog, offset, namespace, until)) {
    const name = identityName(user, platform);
    const sum = requests.get(name) ?? { total: 0, writes: 0 };
    requests.set(name, { total: sum.total + count.total, writes: sum.writes + count.writes });
  }
  const load = `load average (1 min) ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? NaN).toFixed(1)} after, on ${availableParallelism()} CPUs`;
  return { result, usage: usage ?? [], requests, wallMs, load };
}

/** The operator's work-queue and reconcile histograms (sum and count), from its /metrics. */
async function operatorQueue(): Promise<Record<string, number>> {
  const line = readFileSync(join(platform.logsDir, "operator.log"), "utf8")
    .split("\n")
    .find((l) => l.includes('"operator started"'));
  const http = line ? (JSON.parse(line) as { http?: string }).http : undefined;
  if (!http) return {};
  const text = await (await fetch(`${http}/metrics`)).text();
  const out: Record<string, number> = {};
  const histograms =
    /^(userland_operator_(?:workqueue_queue_duration_seconds|reconcile_duration_seconds)_(?:sum|count))(?:\{([^}]*)\})? (\S+)$/gm;
  for (const m of text.matchAll(histograms)) {
    // Template reconciles are kept apart: the line below reports Userland ones.
    const key = `${m[1]}${m[2]?.includes('kind="Template"') ? ":Template" : ""}`;
    out[key] = (out[key] ?? 0) + Number(m[3]);
  }
  return out;
}

function describeQueue(before: Record<string, number>, after: Record<string, number>): string {
  const d = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
  const q = "userland_operator_workqueue_queue_duration_seconds";
  const r = "userland_operator_reconcile_duration_seconds";
  const mean = (k: string) => (d(`${k}_count`) > 0 ? (d(`${k}_sum`) / d(`${k}_count`)) * 1000 : NaN);
  return (
    `operator: ${d(`${q}_count`)} keys taken from the queue, mean wait ${mean(q).toFixed(0)} ms; ` +
    `${d(`${r}_count`)} Userland reconciles, mean ${mean(r).toFixed(0)} ms`
  );
}

/**
 * Durations (ms, ascending) the components logged for their requests since `since` (ms since the
 * epoch): the user-manager's and the proxy's request lines carry `ms`.
 */
function loggedTimes(component: string, since: number, match: (line: LogLine) => boolean): number[] {
  const times: number[] = [];
  for (const text of readFileSync(join(platform.logsDir, `${component}.log`), "utf8").split("\n")) {
    if (!text.startsWith("{")) continue;
    const line = JSON.parse(text) as LogLine;
    if (Date.parse(line.time) >= since && typeof line.ms === "number" && match(line)) times.push(line.ms);
  }
  return times.sort((a, b) => a - b);
}

interface LogLine {
  time: string;
  ms?: number;
  method?: string;
  route?: string;
  path?: string;
  status?: number;
  outcome?: string;
}

function describeTimes(what: string, times: number[]): string {
  if (times.length === 0) return `${what}: none`;
  return `${what}: ${times.length}, p50 ${percentile(times, 50).toFixed(0)} ms, p95 ${percentile(times, 95).toFixed(0)} ms, max ${(times.at(-1) ?? NaN).toFixed(0)} ms`;
}

async function deleteAll(names: readonly string[]): Promise<void> {
  for (let i = 0; i < names.length; i += 20)
    await Promise.all(
      names
        .slice(i, i + 20)
        .map((name) => platform.rest.delete(userlandsPath(NAMESPACE, name)).catch(() => undefined)),
    );
  const deadline = performance.now() + 10 * 60_000;
  for (;;) {
    const left = timeline.remaining();
    if (left.userlands === 0 && left.pods === 0) return;
    if (performance.now() > deadline) throw new Error(`clean-up: still ${JSON.stringify(left)}`);
    await sleep(500);
  }
}

/** A teacher imports the class roster (the user-manager's roster API) and waits until every one is Ready. */
async function importRoster(users: readonly string[]): Promise<number> {
  const started = performance.now();
  const token = await platform.token(platform.teacher);
  const response = await fetch(`${platform.userManagerUrl}/api/v1/rosters/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ templateName: DEMO_TEMPLATE, users }),
  });
  if (!response.ok) throw new Error(`roster import: ${response.status} ${await response.text()}`);
  const names = users.map((user) => userlandNameFor(user, DEMO_TEMPLATE));
  while (timeline.readyAndPublished(names) < names.length) {
    if (performance.now() - started > timeoutMs) throw new Error("roster import: not all Ready in time");
    await sleep(250);
  }
  return performance.now() - started;
}

/**
 * One rush of n students: of one variant, or (`classes`) of the K classes, half of each imported
 * beforehand and half auto-provisioned, interleaved. One row per variant present; the second row
 * of a `classes` rush shares the first's processes and API requests.
 */
async function rush(variant: Variant | "classes", n: number, procs: readonly Proc[]): Promise<Measured[]> {
  const roster = Array.from({ length: n }, (_, i): { user: string; cls: number; group: Variant } =>
    variant === "classes"
      ? {
          user: `c${i % classes}-${n}-${i}`,
          cls: i % classes,
          group: Math.floor(i / classes) % 2 === 0 ? "imported" : "auto",
        }
      : { user: `${variant}-${n}-${i}`, cls: 0, group: variant },
  );
  const users = roster.map((r) => r.user);
  const groupOf = new Map(roster.map((r) => [r.user, r.group]));
  const notes: string[] = [];
  const imported = roster.filter((r) => r.group === "imported");
  if (imported.length > 0) {
    // Node 20 has no Map.groupBy.
    const byClass = new Map<number, typeof imported>();
    for (const r of imported) byClass.set(r.cls, [...(byClass.get(r.cls) ?? []), r]);
    log(`N=${n} ${variant}: importing ${byClass.size} roster(s) of ${imported.length} students at once`);
    const times = await Promise.all([...byClass.values()].map((rs) => importRoster(rs.map((r) => r.user))));
    notes.push(
      `roster import${byClass.size > 1 ? `s (${byClass.size} classes at once)` : ""} → all ${imported.length} Ready and published: ${s(Math.max(...times))}`,
    );
    // The proxy re-reads the override file once a second: the environments are there before class.
    await sleep(3000);
  }
  log(`N=${n} ${variant}: students signing in over ${windowMs / 1000} s`);
  const queueBefore = await operatorQueue();
  const since = Date.now();
  const networkErrors: string[] = [];
  const failures: string[] = [];
  /** The pages of students left on a page with nothing to follow (an error page): wrong pages too. */
  const stranded = new Map<string, Student["pages"]>();
  const { result, usage, requests, wallMs, load } = await measure(procs, NAMESPACE, async (done) => {
    const students = await Promise.all(
      users.map(async (user, i): Promise<Student | undefined> => {
        await sleep((i * windowMs) / n);
        const client = new StudentClient(portFor);
        const started = performance.now();
        // A student who cannot get in is counted and reported, not the end of the measurement.
        const landed = await client.signIn(proxyUrl, user).catch((error: unknown) => {
          failures.push(`${user}: sign-in: ${firstLine(error)}`);
          return undefined;
        });
        if (!landed) return undefined;
        const signedIn = performance.now();
        const owner = `<span id="owner">${user}</span>`;
        const visit = await client
          .openLikeBrowser(proxyUrl, (a) => a.status === 200 && a.body.includes(owner), timeoutMs, landed)
          .catch((error: unknown) => {
            failures.push(`${user}: opening the environment: ${firstLine(error)}`);
            if (error instanceof StrandedError)
              stranded.set(
                user,
                error.pages.map(({ status, starting }) => ({ status, starting })),
              );
            return undefined;
          });
        networkErrors.push(...client.networkErrors);
        if (!visit) return undefined;
        return {
          user,
          started,
          signedIn,
          proxyReady: visit.proxyReadyAt,
          firstByte: visit.answer.firstByteAt,
          pages: visit.pages.map(({ status, starting }) => ({ status, starting })),
        };
      }),
    );
    done();
    return students.filter((st) => st !== undefined);
  });
  if (failures.length > 0)
    notes.push(`FAILED: ${failures.length} of ${n} students, e.g.\n  ${failures.slice(0, 3).join("\n  ")}`);
  notes.push(load, describeQueue(queueBefore, await operatorQueue()));
  notes.push(
    describeTimes(
      "user-manager POST /api/v1/userlands (auto-provisioning)",
      loggedTimes("user-manager", since, (l) => l.method === "POST" && l.route === "/api/v1/userlands"),
    ),
    describeTimes(
      "proxy: requests forwarded to an environment",
      loggedTimes("proxy", since, (l) => l.outcome === "proxied"),
    ),
    describeTimes(
      "proxy: its own pages and /_userland/status",
      loggedTimes("proxy", since, (l) => l.outcome !== "proxied"),
    ),
  );
  const pages = new Map<number, number>();
  for (const student of result)
    for (const { status } of student.pages) pages.set(status, (pages.get(status) ?? 0) + 1);
  notes.push(
    `proxy pages shown before the environment: ${[...pages].map(([status, count]) => `${count}× ${status}`).join(", ") || "none"}`,
  );
  if (networkErrors.length > 0) notes.push(`failed requests, asked again: ${networkErrors.length}`);

  const rows: Measured[] = [];
  for (const group of VARIANTS) {
    const students = result.filter((st) => groupOf.get(st.user) === group);
    if (!roster.some((r) => r.group === group)) continue;
    const label = variant === "classes" ? `${group}, of ${classes} classes` : group;
    const first = rows[0];
    rows.push({
      label,
      n: roster.filter((r) => r.group === group).length,
      ...stepsOf(students),
      wrongPages: wrongPagesOf([
        ...students.map((st) => st.pages),
        ...[...stranded].filter(([user]) => groupOf.get(user) === group).map(([, pages]) => pages),
      ]),
      usage,
      requests,
      wallMs,
      notes: first ? [] : notes,
      ...(first ? { partOf: first.label } : {}),
    });
  }
  for (const m of rows)
    log(`N=${n} ${m.label}: p50 ${s(percentile(m.times, 50))}, max ${s(m.times.at(-1) ?? NaN)}`);
  log(`N=${n} ${variant}: cleaning up`);
  await deleteAll(users.map((user) => userlandNameFor(user, DEMO_TEMPLATE)));
  return rows;
}

/**
 * How many of the students (each the pages they saw: who reached their environment, and who was
 * left on an error page) saw a page that is neither the starting page nor their environment.
 */
function wrongPagesOf(students: readonly Student["pages"][]): NonNullable<Measured["wrongPages"]> {
  const byStatus = new Map<number, number>();
  let saw = 0;
  for (const pages of students) {
    const wrong = pages.filter((p) => !p.starting);
    if (wrong.length > 0) saw++;
    for (const { status } of wrong) byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }
  return { students: saw, byStatus };
}

/** Sign-in → first byte (ascending) and each step's time since the student's start. */
function stepsOf(students: readonly Student[]): Pick<Measured, "times" | "steps"> {
  const steps = new Map<string, number[]>([["signed in", []]]);
  for (const step of STEPS) steps.set(step, []);
  steps.set("proxy says ready", []);
  for (const student of students) {
    const since = (at: number | undefined) => (at === undefined ? undefined : at - student.started);
    const add = (key: string, ms: number | undefined) => {
      if (ms !== undefined) steps.get(key)?.push(ms);
    };
    add("signed in", since(student.signedIn));
    const at = timeline.stepsOf(userlandNameFor(student.user, DEMO_TEMPLATE));
    for (const step of STEPS) add(step, since(at[step]));
    add("proxy says ready", since(student.proxyReady));
  }
  for (const list of steps.values()) list.sort((a, b) => a - b);
  const times = students.map((st) => st.firstByte - st.started).sort((a, b) => a - b);
  return { times, steps };
}

/** A baseline: N objects created directly by a client, timed to Ready, measured like a rush. */
async function timedBaseline(
  label: string,
  n: number,
  procs: readonly Proc[],
  namespace: string,
  run: (done: () => void) => Promise<number[]>,
): Promise<Measured> {
  log(`N=${n} baseline: ${label}`);
  const { result, usage, requests, wallMs, load } = await measure(procs, namespace, run);
  return { label, n, times: result, steps: new Map(), usage, requests, wallMs, notes: [load] };
}

function baseline(n: number, procs: readonly Proc[], spec: V1PodSpec): Promise<Measured> {
  return timedBaseline("bare Pods created directly", n, procs, `rush-pods-${n}`, (done) =>
    timePodsReady(core, spec, { namespace: `rush-pods-${n}`, n, afterReady: done }),
  );
}

function deploymentBaseline(n: number, procs: readonly Proc[], template: Template): Promise<Measured> {
  return timedBaseline("Deployments + Services created directly", n, procs, `rush-deployments-${n}`, (done) =>
    timeDeploymentsReady(platform.rest, template, {
      namespace: `rush-deployments-${n}`,
      n,
      afterReady: done,
    }),
  );
}

/** The summary table of `rows`, then (with `details`) each one's steps, processes and requests. */
function print(rows: Measured[], details = true): void {
  const row = (...cells: (string | number)[]) => console.log(`| ${cells.join(" | ")} |`);
  console.log();
  row("N", "what", "done", "p50", "p95", "max", "wrong pages", "wall", "API requests (writes)");
  row("---:", "---", "---:", "---:", "---:", "---:", "---", "---:", "---:");
  for (const m of rows) {
    let total = 0;
    let writes = 0;
    for (const c of m.requests.values()) {
      total += c.total;
      writes += c.writes;
    }
    row(
      m.n,
      m.label,
      m.times.length,
      s(percentile(m.times, 50)),
      s(percentile(m.times, 95)),
      s(m.times.at(-1) ?? NaN),
      m.wrongPages === undefined
        ? "—"
        : `${m.wrongPages.students} of ${m.n}${
            m.wrongPages.byStatus.size > 0
              ? ` (${[...m.wrongPages.byStatus].map(([status, count]) => `${count}× ${status}`).join(", ")})`
              : ""
          }`,
      s(m.wallMs),
      m.partOf ? `the same rush as ${m.partOf}` : `${total} (${writes})`,
    );
  }
  if (!details) return;
  for (const m of rows) {
    console.log(`\n### N=${m.n}, ${m.label}\n`);
    if (m.steps.size > 0) {
      console.log("Each step, time since the student's sign-in started:\n");
      row("step", "p50", "p95", "max", "count");
      row("---", "---:", "---:", "---:", "---:");
      for (const [step, list] of m.steps)
        row(step, s(percentile(list, 50)), s(percentile(list, 95)), s(list.at(-1) ?? NaN), list.length);
      row(
        "first proxied byte",
        s(percentile(m.times, 50)),
        s(percentile(m.times, 95)),
        s(m.times.at(-1) ?? NaN),
        m.times.length,
      );
      console.log();
    }
    if (m.partOf) {
      console.log(`Processes, API requests and notes: the same rush as ${m.partOf}.`);
      continue;
    }
    row("process", "CPU s", "peak RSS MiB");
    row("---", "---:", "---:");
    for (const u of m.usage) row(u.name, u.cpuSeconds.toFixed(1), mib(u.peakRssBytes));
    console.log();
    row("API identity", "requests", "writes");
    row("---", "---:", "---:");
    for (const [name, c] of [...m.requests].sort((a, b) => b[1].total - a[1].total))
      row(name, c.total, c.writes);
    for (const note of m.notes) console.log(`\n${note}`);
  }
}

/**
 * RSS at rest before the first rush, the peak of every rush, and after the idle spell; fails the
 * run when one of the platform's services stays above IDLE_RSS_SHARE times its RSS at rest.
 */
function printMemory(procs: readonly Proc[], atRest: number[], rows: Measured[], afterIdle: number[]): void {
  const row = (...cells: (string | number)[]) => console.log(`| ${cells.join(" | ")} |`);
  console.log(`\n## Memory: at rest, peak of the rushes, ${idleMs / 1000} s after the last\n`);
  row("process", "RSS at rest MiB", "peak MiB", "after idle MiB", "after idle / at rest");
  row("---", "---:", "---:", "---:", "---:");
  const over: string[] = [];
  procs.forEach((p, i) => {
    const rest = atRest[i] ?? 0;
    const idle = afterIdle[i] ?? 0;
    const peak = Math.max(
      rest,
      idle,
      ...rows.flatMap((m) => m.usage.filter((u) => u.name === p.name).map((u) => u.peakRssBytes)),
    );
    const share = rest > 0 ? idle / rest : NaN;
    const checked = MEMORY_CHECKED.includes(p.name);
    row(
      p.name,
      mib(rest),
      mib(peak),
      mib(idle),
      `${share.toFixed(2)}x${checked ? ` (≤ ${IDLE_RSS_SHARE}x)` : ""}`,
    );
    if (checked && !(share <= IDLE_RSS_SHARE))
      over.push(`${p.name}: ${mib(idle)} MiB after idle, ${share.toFixed(2)}x its ${mib(rest)} MiB at rest`);
  });
  if (over.length > 0)
    throw new Error(
      `memory not given back after the rushes (allowed ${IDLE_RSS_SHARE}x): ${over.join("; ")}`,
    );
}

await runBench("bench/rush.ts", cleanup, async () => {
  await timeline.start();
  // The proxy answers once it listens (it redirects to the sign-in).
  for (const deadline = performance.now() + 60_000; ;) {
    const up = await fetch(proxyUrl, { redirect: "manual" }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (performance.now() > deadline) throw new Error("the proxy does not answer");
    await sleep(200);
  }
  const procs = childProcesses();
  log(`measuring ${procs.map((p) => `${p.name} (${p.pid})`).join(", ")}`);
  const template = await platform.rest.get<Template>(templatesPath(NAMESPACE, DEMO_TEMPLATE));
  const spec = template.spec.template.spec;
  if (!spec) throw new Error("the demo Template has no pod spec");
  const rows: Measured[] = [];
  console.log(
    `\n# Class-start rush on the local platform (kwok control plane, components as processes)\n\nstudents start signing in evenly over ${windowMs / 1000} s${classes > 0 ? `, of ${classes} classes (half of each imported, half auto-provisioned)` : ""}`,
  );
  const atRest = rssNow(procs);
  for (const n of sizes) {
    // Each measurement printed as soon as it is done: a long run cut short still reports.
    const measured = (m: Measured) => {
      print([m]);
      rows.push(m);
    };
    if (!values["no-baselines"]) {
      measured(await baseline(n, procs, spec));
      measured(await deploymentBaseline(n, procs, template));
    }
    if (classes > 0) for (const m of await rush("classes", n, procs)) measured(m);
    else
      for (const variant of variants as Variant[]) for (const m of await rush(variant, n, procs)) measured(m);
  }
  console.log("\n## All measurements");
  print(rows, false);
  log(`idle for ${idleMs / 1000} s, then each component's RSS`);
  await sleep(idleMs);
  printMemory(procs, atRest, rows, rssNow(procs));
  console.log(
    "\nsign-in → first proxied byte: from the student's first request (the proxy, which sends it to the" +
      " auth service and on to the provider's form) to the first byte of their own environment's page" +
      " through the proxy, doing what the proxy's pages make a browser do (starting page: poll every" +
      " second; other pages: meta refresh). Baselines, no platform: bare Pods, create → Ready;" +
      " the operator's Deployments and Services written by a client, create → available." +
      " API requests: the audit log, Lease renewals left out.",
  );
});
