/**
 * Grading against the real API server (docs/decisions/0015-grading.md): the autograder's snapshot
 * and the grading runs the operator makes, keyed by their inputs, and what it writes from a run's
 * outcome. kwok runs no containers: the test ends a pod by writing its status as the kubelet would
 * (each step's exit code and termination message), through pods/status. The pods themselves run on
 * the real node in test/node/grading.test.ts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { V1ContainerState, V1Pod } from "@kubernetes/client-node";
import { submissionNameFor } from "../../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
  type TemplateSpec,
} from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import type { KubeRest } from "../../lib/kubeRest.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { guideBlocks, guideCommands } from "../../test/support/guide.ts";
import { installCrds, startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  collectionFolder,
  createTemplate,
  createUserland,
  simpleTemplateSpec,
} from "../../test/support/resources.ts";

const IMAGE = "registry.invalid/userland:test";
const IDE = "registry.invalid/ide:1";
const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };
const SHA = (c: string) => c.repeat(64);

const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);

const spec = (): TemplateSpec =>
  simpleTemplateSpec(IDE, {
    volumes: [{ name: "home", pvcSpec: claimSpec }],
    coursework: {
      home: { volume: "home", mountPath: "/home/student" },
      folders: [
        { name: "course", mountPath: "/srv/course", pvcSpec: claimSpec },
        { name: "graders", mountPath: "/srv/graders", pvcSpec: claimSpec, teachersOnly: true },
      ],
      collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
    },
  });

async function pods(rest: KubeRest, ns: string, job: string): Promise<V1Pod[]> {
  const list = await rest.list<V1Pod>(podsPath(ns), { query: { labelSelector: `userland.dev/copy=${job}` } });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");
const ended = (exitCode: number, message?: object): V1ContainerState =>
  ({
    terminated: {
      exitCode,
      ...(message ? { message: JSON.stringify(message) } : {}),
      startedAt: stamp(),
      finishedAt: stamp(),
    },
  }) as unknown as V1ContainerState;
const statusOf = (name: string, state: V1ContainerState) => ({
  name,
  state,
  image: "",
  imageID: "",
  ready: false,
  restartCount: 0,
});

/** Ends a pod as the kubelet would: its steps' states, its phase and (for a deadline) its reason. */
async function end(
  rest: KubeRest,
  pod: V1Pod,
  phase: "Succeeded" | "Failed",
  steps: { init?: Record<string, V1ContainerState>; main: Record<string, V1ContainerState> },
  reason?: string,
): Promise<void> {
  await rest.patch(podsPath(pod.metadata?.namespace ?? "", pod.metadata?.name, "status"), {
    status: {
      phase,
      ...(reason ? { reason, message: "Pod was active on the node longer than the specified deadline" } : {}),
      initContainerStatuses: Object.entries(steps.init ?? {}).map(([n, s]) => statusOf(n, s)),
      containerStatuses: Object.entries(steps.main).map(([n, s]) => statusOf(n, s)),
    },
  });
}

const condition = (
  obj: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } },
  type: string,
) => obj.status?.conditions?.find((c) => c.type === type);

const autograded = (name: string, autograder: Record<string, unknown>) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name },
  spec: {
    templateName: "lab",
    title: "Week 1",
    source: { folder: "course", path: "w1" },
    deadline: "2099-01-01T00:00:00Z",
    autograder,
  },
});

