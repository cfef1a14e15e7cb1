/**
 * A grading cycle on the real node with Kubernetes objects alone, as an admin runs it with kubectl
 * (docs/decisions/0015-grading.md): a teacher (tess) puts a Gradescope autograder — a real one, with
 * visible and hidden tests (test/node/fixtures/gradescope-calculator) — in a teachers-only course
 * folder; the Assignment names it and the Jupyter image (python3) it runs in; six students hand
 * in: ann right, ben half right, cat a loop, dan code that reaches for the network, eve code that
 * writes 10 GB, fay a fork bomb. The operator (a process of the test, as in the other node tests) runs the sealed
 * grading pods; the harness execs into environments (as `kubectl exec` would) to act as the teacher
 * and the students.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, collectionUserFolder, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
  type TemplateSpec,
} from "../../api/v1alpha1/index.ts";
import { buildImages, buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
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
  createUserland,
  waitForPhase,
} from "../support/resources.ts";
import {
  execInContainer,
  filesOf,
  realNode,
  shIn as sh,
  waitForOnePodReady,
  writeFilesIn,
} from "../support/realNode.ts";

const COURSE = "/srv/course";
const GRADERS = "/srv/graders";
const FIXTURE = join(repoRoot, "test", "node", "fixtures", "gradescope-calculator");
/** How long one grading run (three steps on the real node) may take before the test fails. */
const GRADE_MS = 120_000;
const TIMEOUT_SECONDS = 20;

type Conditioned = { status?: { conditions?: { type: string; reason: string; message: string }[] } };
const condition = (o: Conditioned, type: string) => o.status?.conditions?.find((c) => c.type === type);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

