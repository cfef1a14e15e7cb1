/**
 * Coursework benchmark on a private kwok control plane (loopback only):
 *   node bench/coursework.ts [N]        (default 300 students; or BENCH_STUDENTS=N)
 * A Template with coursework (home volume, a course folder, a collection), N students' Userlands
 * (stopped: a stopped environment's copy runs anywhere) and the operator as a process. Measured:
 *   1. publish: an Assignment created → every student's Submission distributed;
 *   2. the deadline: the closing time set to now, for all N at once → every receipt written;
 * with each student's time (p50/p90), the operator's API requests by verb and resource per phase
 * (the API server's audit log), its CPU seconds and peak RSS. Baseline: the same Submissions, copy
 * pods and status writes made directly by this process, without the operator.
 * kwok runs no containers: a stand-in for the kubelet here finishes each copy pod as soon as it is
 * seen, writing the terminated status and the JSON result coursework/copy.ts would write. Each phase
 * must end within BENCH_PHASE_TIMEOUT_S (default 600) seconds, or the run fails saying which.
 * BENCH_AUDIT_COPY=<file> keeps a copy of the API server's audit log (the control plane's folder is
 * removed at the end), for reading which requests went where.
 */
import { randomBytes } from "node:crypto";
import { copyFileSync } from "node:fs";
import type { V1Pod } from "@kubernetes/client-node";
import { submissionNameFor } from "../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  templatesPath,
  userlandsPath,
  type Submission,
  type TemplateSpec,
} from "../api/v1alpha1/index.ts";
import type { ClusterAccess } from "../cluster/harness/connect.ts";
import { privateControlPlane, startAndConnect } from "../cluster/harness/privateControlPlane.ts";
import { Informer } from "../lib/informer.ts";
import { paths } from "../api/kubePaths.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import {
  operatorKubeconfig,
  spawnOperator,
  waitForLeadership,
  type OperatorProcess,
} from "../cluster/harness/operator.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import { auditOffset, requestsByVerb } from "./audit.ts";
import { sampleUsage, type Usage } from "./processUsage.ts";
import { runBench } from "./run.ts";
import { percentile } from "./stats.ts";

const n = Number(process.argv[2] ?? process.env.BENCH_STUDENTS ?? 300);
if (!Number.isInteger(n) || n < 1)
  throw new Error("the number of students (argument or BENCH_STUDENTS) must be a positive integer");
