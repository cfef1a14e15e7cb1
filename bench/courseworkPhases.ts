/**
 * The coursework benchmark's measured run, shared by its kwok run and its real-node run
 * (bench/coursework.ts): in a namespace of its own, the operator as a process, a Template with
 * coursework and N students' Userlands (stopped: a stopped environment's copy runs on any node the
 * Template allows), then
 *   1. publish: an Assignment created → every student's Submission distributed;
 *   2. the deadline: the closing time set to now, for all N at once → every receipt written;
 * with each student's time (p50/p90), the operator's API requests by verb and resource per phase
 * (the API server's audit log), its CPU seconds and peak RSS, and the copy pods each phase ran
 * (count, and seen created → seen finished). Who finishes the copy pods (a kubelet stand-in, or a
 * real node's kubelet running the copy image) is the caller's choice.
 */
import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { paths } from "../api/kubePaths.ts";
import {
  assignmentsPath,
  submissionsPath,
  templatesPath,
  userlandsPath,
  type Submission,
  type TemplateSpec,
} from "../api/v1alpha1/index.ts";
import type { ClusterAccess } from "../cluster/harness/connect.ts";
import { operatorKubeconfig, spawnOperator, waitForLeadership } from "../cluster/harness/operator.ts";
import { Informer } from "../lib/informer.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import { auditOffset, requestsByVerb } from "./audit.ts";
import { sampleUsage, type Usage } from "./processUsage.ts";
import { percentile } from "./stats.ts";