test("a grading cycle with kubectl alone: a Gradescope autograder from a teachers-only folder grades each hand-in in a sealed pod; a loop and a fork bomb end as results, the network and a 10 GB write are stopped; hidden tests stay hidden; a new autograder release grades the frozen hand-ins again", async (t) => {
  const phase = phaseClock(t);

  const node = await realNode();
  const ctr = join(node.binDir, "ctr");
  const platform = await buildPlatformImage();
  await importImage(ctr, node.containerdSocket, platform);
  const { jupyter } = await buildImages(["jupyter"]);
  assert.ok(jupyter, "the Jupyter image (python3) is built");
  await importImage(ctr, node.containerdSocket, jupyter);
  phase("images");

  const ns = await testNamespace(t, "node-grade");
  const rest = await adminRest();
  const role = await chartCourseTeacherRole(t, ns);
  await appointTeacher(ns, role, "tess", "teach-tess");
  await startOperator(t, ns, {
    env: { OPERATOR_COPY_IMAGE: platform.ref, OPERATOR_AUTOGRADER_IMAGES: jupyter.ref },
  });
  const lab = realNodeLabTemplate(node.images.tools ?? "", "Grading on the real node", COURSE);
  const spec: TemplateSpec = {
    ...lab,
    coursework: {
      ...lab.coursework,
      folders: [
        ...(lab.coursework?.folders ?? []),
        { ...lab.coursework!.folders![0]!, name: "graders", mountPath: GRADERS, teachersOnly: true },
      ],
    },
  };
  await createTemplate(ns, "lab", spec);
  const people = ["tess", "ann", "ben", "cat", "dan", "eve", "fay"] as const;
  type Person = (typeof people)[number];
  for (const who of people) await createUserland(ns, who, who, "lab");
  const pods = {} as Record<Person, V1Pod>;
  for (const who of people) {
    await waitForPhase(ns, who, "Ready", 120_000);
    pods[who] = await waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", who).deployment}`);
  }
  phase("seven environments");

  // The teacher's autograder goes where no student's environment mounts anything.
  await writeFilesIn(pods.tess, `${GRADERS}/calculator`, filesOf(join(FIXTURE, "autograder")));
  await sh(pods.tess, `chmod +x ${GRADERS}/calculator/run_autograder`);
  await writeFilesIn(pods.tess, `${GRADERS}/calculator-solution`, {
    "calculator.py": readFileSync(join(FIXTURE, "submissions", "correct.py"), "utf8"),
  });
  await writeFilesIn(pods.tess, `${COURSE}/calculator`, {
    "calculator.py": "def add(a, b):\n    pass\n",
  });
  for (const who of ["ann", "ben", "cat", "dan", "eve", "fay"] as const) {
    const seen = await execInContainer(pods[who], [
      "sh",
      "-c",
      `ls ${GRADERS} 2>&1; grep -rl HIDDEN-TEST-MARKER /home /srv /tmp 2>/dev/null; true`,
    ]);
    assert.match(seen.stdout, /No such file or directory/, `${who} has no ${GRADERS}`);
    assert.doesNotMatch(seen.stdout, /test_calculator|HIDDEN/, `${who} sees no hidden test anywhere`);
  }

  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: {
      templateName: "lab",
      title: "Calculator",
      source: { folder: "course", path: "calculator" },
      deadline: "2099-01-01T00:00:00Z",
      autograder: {
        folder: "graders",
        path: "calculator",
        solution: "calculator-solution",
        image: jupyter.ref,
        timeoutSeconds: TIMEOUT_SECONDS,
      },
    },
  });
  const checked = await eventually(
    "the autograder checked against the reference solution and the starter files",
    async () => {
      const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
      return a.status?.autograder?.checked === true && a;
    },
    GRADE_MS,
    250,
  );
  assert.equal(condition(checked, "AutograderReady")?.reason, "Checked");
  assert.deepEqual(
    [checked.status?.autograder?.check?.solution?.score, checked.status?.autograder?.check?.starter?.score],
    [5, 0],
    "the solution scores full marks, the starter files nothing",
  );
  const getS = (who: string) => rest.get<Submission>(submissionsPath(ns, submissionNameFor("a1", who)));
  for (const who of ["ann", "ben", "cat", "dan", "eve", "fay"] as const)
    await eventually(
      `${who}'s handout`,
      async () => (await getS(who).catch(() => undefined))?.status?.distributedRelease === 1,
      GRADE_MS,
      250,
    );
  phase("autograder and handout");

  // Each student writes their calculator.py and hands in.
  const annIp = pods.ann.status?.podIP ?? "";
  assert.ok(annIp, "ann's environment has an address in the node's network namespace");
  const work = {
    ann: "correct.py",
    ben: "partial.py",
    cat: "loop.py",
    dan: "network.py",
    eve: "disk.py",
    fay: "forkbomb.py",
  } as const;
  const handIn = async (who: keyof typeof work) => {
    const text = readFileSync(join(FIXTURE, "submissions", work[who]), "utf8").replace(
      "__TARGET__",
      `${annIp}:8080`,
    );
    await writeFilesIn(pods[who], `${LAB_HOME}/assignments/a1`, { "calculator.py": text });
    await rest.patch(submissionsPath(ns, submissionNameFor("a1", who)), {
      spec: { handInRequestedAt: now(), handInRequestedBy: "student" },
    });
  };
  // The control for dan's attempt: from an environment (no policy of ours), ann's address answers.
  const control = await execInContainer(pods.tess, ["nc", "-z", "-w", "3", annIp, "8080"]);
  assert.equal(control.code, 0, `ann's environment answers tess: ${control.stderr}`);

  const attempted = async (who: string) =>
    eventually(
      `${who}'s grading run`,
      async () => {
        const s = await getS(who);
        return s.status?.gradeAttempt && s;
      },
      GRADE_MS,
      500,
    );
  const graded = {} as Record<keyof typeof work, Submission>;
  // The loop and the fork bomb use their CPU limit to the timeout: they come after the others, whose
  // runs must end on their own (on a 2-core machine busy with other tests, beside them they might not).
  for (const group of [
    ["ann", "ben", "dan", "eve"],
    ["cat", "fay"],
  ] as const) {
    for (const who of group) await handIn(who);
    for (const who of group) graded[who] = await attempted(who);
  }
  phase("six hand-ins graded");

  const scoreOf = (s: Submission) => [
    s.status?.grade?.score,
    s.status?.grade?.maxScore,
    s.status?.gradeAttempt?.reason,
  ];
  assert.deepEqual(scoreOf(graded.ann), [5, 5, "Graded"], "ann: every test passes");
  assert.deepEqual(
    scoreOf(graded.ben),
    [2, 5, "Graded"],
    "ben: add passes; subtract and the hidden test fail",
  );
  assert.deepEqual(
    graded.ben.status?.grade?.tests?.map((x) => [x.name, x.status, x.visibility ?? "visible"]),
    [
      ["test_add", "passed", "visible"],
      ["test_hidden_multiply_negative", "failed", "hidden"],
      ["test_subtract", "failed", "visible"],
    ],
  );
  assert.equal(graded.cat.status?.grade, undefined, "cat's loop has no score");
  assert.equal(graded.cat.status?.gradeAttempt?.reason, "TimedOut");
  assert.match(
    graded.cat.status?.gradeAttempt?.message ?? "",
    new RegExp(`^timed out after ${TIMEOUT_SECONDS} s`),
  );
  assert.deepEqual(scoreOf(graded.dan), [5, 5, "Graded"], "dan's functions are right");
  assert.deepEqual(scoreOf(graded.eve), [5, 5, "Graded"], "eve's functions are right");
  assert.equal(graded.fay.status?.grade, undefined, "fay's fork bomb has no score");
  assert.ok(
    ["TimedOut", "OutOfMemory"].includes(graded.fay.status?.gradeAttempt?.reason ?? ""),
    `fay's fork bomb ends as a result: ${JSON.stringify(graded.fay.status?.gradeAttempt)}`,
  );

  // What the autograder printed is the teacher's to read, in the collection's grades/.
  const output = (s: Submission) => sh(pods.tess, `cat ${LAB_COLLECTION}/${s.status?.grade?.results}/stdout`);
  const danOut = await output(graded.dan);
  assert.match(danOut, /^dns: blocked \(/m, "no resolver in the grading pod");
  assert.match(danOut, /^http: blocked \(/m, "the deny-all policy: ann's environment unreachable");
  const eveOut = await output(graded.eve);
  const mib = Number(/^disk: stopped after (\d+) MiB \(No space left on device\)/m.exec(eveOut)?.[1]);
  assert.ok(mib > 0 && mib <= 1024, `eve's write stopped at the 1 GiB scratch volume: ${eveOut}`);
  const results = await sh(
    pods.tess,
    `cat ${LAB_COLLECTION}/${graded.ben.status?.grade?.results}/results.json`,
  );
  assert.match(results, /HIDDEN|test_hidden_multiply_negative/, "the teacher sees the hidden test's result");
  // Nothing of the autograder reached a student's environment.
  for (const who of Object.keys(work) as (keyof typeof work)[]) {
    const seen = await execInContainer(pods[who], [
      "sh",
      "-c",
      `grep -rl 'test_hidden\\|HIDDEN-TEST' ${LAB_HOME} /srv 2>/dev/null; true`,
    ]);
    assert.equal(seen.stdout.trim(), "", `${who}'s environment has no trace of the hidden test`);
  }
  t.diagnostic(
    `cat: ${graded.cat.status?.gradeAttempt?.message}; fay: ${graded.fay.status?.gradeAttempt?.reason}; eve: ${mib} MiB written; dan: ${danOut.trim().replace(/\n/g, " | ")}`,
  );
  phase("results checked");

  // ben fixes his work and hands in again: version 2 counts and is graded; the teacher then picks
  // version 1, and its grade comes back. Both versions stay in the collection.
  await writeFilesIn(pods.ben, `${LAB_HOME}/assignments/a1`, {
    "calculator.py": readFileSync(join(FIXTURE, "submissions", "correct.py"), "utf8"),
  });
  await rest.patch(submissionsPath(ns, submissionNameFor("a1", "ben")), {
    spec: { handInRequestedAt: now(), handInRequestedBy: "student" },
  });
  const counted = (version: number, score: number) =>
    eventually(
      `ben's version ${version} counted and graded ${score}`,
      async () => {
        const s = await getS("ben");
        return s.status?.receipt?.version === version && s.status.grade?.score === score && s;
      },
      GRADE_MS,
      500,
    );
  const second = await counted(2, 5);
  assert.deepEqual(
    second.status?.versions?.map((v) => [v.version, v.score ?? null]),
    [
      [1, 2],
      [2, null],
    ],
    "both versions kept; version 1 keeps the score it had while it counted",
  );
  assert.equal(second.status?.grade?.receiptSha256, second.status?.versions?.[1]?.sha256);
  await rest.patch(submissionsPath(ns, submissionNameFor("a1", "ben")), {
    spec: { review: { countedVersion: 1 } },
  });
  await counted(1, 2);
  const folders = await sh(
    pods.tess,
    `ls ${LAB_COLLECTION}/handins/${await collectionFolder(ns, "a1")}/${collectionUserFolder("ben")}`,
  );
  assert.deepEqual(folders.trim().split(/\s+/), ["1", "2"], "each version in a folder of its own");
  phase("ben's second version");

  // ann breaks her file after handing in; the teacher raises the hidden test's weight and publishes
  // the autograder again: every hand-in is graded again, from the frozen copy.
  await sh(pods.ann, `printf 'def add(a, b):\\n    return 0\\n' > ${LAB_HOME}/assignments/a1/calculator.py`);
  await sh(pods.tess, `sed -i 's/@weight(1)/@weight(3)/' ${GRADERS}/calculator/tests/test_calculator.py`);
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { autograder: { release: 2 } } });
  const regraded = await eventually(
    "ann graded again by release 2",
    async () => {
      const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
      const s = await getS("ann");
      return (
        a.status?.autograder?.release === 2 &&
        s.status?.gradeAttempt?.autograderRevision === a.status.autograder.revision &&
        s
      );
    },
    GRADE_MS,
    500,
  );
  assert.deepEqual(
    scoreOf(regraded),
    [7, 7, "Graded"],
    "the frozen hand-in, not ann's broken file, is graded",
  );
  assert.notEqual(regraded.status?.grade?.autograderRevision, graded.ann.status?.grade?.autograderRevision);
  assert.equal(regraded.status?.grade?.receiptSha256, graded.ann.status?.receipt?.sha256);
  phase("graded again");
});
