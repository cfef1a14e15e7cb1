/**
 * An exam on the real node (docs/decisions/0013-exams.md), with Kubernetes objects alone: the
 * operator (a process of the test, OPERATOR_PROXY_PODS naming a stand-in for the proxy's pods,
 * OPERATOR_COPY_IMAGE the platform's image) closes the network for real, as kube-network-policies
 * enforces its NetworkPolicy, and collects the work with real copy pods at the end.
 *
 * Beside the exam's policy stands an admin's open policy selecting environments as the chart's
 * does (everything in, everything out): policies add up, so only because exam pods fall outside
 * the chart's selector does the exam's policy close anything. Before the start a student's pod
 * reaches the outside stand-in (the node's metadata address) and another student's environment;
 * inside the window it reaches neither, while cluster DNS answers and the proxy stand-in still
 * reaches it; after the end, with the work collected, it reaches both again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { METADATA_IP } from "../../cluster/addresses.ts";
import { childNames, collectionUserFolder, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  assignmentsPath,
  ExamMarks,
  examsPath,
  submissionsPath,
  type Exam,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { k8s } from "../../lib/kube.ts";
import { paths } from "../../api/kubePaths.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { phaseClock } from "../support/phases.ts";
import {
  appointTeacher,
  chartCourseTeacherRole,
  LAB_COLLECTION,
  LAB_HOME,
  realNodeLabTemplate,
} from "../support/coursework.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  collectionFolder,
  createTemplate,
  waitForPhase,
  userlandsPath,
} from "../support/resources.ts";
import {
  execInContainer,
  onRealNode,
  realNode,
  waitForOnePodReady,
  waitForPodReady,
  shIn as sh,
} from "../support/realNode.ts";
import { parseManifests, renderChart } from "../chart/support.ts";

const COURSE = "/srv/course";
const PROXY_LABELS = { "app.kubernetes.io/component": "proxy", "app.kubernetes.io/name": "userland" };
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

/** Does a TCP connection from inside `from` to host:port succeed within 3 s? */
async function connects(from: V1Pod, host: string, port: number): Promise<boolean> {
  return (await execInContainer(from, ["nc", "-z", "-w", "3", host, String(port)])).code === 0;
}