test("an autograder's snapshot, one sealed grading run per hand-in and autograder revision, its score in status; a run without a result never replaces the last good grade; a visible folder or an unknown image is refused", async (t) => {
  const ns = await testNamespace(t, "grading");
  const rest = await adminRest();
  await startOperator(t, ns, {
    env: { OPERATOR_COPY_IMAGE: IMAGE, OPERATOR_AUTOGRADER_IMAGES: "registry.invalid/grader:1" },
  });
  await createTemplate(ns, "lab", spec());
  await createUserland(ns, "ann", "ann", "lab", false);
  await rest.create(assignmentsPath(ns), autograded("a1", { folder: "graders", path: "w1" }));
  const a1 = await collectionFolder(ns, "a1");
  await rest.create(assignmentsPath(ns), autograded("visible", { folder: "course", path: "w1" }));
  await rest.create(
    assignmentsPath(ns),
    autograded("unknown", { folder: "graders", path: "w1", image: "docker.io/someone/miner:1" }),
  );
  await rest.create(
    assignmentsPath(ns),
    autograded("listed", { folder: "graders", path: "w1", image: "registry.invalid/grader:1" }),
  );

  const refused = async (name: string, reason: string, message: RegExp) => {
    const a = await eventually(`${name}: ${reason}`, async () => {
      const got = await rest.get<Assignment>(assignmentsPath(ns, name));
      return condition(got, "AutograderReady")?.reason === reason && got;
    });
    assert.match(condition(a, "AutograderReady")?.message ?? "", message);
  };
  await refused("visible", "AutograderNotHidden", /teachersOnly: true/);
  await refused("unknown", "AutograderImageNotAllowed", /OPERATOR_AUTOGRADER_IMAGES/);
  // An image the admin listed is taken.
  await eventually("listed: its snapshot being taken", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "listed"));
    return condition(a, "AutograderReady")?.reason === "TakingSnapshot";
  });

  // The autograder's snapshot: from the teachers-only folder (read-only) into the collection.
  const snapshotOf = async (release: number) =>
    eventually(`a1's autograder snapshot pod for release ${release}`, async () =>
      (await pods(rest, ns, "autograder")).find(
        (p) => p.spec?.containers[0]?.command?.at(-1) === `/autograders/${a1}/${release}`,
      ),
    );
  const snapshot = await snapshotOf(1);
  assert.deepEqual(snapshot.spec?.containers[0]?.command?.slice(2), [
    "handin",
    "/source/w1",
    `/autograders/${a1}/1`,
  ]);
  assert.deepEqual(
    snapshot.spec?.containers[0]?.volumeMounts?.map((m) => [
      m.mountPath,
      m.subPath ?? "",
      m.readOnly ?? false,
    ]),
    [
      ["/source", "", true],
      ["/autograders", "autograders", false],
    ],
  );
  assert.equal(snapshot.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName, "lab-course-graders");
  const [publish] = await eventually("a1's publish pod", async () =>
    (await pods(rest, ns, "publish")).filter((p) => p.metadata?.ownerReferences?.[0]?.name === "a1"),
  );
  assert.ok(publish);
  await end(rest, publish, "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("a") }) },
  });
  await end(rest, snapshot, "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("c") }) },
  });
  const ready = await eventually("a1's autograder ready", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return a.status?.autograder && a;
  });
  assert.deepEqual([ready.status?.autograder?.release, ready.status?.autograder?.revision], [1, SHA("c")]);
  assert.equal(condition(ready, "AutograderReady")?.status, "True");

  // ann hands in; the receipt is taken; a grading run follows.
  const annName = submissionNameFor("a1", "ann");
  await eventually("ann's Submission", () =>
    rest.get<Submission>(submissionsPath(ns, annName)).catch(() => undefined),
  );
  await rest.patch(submissionsPath(ns, annName), {
    spec: { handInRequestedAt: "2026-12-07T10:00:00Z", handInRequestedBy: "student" },
  });
  const handin = await eventually("ann's hand-in pod", async () => (await pods(rest, ns, "handin"))[0]);
  await end(rest, handin, "Succeeded", {
    main: {
      copy: ended(0, {
        files: [{ path: "calc.py", bytes: 3, sha256: SHA("1") }],
        bytes: 3,
        sha256: SHA("b"),
        skipped: [],
      }),
    },
  });
  const run = await eventually("ann's grading pod", async () => (await pods(rest, ns, "grade"))[0]);
  const prepare = run.spec?.initContainers?.[0];
  assert.equal(run.spec?.initContainers?.[1]?.image, IDE, "unset: the Template's first container's image");
  assert.deepEqual(prepare?.command?.slice(2, 6), [
    "prepare",
    "--submission",
    "/submission",
    "--receipt-sha256",
  ]);
  assert.equal(prepare?.command?.[6], SHA("b"));
  const metadata = JSON.parse(prepare?.env?.find((e) => e.name === "GRADING_METADATA")?.value ?? "{}") as {
    created_at?: string;
    assignment?: { due_date?: string };
    users?: { id: string }[];
  };
  assert.deepEqual(
    [metadata.created_at, metadata.assignment?.due_date, metadata.users?.[0]?.id],
    ["2026-12-07T10:00:00Z", "2099-01-01T00:00:00Z", "ann"],
  );
  assert.equal(run.spec?.automountServiceAccountToken, false);
  assert.equal(run.spec?.dnsPolicy, "None");
  let s = await eventually("Graded=False, Grading", async () => {
    const got = await rest.get<Submission>(submissionsPath(ns, annName));
    return condition(got, "Graded")?.reason === "Grading" && got;
  });
  assert.equal(condition(s, "Graded")?.status, "False");

  await end(rest, run, "Succeeded", {
    init: { prepare: ended(0, { files: 1, sourceFiles: 3 }), autograder: ended(0) },
    main: {
      collect: ended(0, {
        score: 7,
        maxScore: 10,
        executionSeconds: 1.5,
        testCount: 2,
        tests: [
          { name: "test_add", score: 5, maxScore: 5, status: "passed", visibility: "visible" },
          { name: "test_hidden", score: 2, maxScore: 5, status: "failed", visibility: "hidden" },
        ],
      }),
    },
  });
  s = await eventually("ann's grade", async () => {
    const got = await rest.get<Submission>(submissionsPath(ns, annName));
    return got.status?.grade && got;
  });
  const grade = s.status?.grade;
  assert.deepEqual(
    [
      grade?.score,
      grade?.maxScore,
      grade?.testCount,
      grade?.receiptSha256,
      grade?.autograderRevision,
      grade?.image,
    ],
    [7, 10, 2, SHA("b"), SHA("c"), IDE],
  );
  assert.deepEqual(
    grade?.tests?.map((x) => [x.name, x.score, x.visibility]),
    [
      ["test_add", 5, "visible"],
      ["test_hidden", 2, "hidden"],
    ],
  );
  assert.match(grade?.results ?? "", new RegExp(`^grades/${a1}/ann[^/]*/[a-z0-9]+$`));
  assert.deepEqual(
    [condition(s, "Graded")?.status, condition(s, "Graded")?.message],
    ["True", "7 of 10 points (2 tests)"],
  );
  await eventually(
    "the finished grading pod deleted, no other made",
    async () => (await pods(rest, ns, "grade")).length === 0,
  );

  // The teacher updates the autograder: a new snapshot, a new run; it times out, the grade stands.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { autograder: { release: 2 } } });
  await end(rest, await snapshotOf(2), "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("d") }) },
  });
  const again = await eventually("ann's second grading pod", async () => (await pods(rest, ns, "grade"))[0]);
  assert.notEqual(again.metadata?.name, run.metadata?.name);
  await end(
    rest,
    again,
    "Failed",
    {
      init: {
        prepare: ended(0),
        autograder: { running: { startedAt: stamp() } } as unknown as V1ContainerState,
      },
      main: {},
    },
    "DeadlineExceeded",
  );
  s = await eventually("ann's second attempt recorded", async () => {
    const got = await rest.get<Submission>(submissionsPath(ns, annName));
    return got.status?.gradeAttempt?.autograderRevision === SHA("d") && got;
  });
  assert.deepEqual(
    [
      s.status?.gradeAttempt?.ok,
      s.status?.gradeAttempt?.reason,
      s.status?.grade?.score,
      s.status?.grade?.autograderRevision,
    ],
    [false, "TimedOut", 7, SHA("c")],
  );
  assert.equal(condition(s, "Graded")?.status, "False");
  assert.match(
    condition(s, "Graded")?.message ?? "",
    /^timed out after 300 s: the autograder was stopped; the earlier grade stands \(7 of 10 points/,
  );
  // The attempt is final for its inputs: no pod is made again.
  await eventually("the timed-out pod deleted", async () => (await pods(rest, ns, "grade")).length === 0);

  // Release 3 grades the same hand-in 9 of 10: the grade keeps what it replaced, for the teacher.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { autograder: { release: 3 } } });
  await end(rest, await snapshotOf(3), "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("f") }) },
  });
  const third = await eventually("ann's third grading pod", async () => (await pods(rest, ns, "grade"))[0]);
  await end(rest, third, "Succeeded", {
    init: { prepare: ended(0), autograder: ended(0) },
    main: { collect: ended(0, { score: 9, maxScore: 10, testCount: 2, tests: [] }) },
  });
  s = await eventually("ann's regrade", async () => {
    const got = await rest.get<Submission>(submissionsPath(ns, annName));
    return got.status?.grade?.autograderRevision === SHA("f") && got;
  });
  assert.deepEqual(
    [s.status?.grade?.score, s.status?.grade?.previous],
    [9, { score: 7, autograderRevision: SHA("c") }],
  );

  // Released: what ann may see goes into her feedback folder as grade.md; a comment later, again.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { gradesReleased: true } });
  const reportOf = async (not?: string) => {
    const pod = await eventually("ann's grade report pod", async () =>
      (await pods(rest, ns, "report")).find((p) => p.metadata?.name !== not),
    );
    const command = pod.spec?.containers[0]?.command ?? [];
    assert.deepEqual(command.slice(2, 4), ["write-file", "/home-claim/assignments/a1/feedback/grade.md"]);
    return { pod, text: command[command.indexOf("--text") + 1] ?? "" };
  };
  const writeReport = async (pod: V1Pod, text: string) => {
    const sha256 = createHash("sha256").update(text).digest("hex");
    await end(rest, pod, "Succeeded", { main: { copy: ended(0, { bytes: text.length, sha256 }) } });
    return eventually("the report recorded", async () => {
      const got = await rest.get<Submission>(submissionsPath(ns, annName));
      return got.status?.gradeFile?.sha256 === sha256 && got;
    });
  };
  const first = await reportOf();
  assert.match(first.text, /^# Week 1: your grade\n\nScore: 9 of 10\n/);
  assert.doesNotMatch(first.text, /test_hidden/);
  s = await writeReport(first.pod, first.text);
  assert.equal(condition(s, "GradeReturned")?.status, "True");
  await rest.patch(submissionsPath(ns, annName), { spec: { review: { comment: "Well tested." } } });
  const second = await reportOf(first.pod.metadata?.name);
  assert.match(second.text, /Your teacher's comment:\n\n> Well tested\.\n/);
  await writeReport(second.pod, second.text);
  await eventually(
    "no report pod left once written",
    async () => (await pods(rest, ns, "report")).length === 0,
  );
});