const PHASE_TIMEOUT_MS = Number(process.env.BENCH_PHASE_TIMEOUT_S ?? 600) * 1000;
const IMAGE = "registry.invalid/userland-copy:bench"; // kwok pulls nothing
const IN_FLIGHT = 50;
const SHA = (c: string) => c.repeat(64);
const log = (line: string) => console.error(`[coursework] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };
const courseworkSpec: TemplateSpec = simpleTemplateSpec("registry.invalid/ide:1", {
  volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
  coursework: {
    home: { volume: "home", mountPath: "/home/student" },
    folders: [{ name: "course", mountPath: "/srv/course", pvcSpec: claimSpec }],
    collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
  },
});

const controlPlane = privateControlPlane("bench-coursework", { nodes: 1 });
let rest: KubeRest | undefined;
let operator: OperatorProcess | undefined;
const informers: Informer<never>[] = [];

const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** Resolves when `done()` holds, checked on every call of the returned `check`; fails after the bound. */
function until(what: string, done: () => boolean): { check: () => void; reached: Promise<void> } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const reached = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  const timer = setTimeout(
    () => reject(new Error(`${what}: not done within ${PHASE_TIMEOUT_MS / 1000} s (BENCH_PHASE_TIMEOUT_S)`)),
    PHASE_TIMEOUT_MS,
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

/** A pod's terminated status as the kubelet writes it: copy.ts's JSON result as the termination message. */
function terminated(result: object) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    status: {
      phase: "Succeeded",
      containerStatuses: [
        {
          name: "copy",
          image: IMAGE,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: { exitCode: 0, message: JSON.stringify(result), startedAt: now, finishedAt: now },
          },
        },
      ],
    },
  };
}

/** What copy.ts prints for each job (coursework/copy.ts): a successful copy of one small file. */
const RESULTS: Record<string, object> = {
  publish: { files: [{ path: "a.py", bytes: 3, sha256: SHA("1") }], bytes: 3, sha256: SHA("a"), skipped: [] },
  distribute: {
    revision: SHA("a"),
    files: 1,
    written: ["a.py"],
    updated: [],
    unchanged: 0,
    kept: [],
    skipped: [],
  },
  handin: { files: [{ path: "a.py", bytes: 3, sha256: SHA("1") }], bytes: 3, sha256: SHA("b"), skipped: [] },
};

/**
 * THE KUBELET STAND-IN. kwok never runs a container, so a copy pod would never finish: this watches
 * the namespace's copy pods and, as soon as one appears, writes what the kubelet would once copy.ts
 * exited 0 (phase Succeeded, the container terminated, copy.ts's result as its message). Its own
 * requests are this process's, not the operator's, so they are not in the operator's counts.
 */
async function kubeletStandIn(client: KubeRest, ns: string): Promise<void> {
  const pods = new Informer<V1Pod>(client, {
    path: podsPath(ns),
    labelSelector: "userland.dev/copy",
    log: createLogger("bench-kubelet", "warn"),
  });
  const finished = new Set<string>();
  const queue: V1Pod[] = [];
  let running = 0;
  const pump = () => {
    while (running < IN_FLIGHT && queue.length > 0) {
      const pod = queue.shift() as V1Pod;
      running++;
      const job = pod.metadata?.labels?.["userland.dev/copy"] ?? "";
      client
        .patch(podsPath(ns, pod.metadata?.name, "status"), terminated(RESULTS[job] ?? {}))
        .catch((e: unknown) => log(`stand-in: ${pod.metadata?.name}: ${String(e)}`))
        .finally(() => {
          running--;
          pump();
        });
    }
  };
  const onPod = (pod: V1Pod) => {
    const uid = pod.metadata?.uid ?? "";
    const phase = pod.status?.phase;
    if (finished.has(uid) || pod.metadata?.deletionTimestamp || phase === "Succeeded" || phase === "Failed")
      return;
    finished.add(uid);
    queue.push(pod);
    pump();
  };
  pods.on("add", onPod);
  pods.on("update", (pod) => onPod(pod));
  informers.push(pods as unknown as Informer<never>);
  await pods.start();
}

interface Phase {
  seconds: number;
  p50: number;
  p90: number;
  requests: Map<string, number>;
  usage?: Usage;
}

/** When each student's Submission first showed its release and its receipt (ms since the epoch). */
class Marks {
  readonly distributed = new Map<string, number>();
  readonly received = new Map<string, number>();
  onChange: () => void = () => undefined;

  observe(s: Submission): void {
    const name = s.metadata.name ?? "";
    const now = Date.now();
    if (s.status?.distributedRelease === 1 && !this.distributed.has(name)) this.distributed.set(name, now);
    if (s.status?.receipt && !this.received.has(name)) this.received.set(name, now);
    this.onChange();
  }
}

function spread(marks: Map<string, number>, started: number): { p50: number; p90: number } {
  const times = [...marks.values()].map((t) => (t - started) / 1000).sort((a, b) => a - b);
  return { p50: percentile(times, 50), p90: percentile(times, 90) };
}

async function newNamespace(client: KubeRest, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await client.create("/api/v1/namespaces", { metadata: { name } });
  return name;
}

const students = [...Array(n).keys()].map((i) => `student-${i}`);

/**
 * The operator's work, measured: publish to `n` students, then close for all of them at once.
 */
async function withOperator(client: KubeRest, auditLog: string, cluster: ClusterAccess) {
  const ns = await newNamespace(client, "bench-coursework");
  const { path, username } = await operatorKubeconfig(ns, cluster);
  operator = await spawnOperator(path, username, ns, {
    env: { LOG_LEVEL: "warn", OPERATOR_FREEZE_CACHE: "false", OPERATOR_COPY_IMAGE: IMAGE },
  });
  await waitForLeadership(operator);
  const procs = [{ name: "operator", pid: operator.child.pid ?? 0 }];
  await client.create(templatesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name: "lab" },
    spec: courseworkSpec,
  });
  log(`${n} Userlands (stopped)…`);
  await pool(students, IN_FLIGHT, (user) =>
    client.create(userlandsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: user },
      spec: { user, templateName: "lab", enabled: false },
    }),
  );
  // A student's copy waits for their home claim: the set-up is done once all N are there and Stopped.
  const homes = () =>
    client
      .list<never>(paths.namespaced("", "v1", "persistentvolumeclaims", ns), { timeoutMs: 60_000 })
      .then((l) => l.items.length);
  const stopped = () =>
    client
      .list<{ status?: { phase?: string } }>(userlandsPath(ns), { timeoutMs: 60_000 })
      .then((l) => l.items.filter((u) => u.status?.phase === "Stopped").length);
  const setupStarted = Date.now();
  // n homes + the course folder's and the collection's claims.
  while ((await homes()) < n + 2 || (await stopped()) < n) {
    if (Date.now() - setupStarted > PHASE_TIMEOUT_MS)
      throw new Error(`set-up: ${n} Userlands not Stopped with their home claims in time`);
    await sleep(500);
  }
  log(`set-up done in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);
  await sleep(2000); // let the operator's queue drain before the first measured phase

  await kubeletStandIn(client, ns);
  const marks = new Marks();
  const submissions = new Informer<Submission>(client, {
    path: submissionsPath(ns),
    log: createLogger("bench-submissions", "warn"),
  });
  submissions.on("add", (s) => marks.observe(s));
  submissions.on("update", (s) => marks.observe(s));
  informers.push(submissions as unknown as Informer<never>);
  await submissions.start();

  // 1. Publish.
  log("publish…");
  let offset = auditOffset(auditLog);
  let usage = sampleUsage(procs);
  const published = until("publish: every Submission distributed", () => marks.distributed.size >= n);
  marks.onChange = published.check;
  let started = Date.now();
  await client.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: {
      templateName: "lab",
      title: "Week 1",
      source: { folder: "course", path: "week1" },
      deadline: "2099-01-01T00:00:00Z",
    },
  });
  await published.reached;
  let ended = Date.now();
  const publishUsage = usage.stop()[0];
  await sleep(3000); // the audit log is written in batches of up to a second; late deletes land too
  const publish: Phase = {
    seconds: (ended - started) / 1000,
    ...spread(marks.distributed, started),
    requests: requestsByVerb(auditLog, offset, ns, username),
    ...(publishUsage ? { usage: publishUsage } : {}),
  };

  // 2. The deadline, for everyone at once: the closing time is now.
  log("deadline…");
  offset = auditOffset(auditLog);
  usage = sampleUsage(procs);
  const collected = until("deadline: every receipt written", () => marks.received.size >= n);
  marks.onChange = collected.check;
  const closing = new Date(Math.floor(Date.now() / 1000) * 1000);
  started = closing.getTime();
  await client.patch(assignmentsPath(ns, "a1"), {
    spec: { deadline: closing.toISOString().replace(/\.\d+Z$/, "Z") },
  });
  await collected.reached;
  ended = Date.now();
  const deadlineUsage = usage.stop()[0];
  await sleep(3000);
  const deadline: Phase = {
    seconds: (ended - started) / 1000,
    ...spread(marks.received, started),
    requests: requestsByVerb(auditLog, offset, ns, username),
    ...(deadlineUsage ? { usage: deadlineUsage } : {}),
  };
  return { publish, deadline };
}

