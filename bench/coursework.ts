/**
 * Coursework benchmark on a private control plane (loopback only):
 *   node bench/coursework.ts [N]               (default 300 students; or BENCH_STUDENTS=N)
 *   node bench/coursework.ts --real-node [N]   (default 10; `npm run bench:coursework:node`)
 * bench/courseworkPhases.ts's run (a Template with coursework, N stopped students, the operator as
 * a process; publish → every copy distributed, then the closing time for all N at once → every
 * receipt, then an autograder added → every hand-in graded in its sealed pod (docs/decisions/
 * 0015-grading.md); per-student p50/p90, the most pods at once, the operator's API requests per phase from the audit log, its CPU
 * seconds and peak RSS, the copy pods' count and duration).
 * kwok runs no containers: on kwok a stand-in for the kubelet here finishes each copy pod as soon as
 * it is seen, writing the terminated status and the JSON result coursework/copy.ts would write.
 * Baseline of the kwok run: the same Submissions, copy pods and status writes made directly by this
 * process, without the operator.
 * --real-node adds the real node (cluster/node) to the control plane and runs the same phases twice
 * with N students: once on kwok with the stand-in, once with the Template on the real node
 * (cluster/harness/labTemplate.ts: local-path claims) and the operator's copy pods running the
 * platform's image (built from the Dockerfile and imported into the node's containerd, as the chart
 * sets OPERATOR_COPY_IMAGE) for real; the handout is written into the course folder by a pod first.
 * The two side by side show what real pods cost over the stand-in.
 * Each phase must end within BENCH_PHASE_TIMEOUT_S (default 600) seconds, or the run fails saying
 * which. BENCH_AUDIT_COPY=<file> keeps a copy of the API server's audit log (the control plane's
 * folder is removed at the end), for reading which requests went where.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { courseFolderNames, submissionNameFor } from "../api/naming.ts";
import { submissionsPath } from "../api/v1alpha1/index.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import { realNodeLabTemplate } from "../cluster/harness/labTemplate.ts";
import { connectTo, privateControlPlane } from "../cluster/harness/privateControlPlane.ts";
import { onRealNode } from "../cluster/node/addons.ts";
import { buildPlatformImage, importImage } from "../cluster/node/images.ts";
import { RealNode, type RealNodeInfo } from "../cluster/node/realNode.ts";
import type { TemplateSpec } from "../api/v1alpha1/index.ts";
import type { ClusterAccess } from "../cluster/harness/connect.ts";
import { Informer } from "../lib/informer.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";
import {
  breakdown,
  fmt,
  IN_FLIGHT,
  log,
  newNamespace,
  podsPath,
  pool,
  runCoursework,
  sleep,
  studentNames,
  total,
  type CourseworkRun,
  type Phase,
} from "./courseworkPhases.ts";
import { runBench } from "./run.ts";
import { percentile } from "./stats.ts";

const args = process.argv.slice(2);
const onTheRealNode = args[0] === "--real-node";
const n = Number(
  (onTheRealNode ? args[1] : args[0]) ?? process.env.BENCH_STUDENTS ?? (onTheRealNode ? 10 : 300),
);
if (!Number.isInteger(n) || n < 1)
  throw new Error("the number of students (argument or BENCH_STUDENTS) must be a positive integer");
const PHASE_TIMEOUT_MS = Number(process.env.BENCH_PHASE_TIMEOUT_S ?? 600) * 1000;
const IMAGE = "registry.invalid/userland-copy:bench"; // kwok pulls nothing
const SHA = (c: string) => c.repeat(64);

const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };
const courseworkSpec: TemplateSpec = simpleTemplateSpec("registry.invalid/ide:1", {
  volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
  coursework: {
    home: { volume: "home", mountPath: "/home/student" },
    folders: [
      { name: "course", mountPath: "/srv/course", pvcSpec: claimSpec },
      { name: "graders", mountPath: "/srv/graders", pvcSpec: claimSpec, teachersOnly: true },
    ],
    collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
  },
});
/** Where the real-node run's Template mounts its course folder, and its teachers-only autograders. */
const REAL_COURSE = "/srv/course";
const REAL_GRADERS = "/srv/graders";