test("an extension is one student's own: the others are collected at the assignment's closing time, she at hers, and her receipt names her deadline", async (t) => {
  const ns = await testNamespace(t, "extension");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "lab", spec());
  await createUserland(ns, "ann", "ann", "lab", false);
  await createUserland(ns, "ben", "ben", "lab", false);
  // ann's own deadline a few seconds from now; everyone else's has passed.
  const hers = new Date(Date.now() + 4000).toISOString().replace(/\.\d+Z$/, "Z");
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: {
      templateName: "lab",
      title: "Week 1",
      source: { folder: "course", path: "w1" },
      deadline: "2026-01-01T00:00:00Z",
      extensions: [{ user: "ann", deadline: hers, note: "accommodation" }],
    },
  });
  const get = (who: string) => rest.get<Submission>(submissionsPath(ns, submissionNameFor("a1", who)));
  const ben = await eventually("ben collected at the assignment's deadline", async () => {
    const s = await get("ben").catch(() => undefined);
    return s?.spec.handInRequestedAt !== undefined && s;
  });
  assert.deepEqual(
    [ben.spec.handInRequestedAt, ben.spec.handInRequestedBy],
    ["2026-01-01T00:00:00Z", "deadline"],
  );
  assert.equal((await get("ann")).spec.handInRequestedAt, undefined, "ann's deadline has not come");
  const ann = await eventually(
    "ann collected at her own deadline",
    async () => {
      const s = await get("ann");
      return s.spec.handInRequestedAt !== undefined && s;
    },
    15_000,
  );
  assert.deepEqual([ann.spec.handInRequestedAt, ann.spec.handInRequestedBy], [hers, "deadline"]);
  const handin = await eventually("ann's hand-in pod", async () =>
    (await pods(rest, ns, "handin")).find(
      (p) => p.metadata?.ownerReferences?.[0]?.name === ann.metadata.name,
    ),
  );
  await end(rest, handin, "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("e"), skipped: [] }) },
  });
  const receipt = await eventually("ann's receipt", async () => (await get("ann")).status?.receipt);
  assert.deepEqual([receipt.deadline, receipt.extended, receipt.late], [hers, true, false]);
  const a = await eventually("the counts", async () => {
    const got = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return got.status?.handedIn === 1 && got;
  });
  assert.equal(a.status?.missing, 1, "ben, closed with no receipt yet, is missing; ann is not");
});