/**
 * The baseline: per student what the cluster itself must store for a copy, written directly by this
 * process (50 students in flight, as the operator's workers): the Submission (created, or its
 * hand-in request patched), a copy pod created, its terminated status (the kubelet's part), the
 * Submission's status, the pod deleted.
 */
async function baseline(
  client: KubeRest,
): Promise<{ publish: number; deadline: number; perStudent: number }> {
  const ns = await newNamespace(client, "bench-direct");
  const copy = async (user: string, job: string) => {
    const pod = await client.create<V1Pod>(podsPath(ns), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { generateName: `copy-${job}-`, labels: { "userland.dev/copy": job } },
      spec: { restartPolicy: "Never", containers: [{ name: "copy", image: IMAGE }] },
    });
    await client.patch(podsPath(ns, pod.metadata?.name, "status"), terminated(RESULTS[job] ?? {}));
    return pod.metadata?.name ?? user;
  };
  let started = Date.now();
  await pool(students, IN_FLIGHT, async (user) => {
    const name = submissionNameFor("a1", user);
    await client.create(submissionsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Submission",
      metadata: { name },
      spec: { assignment: "a1", user },
    });
    const pod = await copy(user, "distribute");
    await client.patch(submissionsPath(ns, name, "status"), {
      status: { distributedRelease: 1, distributedRevision: SHA("a") },
    });
    await client.delete(podsPath(ns, pod));
  });
  const publish = (Date.now() - started) / 1000;
  started = Date.now();
  const closing = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await pool(students, IN_FLIGHT, async (user) => {
    const name = submissionNameFor("a1", user);
    await client.patch(submissionsPath(ns, name), {
      spec: { handInRequestedAt: closing, handInRequestedBy: "deadline" },
    });
    const pod = await copy(user, "handin");
    await client.patch(submissionsPath(ns, name, "status"), {
      status: {
        receipt: {
          time: closing,
          files: 1,
          bytes: 3,
          sha256: SHA("b"),
          late: false,
          by: "deadline",
          skipped: 0,
        },
      },
    });
    await client.delete(podsPath(ns, pod));
  });
  const deadline = (Date.now() - started) / 1000;
  await client.delete(`/api/v1/namespaces/${ns}`).catch(() => undefined);
  return { publish, deadline, perStudent: 5 };
}

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "–");
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const breakdown = (m: Map<string, number>) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");