/** A Gradescope autograder in the node's tools image's sh: one test, always passed. */
const RUN_AUTOGRADER = `#!/bin/sh
echo '{"tests":[{"name":"test_main","score":1,"max_score":1}],"execution_time":"0.01"}' > /autograder/results/results.json
`;

const controlPlane = privateControlPlane(onTheRealNode ? "bench-coursework-node" : "bench-coursework", {
  nodes: 1,
});
const node = onTheRealNode
  ? new RealNode({
      controlPlane,
      dir: join(controlPlane.dir, "node"),
      log: (line) => console.error(`[real-node] ${line}`),
    })
  : undefined;
let rest: KubeRest | undefined;

/** A container that exited 0 with `result` as its termination message, as the kubelet reports it. */
function exited(name: string, result: object) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    name,
    image: IMAGE,
    imageID: "",
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode: 0, message: JSON.stringify(result), startedAt: now, finishedAt: now } },
  };
}

/**
 * A pod's terminated status as the kubelet writes it: copy.ts's JSON result as the termination
 * message; a grading pod's two first steps and its collect step's summary (coursework/grade.ts).
 */
function terminated(job: string) {
  if (job === "grade")
    return {
      status: {
        phase: "Succeeded",
        initContainerStatuses: [exited("prepare", { files: 1, sourceFiles: 2 }), exited("autograder", {})],
        containerStatuses: [exited("collect", GRADED)],
      },
    };
  return { status: { phase: "Succeeded", containerStatuses: [exited("copy", RESULTS[job] ?? {})] } };
}

/** What a grading pod's collect step reports for a hand-in that passes its one test. */
const GRADED = {
  score: 1,
  maxScore: 1,
  stdoutVisibility: "hidden",
  testCount: 1,
  tests: [{ name: "test_main", score: 1, maxScore: 1, status: "passed", visibility: "visible" }],
};

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
  autograder: {
    files: [{ path: "run_autograder", bytes: 40, sha256: SHA("2") }],
    bytes: 40,
    sha256: SHA("c"),
    skipped: [],
  },
};

/**
 * THE KUBELET STAND-IN. kwok never runs a container, so a copy pod would never finish: this watches
 * the namespace's copy pods and, as soon as one appears, writes what the kubelet would once copy.ts
 * exited 0 (phase Succeeded, the container terminated, copy.ts's result as its message). Its own
 * requests are this process's, not the operator's, so they are not in the operator's counts.
 */
async function kubeletStandIn(client: KubeRest, ns: string): Promise<() => Promise<void>> {
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
        .patch(podsPath(ns, pod.metadata?.name, "status"), terminated(job))
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
  await pods.start();
  return () => pods.stop();
}

/**
 * The baseline: per student what the cluster itself must store for a copy, written directly by this
 * process (50 students in flight, as the operator's workers): the Submission (created, or its
 * hand-in request patched), a copy pod created, its terminated status (the kubelet's part), the
 * Submission's status, the pod deleted.
 */