/** Students set up (and, in the baseline and the stand-in, written) at once: as many as the operator's workers. */
export const IN_FLIGHT = 50;
export const log = (line: string) => console.error(`[coursework] ${line}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

export async function newNamespace(client: KubeRest, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await client.create("/api/v1/namespaces", { metadata: { name } });
  return name;
}

export const studentNames = (n: number) => [...Array(n).keys()].map((i) => `student-${i}`);

/** Resolves when `done()` holds, checked on every call of the returned `check`; fails after `timeoutMs`. */
function until(
  what: string,
  timeoutMs: number,
  done: () => boolean,
): { check: () => void; reached: Promise<void> } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const reached = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  const timer = setTimeout(
    () => reject(new Error(`${what}: not done within ${timeoutMs / 1000} s (BENCH_PHASE_TIMEOUT_S)`)),
    timeoutMs,
  );
  const check = () => {
    if (done()) {
      clearTimeout(timer);
      resolve();
    }
  };
  check();
  return { check, reached };
}

/**
 * The copy pods one phase ran: how many by job, how many failed, each one's seen created → seen
 * finished (s), and its container's run as the kubelet reports it (started → finished, whole seconds).
 */
export interface CopyPods {
  byJob: Map<string, number>;
  /** The most copy pods (any job) there were at once, created and not yet finished. */
  maxAtOnce: number;
  failed: number;
  seconds: number[];
  containerSeconds: number[];
}

export interface Phase {
  seconds: number;
  p50: number;
  p90: number;
  requests: Map<string, number>;
  usage?: Usage;
  copyPods: CopyPods;
}

export interface CourseworkRun {
  setupSeconds: number;
  publish: Phase;
  deadline: Phase;
  /** With an autograder: the autograder added once every receipt is in → every hand-in graded. */
  grading?: Phase;
  /** The operator's warnings and Node's (failed reconciles are retried with back-off, which a run would then measure). */
  warnings: string[];
}

/** When each student's Submission first showed its release and its receipt (ms since the epoch). */
class Marks {
  readonly distributed = new Map<string, number>();
  readonly received = new Map<string, number>();
  readonly graded = new Map<string, number>();
  onChange: () => void = () => undefined;

  observe(s: Submission): void {
    const name = s.metadata.name ?? "";
    const now = Date.now();
    if (s.status?.distributedRelease === 1 && !this.distributed.has(name)) this.distributed.set(name, now);
    if (s.status?.receipt && !this.received.has(name)) this.received.set(name, now);
    if (s.status?.gradeAttempt && !this.graded.has(name)) this.graded.set(name, now);
    this.onChange();
  }
}

/** Watches the namespace's copy pods and books each one to the phase running when it appeared. */
class CopyPodWatch {
  private readonly seen = new Map<string, { at: number; phase: CopyPods; done: boolean }>();
  current: CopyPods = CopyPodWatch.empty();
  private open = 0;

  static empty(): CopyPods {
    return { byJob: new Map(), maxAtOnce: 0, failed: 0, seconds: [], containerSeconds: [] };
  }

  observe(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? "";
    let entry = this.seen.get(uid);
    if (!entry) {
      entry = { at: Date.now(), phase: this.current, done: false };
      this.seen.set(uid, entry);
      const job = pod.metadata?.labels?.["userland.dev/copy"] ?? "?";
      entry.phase.byJob.set(job, (entry.phase.byJob.get(job) ?? 0) + 1);
      this.open++;
      entry.phase.maxAtOnce = Math.max(entry.phase.maxAtOnce, this.open);
    }
    const phase = pod.status?.phase;
    if (!entry.done && (phase === "Succeeded" || phase === "Failed")) {
      entry.done = true;
      this.open--;
      entry.phase.seconds.push((Date.now() - entry.at) / 1000);
      if (phase === "Failed") entry.phase.failed++;
      const ran = pod.status?.containerStatuses?.[0]?.state?.terminated;
      if (ran?.startedAt && ran.finishedAt)
        entry.phase.containerSeconds.push(
          (new Date(ran.finishedAt).getTime() - new Date(ran.startedAt).getTime()) / 1000,
        );
    }
  }
}

function spread(marks: Map<string, number>, started: number): { p50: number; p90: number } {
  const times = [...marks.values()].map((t) => (t - started) / 1000).sort((a, b) => a - b);
  return { p50: percentile(times, 50), p90: percentile(times, 90) };
}

export interface RunOptions {
  client: KubeRest;
  cluster: ClusterAccess;
  auditLog: string;
  n: number;
  namespacePrefix: string;
  template: TemplateSpec;
  /** The Template's course folder the Assignment's source is in (its `week1` folder). */
  folder: string;
  operatorEnv: Record<string, string>;
  timeoutMs: number;
  /**
   * Run once the N Userlands are Stopped with their claims, before the first measured phase: e.g.
   * starting the kubelet stand-in, or writing the handout into the course folder. Returns its own
   * clean-up.
   */
  prepare: (ns: string) => Promise<() => Promise<void>>;
  /** A third phase: this autograder (a teachers-only course folder of the Template) grades every hand-in. */
  autograder?: { folder: string; image?: string };
}

/** The operator's work, measured: publish to `n` students, then close for all of them at once. */
export async function runCoursework(opts: RunOptions): Promise<CourseworkRun> {
  const { client, auditLog, n, timeoutMs } = opts;
  const ns = await newNamespace(client, opts.namespacePrefix);
  const { path, username } = await operatorKubeconfig(ns, opts.cluster);
  const operator = await spawnOperator(path, username, ns, {
    env: { LOG_LEVEL: "warn", OPERATOR_FREEZE_CACHE: "false", ...opts.operatorEnv },
  });
  const informers: { stop(): Promise<void> }[] = [];
  let unprepare: () => Promise<void> = () => Promise.resolve();
  try {
    await waitForLeadership(operator);
    const procs = [{ name: "operator", pid: operator.child.pid ?? 0 }];
    await client.create(templatesPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Template",
      metadata: { name: "lab" },
      spec: opts.template,
    });
    log(`${ns}: ${n} Userlands (stopped)…`);
    await pool(studentNames(n), IN_FLIGHT, (user) =>
      client.create(userlandsPath(ns), {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Userland",
        metadata: { name: user },
        spec: { user, templateName: "lab", enabled: false },
      }),
    );
    // A student's copy waits for their home claim: the set-up is done once all N are there and Stopped.
    const claims = () =>
      client
        .list<never>(paths.namespaced("", "v1", "persistentvolumeclaims", ns), { timeoutMs: 60_000 })
        .then((l) => l.items.length);
    const stopped = () =>
      client
        .list<{ status?: { phase?: string } }>(userlandsPath(ns), { timeoutMs: 60_000 })
        .then((l) => l.items.filter((u) => u.status?.phase === "Stopped").length);
    const setupStarted = Date.now();
    // n homes + the course folder's and the collection's claims.
    while ((await claims()) < n + 2 || (await stopped()) < n) {
      if (Date.now() - setupStarted > timeoutMs)
        throw new Error(`set-up: ${n} Userlands not Stopped with their home claims in time`);
      await sleep(500);
    }
    const setupSeconds = (Date.now() - setupStarted) / 1000;
    log(`${ns}: set-up done in ${setupSeconds.toFixed(1)} s`);
    unprepare = await opts.prepare(ns);
    await sleep(2000); // let the operator's queue drain before the first measured phase

    const copyPods = new CopyPodWatch();
    const pods = new Informer<V1Pod>(client, {
      path: podsPath(ns),
      labelSelector: "userland.dev/copy",
      log: createLogger("bench-copy-pods", "warn"),
    });
    pods.on("add", (p) => copyPods.observe(p));
    pods.on("update", (p) => copyPods.observe(p));
    informers.push(pods);
    await pods.start();
    const marks = new Marks();
    const submissions = new Informer<Submission>(client, {
      path: submissionsPath(ns),
      log: createLogger("bench-submissions", "warn"),
    });
    submissions.on("add", (s) => marks.observe(s));
    submissions.on("update", (s) => marks.observe(s));
    informers.push(submissions);
    await submissions.start();

    /** Runs `start`, waits until `done` holds, and measures what happened meanwhile. */
    const measure = async (
      what: string,
      done: () => boolean,
      marked: Map<string, number>,
      start: () => Promise<number>,
    ): Promise<Phase> => {
      log(`${ns}: ${what}…`);
      const offset = auditOffset(auditLog);
      const usage = sampleUsage(procs);
      const phasePods = CopyPodWatch.empty();
      copyPods.current = phasePods;
      const reached = until(what, timeoutMs, done);
      marks.onChange = reached.check;
      const started = await start();
      await reached.reached;
      const ended = Date.now();
      const phaseUsage = usage.stop()[0];
      await sleep(3000); // the audit log is written in batches of up to a second; late deletes land too
      return {
        seconds: (ended - started) / 1000,
        ...spread(marked, started),
        requests: requestsByVerb(auditLog, offset, ns, username),
        ...(phaseUsage ? { usage: phaseUsage } : {}),
        copyPods: phasePods,
      };
    };

    const publish = await measure(
      "publish: every Submission distributed",
      () => marks.distributed.size >= n,
      marks.distributed,
      async () => {
        const started = Date.now();
        await client.create(assignmentsPath(ns), {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Assignment",
          metadata: { name: "a1" },
          spec: {
            templateName: "lab",
            title: "Week 1",
            source: { folder: opts.folder, path: "week1" },
            deadline: "2099-01-01T00:00:00Z",
          },
        });
        return started;
      },
    );
    // The deadline, for everyone at once: the closing time is now.
    const deadline = await measure(
      "deadline: every receipt written",
      () => marks.received.size >= n,
      marks.received,
      async () => {
        const closing = new Date(Math.floor(Date.now() / 1000) * 1000);
        await client.patch(assignmentsPath(ns, "a1"), {
          spec: { deadline: closing.toISOString().replace(/\.\d+Z$/, "Z") },
        });
        return closing.getTime();
      },
    );
    // Grading, for everyone at once: the autograder added to the Assignment once every receipt is in.
    const grader = opts.autograder;
    const grading = grader
      ? await measure(
          "grading: every hand-in graded",
          () => marks.graded.size >= n,
          marks.graded,
          async () => {
            const started = Date.now();
            await client.patch(assignmentsPath(ns, "a1"), {
              spec: {
                autograder: {
                  folder: grader.folder,
                  path: "week1",
                  timeoutSeconds: 60,
                  ...(grader.image ? { image: grader.image } : {}),
                },
              },
            });
            return started;
          },
        )
      : undefined;
    const warnings = operator
      .logs()
      .split("\n")
      // Its own warnings, and Node's process warnings (a TimeoutOverflowWarning was one: workqueue.ts).
      .filter((l) => l.includes('"level":"warn"') || /\(node:\d+\) \w*Warning/.test(l));
    return { setupSeconds, publish, deadline, ...(grading ? { grading } : {}), warnings };
  } finally {
    for (const i of informers) await i.stop();
    await unprepare();
    await operator.stop("SIGTERM");
  }
}

export const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "–");
export const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
export const breakdown = (m: Map<string, number>) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