await runBench(
  "coursework benchmark",
  async () => {
    for (const i of informers) await i.stop();
    if (operator) await operator.stop("SIGTERM");
    if (rest) await rest.close();
    if (process.env.BENCH_AUDIT_COPY) copyFileSync(controlPlane.auditLogPath, process.env.BENCH_AUDIT_COPY);
    await controlPlane.stop();
  },
  async () => {
    const { info, cluster } = await startAndConnect(controlPlane, { crds: true });
    rest = new KubeRest(cluster.kc, "userland-bench");
    log(`baseline: ${n} students' objects written directly…`);
    const base = await baseline(rest);
    log(`with the operator, ${n} students…`);
    const { publish, deadline } = await withOperator(rest, info.auditLog, cluster);

    console.log(`\nCoursework benchmark: ${n} students (kwok control plane on loopback, 2 cores shared)\n`);
    console.log(
      "| phase | direct (s) | operator: all done (s) | per student p50 / p90 (s) | operator API requests (per student) | operator CPU (s) | operator peak RSS (MiB) |",
    );
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const [name, phase, direct] of [
      ["publish: Assignment created → every copy distributed", publish, base.publish],
      ["deadline: closing time → every receipt", deadline, base.deadline],
    ] as const) {
      const requests = total(phase.requests);
      console.log(
        `| ${name} | ${fmt(direct)} | ${fmt(phase.seconds)} | ${fmt(phase.p50)} / ${fmt(phase.p90)} | ${requests} (${fmt(requests / n, 2)}) | ${fmt(phase.usage?.cpuSeconds ?? NaN)} | ${fmt((phase.usage?.peakRssBytes ?? NaN) / 2 ** 20, 0)} |`,
      );
    }
    console.log(`\nOperator requests by verb and resource:`);
    console.log(`- publish: ${breakdown(publish.requests)}`);
    console.log(`- deadline: ${breakdown(deadline.requests)}`);
    // Failed reconciles are retried with back-off: a run with many would measure the back-off.
    const warnings = (operator?.logs() ?? "").split("\n").filter((l) => l.includes('"level":"warn"'));
    console.log(
      `- operator warnings logged: ${warnings.length}${warnings[0] ? ` (the first: ${warnings[0].slice(0, 300)})` : ""}`,
    );
    console.log(
      `\ndirect: this process writes, ${IN_FLIGHT} students in flight, per student a Submission (created, or its hand-in request), a copy pod, the pod's terminated status, the Submission's status and the pod's deletion (${base.perStudent} requests); no operator.`,
    );
    console.log(
      "Copy pods are finished by the benchmark's kubelet stand-in (kwok runs no containers); its requests are not the operator's. Requests exclude Lease renewals.",
    );
  },
);