async function baseline(
  client: KubeRest,
): Promise<{ publish: number; deadline: number; grading: number; perStudent: number }> {
  const ns = await newNamespace(client, "bench-direct");
  const copy = async (user: string, job: string) => {
    const pod = await client.create<V1Pod>(podsPath(ns), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { generateName: `copy-${job}-`, labels: { "userland.dev/copy": job } },
      spec: { restartPolicy: "Never", containers: [{ name: "copy", image: IMAGE }] },
    });
    await client.patch(podsPath(ns, pod.metadata?.name, "status"), terminated(job));
    return pod.metadata?.name ?? user;
  };
  let started = Date.now();
  await pool(studentNames(n), IN_FLIGHT, async (user) => {
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
  await pool(studentNames(n), IN_FLIGHT, async (user) => {
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
  started = Date.now();
  await pool(studentNames(n), IN_FLIGHT, async (user) => {
    const name = submissionNameFor("a1", user);
    const pod = await copy(user, "grade");
    await client.patch(submissionsPath(ns, name, "status"), {
      status: {
        grade: {
          score: 1,
          maxScore: 1,
          key: "k",
          receiptSha256: SHA("b"),
          autograderRevision: SHA("c"),
          image: IMAGE,
          time: closing,
          results: `grades/a1/${user}/k`,
        },
      },
    });
    await client.delete(podsPath(ns, pod));
  });
  const grading = (Date.now() - started) / 1000;
  await client.delete(`/api/v1/namespaces/${ns}`).catch(() => undefined);
  return { publish, deadline, grading, perStudent: 5 };
}

/** The kwok run: the phases with copy pods finished by the stand-in. */
const onKwok = (client: KubeRest, cluster: ClusterAccess, auditLog: string): Promise<CourseworkRun> =>
  runCoursework({
    client,
    cluster,
    auditLog,
    n,
    namespacePrefix: "bench-coursework",
    template: courseworkSpec,
    folder: "course",
    operatorEnv: { OPERATOR_COPY_IMAGE: IMAGE },
    timeoutMs: PHASE_TIMEOUT_MS,
    prepare: (ns) => kubeletStandIn(client, ns),
    autograder: { folder: "graders" },
  });

/**
 * The handout a teacher would have written: one file in the course folder's `week1/`, written by a
 * pod on the real node as the environments' user (which also binds the folder's local-path claim there).
 */
async function writeHandout(client: KubeRest, ns: string, image: string): Promise<() => Promise<void>> {
  const pod = await client.create<V1Pod>(podsPath(ns), {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "handout" },
    spec: {
      ...onRealNode,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsUser: 1000, runAsGroup: 1000 },
      containers: [
        {
          name: "write",
          image,
          imagePullPolicy: "Never",
          command: [
            "sh",
            "-euc",
            `mkdir -p ${REAL_COURSE}/week1 ${REAL_GRADERS}/week1 && printf 'print(1)\\n' > ${REAL_COURSE}/week1/a.py && printf '%s' "$RUN_AUTOGRADER" > ${REAL_GRADERS}/week1/run_autograder`,
          ],
          env: [{ name: "RUN_AUTOGRADER", value: RUN_AUTOGRADER }],
          volumeMounts: [
            { name: "course", mountPath: REAL_COURSE },
            { name: "graders", mountPath: REAL_GRADERS },
          ],
        },
      ],
      volumes: [
        { name: "course", persistentVolumeClaim: { claimName: courseFolderNames("lab", "course").claim } },
        { name: "graders", persistentVolumeClaim: { claimName: courseFolderNames("lab", "graders").claim } },
      ],
    },
  });
  const started = Date.now();
  for (;;) {
    const phase = (await client.get<V1Pod>(podsPath(ns, pod.metadata?.name))).status?.phase;
    if (phase === "Succeeded") break;
    if (phase === "Failed") throw new Error("the handout pod failed");
    if (Date.now() - started > PHASE_TIMEOUT_MS) throw new Error("the handout pod did not finish in time");
    await sleep(250);
  }
  await client.delete(podsPath(ns, pod.metadata?.name));
  return () => Promise.resolve();
}

/** The real-node run: the Template on the real node, the copy pods running the platform's image there. */
async function onRealNodeRun(
  client: KubeRest,
  cluster: ClusterAccess,
  auditLog: string,
  nodeInfo: RealNodeInfo,
  copyImage: string,
): Promise<CourseworkRun> {
  const tools = nodeInfo.images.tools ?? "";
  const lab = realNodeLabTemplate(tools, "Coursework benchmark", REAL_COURSE);
  const course = lab.coursework?.folders?.[0];
  if (!course) throw new Error("the lab Template has no course folder");
  return runCoursework({
    client,
    cluster,
    auditLog,
    n,
    namespacePrefix: "bench-coursework-node",
    template: {
      ...lab,
      coursework: {
        ...lab.coursework,
        folders: [course, { ...course, name: "graders", mountPath: REAL_GRADERS, teachersOnly: true }],
      },
    },
    folder: "course",
    operatorEnv: { OPERATOR_COPY_IMAGE: copyImage },
    timeoutMs: PHASE_TIMEOUT_MS,
    prepare: (ns) => writeHandout(client, ns, tools),
    // The tools image (busybox's sh) is the Template's own: the autograder may run in it.
    autograder: { folder: "graders" },
  });
}

const PHASES = [
  ["publish: Assignment created → every copy distributed", "publish"],
  ["deadline: closing time → every receipt", "deadline"],
  ["grading: autograder added → every hand-in graded", "grading"],
] as const;

/** A phase of a run; grading is always run here, so its absence is a bug. */
function phaseOf(run: CourseworkRun, key: (typeof PHASES)[number][1]): Phase {
  const phase = run[key];
  if (!phase) throw new Error(`the run has no ${key} phase`);
  return phase;
}

const requestsCell = (phase: Phase) => {
  const requests = total(phase.requests);
  return `${requests} (${fmt(requests / n, 2)})`;
};
const copyPodsCell = (phase: Phase) => {
  const sorted = [...phase.copyPods.seconds].sort((a, b) => a - b);
  const jobs = breakdown(phase.copyPods.byJob) || "none";
  const failed = phase.copyPods.failed ? `, ${phase.copyPods.failed} failed` : "";
  return `${jobs}${failed}; at once ≤ ${phase.copyPods.maxAtOnce}; ${fmt(percentile(sorted, 50))} / ${fmt(percentile(sorted, 90))} / ${fmt(percentile(sorted, 100))}`;
};

const containerCell = (phase: Phase) => {
  const sorted = [...phase.copyPods.containerSeconds].sort((a, b) => a - b);
  return `${fmt(percentile(sorted, 50), 0)} / ${fmt(percentile(sorted, 100), 0)}`;
};

function printBreakdown(label: string, run: CourseworkRun): void {
  console.log(`
Operator requests by verb and resource (${label}):`);
  console.log(`- publish: ${breakdown(run.publish.requests)}`);
  console.log(`- deadline: ${breakdown(run.deadline.requests)}`);
  if (run.grading) console.log(`- grading: ${breakdown(run.grading.requests)}`);
  console.log(
    `- operator warnings logged: ${run.warnings.length}${run.warnings[0] ? ` (the first: ${run.warnings[0].slice(0, 300)})` : ""}`,
  );
}

/** The kwok run alone, beside the baseline. */
async function kwokOnly(): Promise<void> {
  const info = await controlPlane.start();
  const cluster = await connectTo(info, { crds: true });
  rest = new KubeRest(cluster.kc, "userland-bench");
  log(`baseline: ${n} students' objects written directly…`);
  const base = await baseline(rest);
  log(`with the operator, ${n} students…`);
  const run = await onKwok(rest, cluster, info.auditLog);

  console.log(`\nCoursework benchmark: ${n} students (kwok control plane on loopback, 2 cores shared)\n`);
  console.log(
    "| phase | direct (s) | operator: all done (s) | per student p50 / p90 (s) | operator API requests (per student) | operator CPU (s) | operator peak RSS (MiB) | pods at once |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [name, key] of PHASES) {
    const phase = phaseOf(run, key);
    console.log(
      `| ${name} | ${fmt(base[key])} | ${fmt(phase.seconds)} | ${fmt(phase.p50)} / ${fmt(phase.p90)} | ${requestsCell(phase)} | ${fmt(phase.usage?.cpuSeconds ?? NaN)} | ${fmt((phase.usage?.peakRssBytes ?? NaN) / 2 ** 20, 0)} | ${phase.copyPods.maxAtOnce} |`,
    );
  }
  printBreakdown("kwok", run);
  console.log(
    `\ndirect: this process writes, ${IN_FLIGHT} students in flight, per student a Submission (created, or its hand-in request), a copy pod, the pod's terminated status, the Submission's status and the pod's deletion (${base.perStudent} requests; grading: the grading pod, its status, the grade, its deletion); no operator. Grading starts when the autograder is added, once every receipt is in: all N hand-ins at once.`,
  );
  console.log(
    "Copy pods are finished by the benchmark's kubelet stand-in (kwok runs no containers); its requests are not the operator's. Requests exclude Lease renewals.",
  );
}

/** The same phases on kwok and on the real node, side by side. */
async function kwokAndRealNode(realNode: RealNode): Promise<void> {
  const info = await controlPlane.start();
  const nodeStarted = Date.now();
  const nodeInfo = await realNode.start();
  const nodeStartS = (Date.now() - nodeStarted) / 1000;
  const cluster = await connectTo({ ...info, realNode: nodeInfo }, { crds: true });
  rest = new KubeRest(cluster.kc, "userland-bench");
  const image = await buildPlatformImage();
  await importImage(join(info.binDir, "ctr"), nodeInfo.containerdSocket, image);
  log(`kwok, ${n} students…`);
  const kwok = await onKwok(rest, cluster, info.auditLog);
  log(`real node, ${n} students…`);
  const real = await onRealNodeRun(rest, cluster, info.auditLog, nodeInfo, image.ref);

  console.log(
    `\nCoursework benchmark: ${n} students, kwok (copy pods finished by a kubelet stand-in) vs the real node (copy pods running ${image.ref}); one control plane on loopback, 2 cores shared; real node start-up ${fmt(nodeStartS)} s\n`,
  );
  console.log("| phase | measure | kwok | real node |");
  console.log("| --- | --- | ---: | ---: |");
  for (const [name, key] of PHASES) {
    const rows: [string, (p: Phase) => string][] = [
      ["all done (s)", (p) => fmt(p.seconds)],
      ["per student p50 / p90 (s)", (p) => `${fmt(p.p50)} / ${fmt(p.p90)}`],
      ["operator API requests (per student)", requestsCell],
      ["operator CPU (s)", (p) => fmt(p.usage?.cpuSeconds ?? NaN)],
      ["operator peak RSS (MiB)", (p) => fmt((p.usage?.peakRssBytes ?? NaN) / 2 ** 20, 0)],
      ["copy pods by job; created → finished p50 / p90 / max (s)", copyPodsCell],
      ["copy pods: the container's run p50 / max (s)", containerCell],
    ];
    for (const [i, [measure, cell]] of rows.entries())
      console.log(
        `| ${i === 0 ? name : ""} | ${measure} | ${cell(phaseOf(kwok, key))} | ${cell(phaseOf(real, key))} |`,
      );
  }
  console.log(
    `\nSet-up (N Userlands Stopped with their claims): kwok ${fmt(kwok.setupSeconds)} s, real node ${fmt(real.setupSeconds)} s.`,
  );
  printBreakdown("kwok", kwok);
  printBreakdown("real node", real);
  console.log(
    "\nCopy pods' times are as this process saw them (created → phase Succeeded or Failed); on kwok the stand-in ends them at once, so there they are the control plane's share. Requests exclude Lease renewals; they include the operator's re-watches of quiet collections (its informers renew a watch that saw nothing for 30 s: lib/informer.ts), which a longer phase has more of.",
  );
}

await runBench(
  "coursework benchmark",
  async () => {
    if (rest) await rest.close();
    if (process.env.BENCH_AUDIT_COPY) copyFileSync(controlPlane.auditLogPath, process.env.BENCH_AUDIT_COPY);
    await node?.stop().catch(() => undefined);
    await controlPlane.stop();
  },
  () => (node ? kwokAndRealNode(node) : kwokOnly()),
);