test("an exam on the real node: inside the window a student's pod reaches neither the outside nor another student, the proxy still reaches it; at the end the work is collected and the network opens again", async (t) => {
  const phase = phaseClock(t);

  const node = await realNode();
  const tools = node.images.tools ?? "";
  const image = await buildPlatformImage();
  await importImage(join(node.binDir, "ctr"), node.containerdSocket, image);
  phase("platform image");

  const ns = await testNamespace(t, "node-exam");
  const rest = await adminRest();
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  // A teacher's environment binds the collection claim (local-path binds on first use).
  const role = await chartCourseTeacherRole(t, ns);
  await appointTeacher(ns, role, "tess", "teach-tess");
  await startOperator(t, ns, {
    env: {
      OPERATOR_COPY_IMAGE: image.ref,
      OPERATOR_PROXY_PODS: `${ns}:${Object.entries(PROXY_LABELS)
        .map(([k, v]) => `${k}=${v}`)
        .join(",")}`,
    },
  });
  await createTemplate(ns, "lab", realNodeLabTemplate(tools, "Exams on the real node", COURSE));
  for (const [who, cls] of [
    ["tess", undefined],
    ["ann", "c1"],
    ["ben", "c1"],
  ] as const)
    await rest.create(userlandsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name: who, ...(cls ? { labels: { [LABELS.class]: cls } } : {}) },
      spec: { user: who, templateName: "lab" },
    });
  // The proxy's stand-in: a pod with the proxy's labels, the only one an exam lets in.
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: "proxy", labels: PROXY_LABELS },
      spec: {
        ...onRealNode,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "main", image: tools, imagePullPolicy: "Never", command: ["sleep", "infinity"] },
        ],
      },
    },
  });
  // An admin's open policy over every environment, with the chart's own selector.
  const chartPolicy = parseManifests(await renderChart("ul", ns, { networkPolicy: { enabled: true } })).find(
    (o) => o.kind === "NetworkPolicy" && (o.metadata?.name ?? "").endsWith("-user-environments"),
  ) as { spec: { podSelector: unknown } } | undefined;
  assert.ok(chartPolicy, "the chart renders the environments' policy");
  await rest.create(paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns), {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "open-environments" },
    spec: {
      podSelector: chartPolicy.spec.podSelector,
      policyTypes: ["Ingress", "Egress"],
      ingress: [{}],
      egress: [{}],
    },
  });

  const podOf = (who: string, selector = "") =>
    waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", who).deployment}${selector}`);
  for (const who of ["tess", "ann", "ben"]) await waitForPhase(ns, who, "Ready", 120_000);
  const tess = await podOf("tess");
  let ann = await podOf("ann");
  let ben = await podOf("ben");
  const proxy = await waitForPodReady(ns, "proxy");
  phase("three environments");

  // An assignment whose hand-ins the exam collects (its deadline long after the exam).
  await sh(tess, `mkdir -p ${COURSE}/final && printf 'Q1\\n' > ${COURSE}/final/questions.txt`);
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "final" },
    spec: {
      templateName: "lab",
      title: "Final",
      class: "c1",
      source: { folder: "course", path: "final" },
      deadline: "2099-01-01T00:00:00Z",
    },
  });
  const getS = (who: string) => rest.get<Submission>(submissionsPath(ns, submissionNameFor("final", who)));
  for (const who of ["ann", "ben"])
    await eventually(
      `${who}'s handout`,
      async () => (await getS(who).catch(() => undefined))?.status?.distributedRelease === 1,
      90_000,
      250,
    );
  phase("handout");

  // Before: everything is open (the admin's policy allows it all).
  const target = (pod: V1Pod) => pod.status?.podIP ?? "";
  await eventually(
    "ann to reach the outside and ben before the exam",
    async () => (await connects(ann, METADATA_IP, 80)) && (await connects(ann, target(ben), 8080)),
    30_000,
    500,
  );
  phase("open before");

  // The exam starts a few seconds from now and ends long enough after for the checks inside it on a
  // slow machine; once they are done an admin moves its end up to a few seconds ahead, so the run
  // does not wait out the rest of the window (the operator must end it at the moved end).
  const start = Date.now() + 5_000;
  let end = start + 300_000;
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "final" },
    spec: {
      templateName: "lab",
      class: "c1",
      title: "Final exam",
      start: iso(start),
      end: iso(end),
      proctors: { users: ["tess"] },
      assignment: "final",
    },
  });
  const exam = () => rest.get<Exam>(examsPath(ns, "final"));

  // Inside: the environments restarted with the exam's label, its policy enforced.
  ann = await podOf("ann", `,${ExamMarks.examLabel}=final`);
  ben = await podOf("ben", `,${ExamMarks.examLabel}=final`);
  assert.equal((await exam()).status?.phase, "Running");
  phase("restarted for the exam");
  await eventually(
    "the exam's policy to be enforced",
    async () => !(await connects(ann, target(ben), 8080)),
    30_000,
    500,
  );
  assert.equal(await connects(ann, METADATA_IP, 80), false, "the outside stand-in is unreachable");
  assert.equal(await connects(ann, target(ben), 8080), false, "another student's environment is unreachable");
  assert.equal(await connects(ben, target(ann), 8080), false, "and the other way round");
  assert.equal(await connects(proxy, target(ann), 8080), true, "the proxy still reaches the environment");
  const dns = await execInContainer(ann, ["getent", "hosts", `kubernetes.default.svc.cluster.local`]);
  assert.equal(dns.code, 0, `cluster DNS still answers: ${dns.stderr}`);
  assert.ok(Date.now() < end, "all checked inside the window");
  // The students' work, written during the exam.
  for (const [who, pod] of [
    ["ann", ann],
    ["ben", ben],
  ] as const)
    await sh(pod, `printf '${who}: 42\\n' > ${LAB_HOME}/assignments/final/answer.txt`);
  end = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
  await rest.patch(examsPath(ns, "final"), { spec: { end: iso(end) } });
  phase("closed inside");

  // The end: collected, then restored.
  const over = await eventually(
    "the exam to be over",
    async () => {
      const e = await exam();
      return e.status?.phase === "Over" ? e : undefined;
    },
    end - Date.now() + 180_000,
    500,
  );
  assert.deepEqual(
    over.status?.students?.map((s) => [s.user, s.state]),
    [
      ["ann", "Collected"],
      ["ben", "Collected"],
    ],
  );
  for (const who of ["ann", "ben"]) {
    const s = await getS(who);
    assert.equal(s.spec.handInRequestedBy, "deadline");
    assert.equal(s.spec.handInRequestedAt, iso(end), "requested at the exam's end");
    assert.ok((s.status?.receipt?.files ?? 0) >= 2, `${who}'s answer and handout collected`);
    const copy = await sh(
      tess,
      `cat ${LAB_COLLECTION}/handins/${await collectionFolder(ns, "final")}/${collectionUserFolder(who)}/1/answer.txt`,
    );
    assert.equal(copy, `${who}: 42\n`, `${who}'s answer in the teacher's read-only hand-ins`);
  }
  phase("collected");
  ann = await podOf("ann", `,!${ExamMarks.examLabel}`);
  ben = await podOf("ben", `,!${ExamMarks.examLabel}`);
  await eventually(
    "the exam's policy to be gone",
    async () =>
      (await rest
        .get(paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns, "userland-exam-final"))
        .catch(() => undefined)) === undefined,
    60_000,
    500,
  );
  await eventually(
    "ann to reach the outside and ben again",
    async () => (await connects(ann, METADATA_IP, 80)) && (await connects(ann, target(ben), 8080)),
    30_000,
    500,
  );
  phase("open after");
});