test("the admin guide's grading cycle with kubectl: the assignment applied, an extension, the submissions listed, a new autograder release, grades released", async (t) => {
  const ns = await testNamespace(t, "grading-guide");
  await installCrds();
  const { info } = await testCluster();
  const env = {
    ...process.env,
    KUBECONFIG: info.kubeconfig,
    PATH: `${info.binDir}:${process.env.PATH ?? ""}`,
  };
  const guide = join(repoRoot, "deploy", "README.md");
  const yaml = guideBlocks(guide, "### Grading", "yaml").find((b) => b.includes("kind: Assignment"));
  assert.ok(yaml, "the guide's Assignment");
  const dir = mkdtempSync(join(tmpdir(), "grading-guide-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "calc.yaml"), yaml);
  const commands = guideCommands(guide, "### Grading").flatMap((s) => s.blocks.flat());
  assert.equal(commands.length, 5, commands.join("\n"));
  for (const command of commands)
    execFileSync("sh", ["-c", command.replaceAll("-n ide ", `-n ${ns} `)], {
      env,
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  const a = await (await adminRest()).get<Assignment>(assignmentsPath(ns, "calc"));
  assert.deepEqual(a.spec.extensions, [{ user: "ann@uni.example", deadline: "2026-12-20T17:00:00Z" }]);
  assert.deepEqual(
    [
      a.spec.autograder?.release,
      a.spec.autograder?.folder,
      a.spec.gradesReleased,
      a.spec.latePenalty?.percentPerDay,
    ],
    [2, "graders", true, 10],
  );
  assert.deepEqual(
    a.spec.rubric?.map((i) => i.id),
    ["style"],
  );
});

test("an autograder with a reference solution grades nobody until it gave the solution full marks and the starter files less", async (t) => {
  const ns = await testNamespace(t, "grading-check");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "lab", spec());
  await createUserland(ns, "ann", "ann", "lab", false);
  await rest.create(
    assignmentsPath(ns),
    autograded("a1", { folder: "graders", path: "calc/autograder", solution: "calc/solution" }),
  );
  const calc = await collectionFolder(ns, "a1");
  const job = (j: string) => eventually(`the ${j} pod`, async () => (await pods(rest, ns, j))[0]);
  const copied = (sha: string) => ({ main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA(sha) }) } });
  await end(rest, await job("publish"), "Succeeded", copied("a"));
  await end(rest, await job("autograder"), "Succeeded", copied("c"));
  const solution = await job("solution");
  assert.deepEqual(solution.spec?.containers[0]?.command?.slice(2), [
    "handin",
    "/source/calc/solution",
    `/autograders/${calc}/1-solution`,
  ]);
  await end(rest, solution, "Succeeded", copied("d"));

  // Two runs, owned by the Assignment: the solution's snapshot and the published starter files.
  // Three snapshots and two grading pods one after another: beside other test files on 2 cores
  // this has taken more than the default 30 s.
  const runs = await eventually(
    "the two check runs",
    async () => {
      const found = await pods(rest, ns, "grade");
      return found.length === 2 && found;
    },
    90_000,
  );
  const checked = (pod: V1Pod) =>
    pod.spec?.initContainers?.[0]?.command?.[
      pod.spec.initContainers[0].command.indexOf("--receipt-sha256") + 1
    ];
  const bySha = new Map(runs.map((p) => [checked(p), p]));
  assert.deepEqual([...bySha.keys()].sort(), [SHA("a"), SHA("d")]);
  assert.ok(runs.every((p) => p.metadata?.ownerReferences?.[0]?.kind === "Assignment"));
  const result = (score: number) => ({
    init: { prepare: ended(0), autograder: ended(0) },
    main: { collect: ended(0, { score, maxScore: 5, testCount: 1, tests: [] }) },
  });
  // The solution scores 3 of 5: the autograder is refused, and ann's hand-in waits.
  await end(rest, bySha.get(SHA("d"))!, "Succeeded", result(3));
  await end(rest, bySha.get(SHA("a"))!, "Succeeded", result(0));
  const refused = await eventually("AutograderCheckFailed", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return condition(a, "AutograderReady")?.reason === "AutograderCheckFailed" && a;
  });
  assert.match(
    condition(refused, "AutograderReady")?.message ?? "",
    /did not score full marks \(3 of 5 points\)/,
  );
  const annName = submissionNameFor("a1", "ann");
  await eventually("ann's Submission", () =>
    rest.get<Submission>(submissionsPath(ns, annName)).catch(() => undefined),
  );
  await rest.patch(submissionsPath(ns, annName), {
    spec: { handInRequestedAt: "2026-12-07T10:00:00Z", handInRequestedBy: "student" },
  });
  await end(rest, await job("handin"), "Succeeded", {
    main: { copy: ended(0, { files: [], bytes: 0, sha256: SHA("b"), skipped: [] }) },
  });
  await eventually("ann waits for a checked autograder", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, annName));
    return condition(s, "Graded")?.reason === "WaitingForAutograder";
  });
  assert.deepEqual(await pods(rest, ns, "grade"), [], "no grading pod for ann");

  // The teacher fixes the autograder (release 2): the solution scores 5 of 5, the starter 1 of 5.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { autograder: { release: 2 } } });
  await end(rest, await job("autograder"), "Succeeded", copied("e"));
  await end(rest, await job("solution"), "Succeeded", copied("d"));
  const again = await eventually("the two new check runs", async () => {
    // Release 1's finished runs may still be there, on their way out.
    const found = (await pods(rest, ns, "grade")).filter((p) => p.status?.phase !== "Succeeded");
    return found.length === 2 && found;
  });
  for (const pod of again) await end(rest, pod, "Succeeded", result(checked(pod) === SHA("d") ? 5 : 1));
  const ready = await eventually("AutograderReady: Checked", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return condition(a, "AutograderReady")?.reason === "Checked" && a;
  });
  assert.equal(ready.status?.autograder?.checked, true);
  const annRun = await eventually("ann's grading pod at last", async () =>
    (await pods(rest, ns, "grade")).find((p) => p.metadata?.ownerReferences?.[0]?.kind === "Submission"),
  );
  assert.equal(checked(annRun), SHA("b"));
});
