/**
 * A whole assignment cycle on the real node with Kubernetes objects alone, as an admin runs it with
 * kubectl (docs/decisions/0011-coursework.md): the test creates and patches the Assignment and the
 * Submissions through the API; the operator (a process of the test, as in the other node tests,
 * with OPERATOR_COPY_IMAGE set as the chart sets it: the platform's image, built from the
 * Dockerfile and put into the node's containerd) runs real copy pods that mount local-path claims. The harness execs into environments (as `kubectl exec` would) to act as
 * the teacher and the students and to recompute every hash with coreutils; no platform component
 * execs.
 *
 * One Template with a home volume, a course folder and a collection; a teacher (tess) and three
 * students: ann edits and hands in on time, ben plants links and a FIFO, is over the limit once
 * and hands in late, cat is stopped and never hands in, so she is collected at the closing time.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, collectionUserFolder, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { paths } from "../../api/kubePaths.ts";
import { isNotFound } from "../../lib/kubeRest.ts";
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
  patchUserland,
  waitForPhase,
} from "../support/resources.ts";
import { realNode, waitForOnePodReady, shIn as sh } from "../support/realNode.ts";

const HOME = LAB_HOME;
const COURSE = "/srv/course";
const COLLECTION = LAB_COLLECTION;
/** How long one copy (a pod on the real node: start, node, copy) may take before the test fails. */
const COPY_MS = 60_000;

type Conditioned = { status?: { conditions?: { type: string; reason: string; message: string }[] } };
const condition = (o: Conditioned, type: string) => o.status?.conditions?.find((c) => c.type === type);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** coursework/README.md's check of a hand-in or an extracted archive, with coreutils, in `pod`. */
async function manifestHash(pod: V1Pod, dir: string): Promise<string> {
  const out = await sh(
    pod,
    `cd '${dir}' && find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0r sha256sum | sha256sum`,
  );
  return out.split(" ")[0] ?? "";
}

test("an assignment cycle with kubectl alone: published, distributed (running and stopped), re-published keeping a student's edit, handed in on time, late and at the closing time, hashes checked, feedback returned; links, a FIFO and an over-limit folder are refused", async (t) => {
  const phase = phaseClock(t);

  const node = await realNode();
  const image = await buildPlatformImage();
  await importImage(join(node.binDir, "ctr"), node.containerdSocket, image);
  phase("platform image");

  const ns = await testNamespace(t, "node-asgn");
  const rest = await adminRest();
  const role = await chartCourseTeacherRole(t, ns);
  await appointTeacher(ns, role, "tess", "teach-tess");
  // A failed copy's first retry after 2 s (1 min by default), so the over-limit case below is short.
  await startOperator(t, ns, {
    env: { OPERATOR_COPY_IMAGE: image.ref, OPERATOR_COPY_RETRY: "2s" },
  });
  await createTemplate(
    ns,
    "lab",
    realNodeLabTemplate(node.images.tools ?? "", "Assignments on the real node", COURSE),
  );
  const people = ["tess", "ann", "ben", "cat"] as const;
  for (const who of people) await createUserland(ns, who, who, "lab");
  const pods: Record<string, V1Pod> = {};
  for (const who of people) {
    await waitForPhase(ns, who, "Ready", 120_000);
    pods[who] = await waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", who).deployment}`);
  }
  const { tess, ann, ben, cat } = pods as Record<(typeof people)[number], V1Pod>;
  phase("four environments");

  const getA = () => rest.get<Assignment>(assignmentsPath(ns, "a1"));
  const subName = (who: string) => submissionNameFor("a1", who);
  const getS = (who: string) => rest.get<Submission>(submissionsPath(ns, subName(who)));
  const until = <T>(what: string, check: () => Promise<T | undefined | false>) =>
    eventually(what, check, COPY_MS, 250);
  const submission = (who: string, what: string, ok: (s: Submission) => boolean) =>
    until(`${who}: ${what}`, async () => {
      const s = await getS(who).catch(() => undefined);
      return s && ok(s) && s;
    }).catch(async (error: unknown) => {
      // What the operator says instead, for whoever reads the failure.
      const s = await getS(who).catch(() => undefined);
      throw new Error(
        `${(error as Error).message}; ${who}'s Submission: ${JSON.stringify(s?.spec)} ${JSON.stringify(s?.status)}`,
      );
    });

  // The teacher writes the handout in the course folder.
  await sh(
    tess,
    `mkdir -p ${COURSE}/week1/data && cd ${COURSE}/week1 && printf 'print(1)\\n' > main.py && printf 'read me\\n' > notes.txt && printf '1 2 3\\n' > data/input.txt`,
  );
  const source1 = await manifestHash(tess, `${COURSE}/week1`);

  // Published: the snapshot's hash is the one coreutils gives for the source.
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: {
      templateName: "lab",
      title: "Week 1",
      source: { folder: "course", path: "week1" },
      deadline: "2099-01-01T00:00:00Z",
      limits: { maxBytes: 1024 * 1024, maxFiles: 100 },
    },
  });
  const published = await until("release 1 published", async () => {
    const a = await getA();
    return a.status?.publishedRelease === 1 && a;
  });
  assert.equal(published.status?.publishedRevision, source1, "publishedRevision = sha256 of the source");
  // The teacher is no student of her own Template: no Submission, not counted, never collected.
  await until("three students counted", async () => (await getA()).status?.students === 3);
  await assert.rejects(getS("tess"), isNotFound, "the teacher has no Submission");
  phase("published");

  // Distributed into every running student's home, on their environment's node.
  for (const who of ["ann", "ben", "cat"]) {
    const s = await submission(who, "release 1 distributed", (x) => x.status?.distributedRelease === 1);
    assert.equal(s.status?.distributedRevision, source1);
    assert.equal(condition(s, "Distributed")?.reason, "Distributed");
  }
  for (const pod of [ann, ben, cat])
    assert.equal(
      await sh(
        pod,
        `cd ${HOME}/assignments/a1 && cat main.py notes.txt data/input.txt && id -u && stat -c %u main.py`,
      ),
      "print(1)\nread me\n1 2 3\n1000\n1000\n",
      `${pod.metadata?.name}: the files are there and theirs`,
    );
  phase("release 1 distributed");

  // cat stops; ann edits main.py; the teacher corrects both files and publishes release 2.
  await patchUserland(ns, "cat", { spec: { enabled: false } });
  await sh(ann, `printf 'print("mine")\\n' > ${HOME}/assignments/a1/main.py`);
  await sh(
    tess,
    `cd ${COURSE}/week1 && printf 'print(2)\\n' > main.py && printf 'read me, v2\\n' > notes.txt`,
  );
  const source2 = await manifestHash(tess, `${COURSE}/week1`);
  await waitForPhase(ns, "cat", "Stopped", 60_000);
  await until("cat's environment gone", async () => {
    const list = await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns), {
      query: { labelSelector: `${LABELS.instance}=${childNames("lab", "cat").deployment}` },
    });
    return list.items.length === 0;
  });
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { release: 2 } });
  const republished = await until("release 2 published", async () => {
    const a = await getA();
    return a.status?.publishedRelease === 2 && a;
  });
  assert.equal(republished.status?.publishedRevision, source2);
  const s2: Record<string, Submission> = {};
  for (const who of ["ann", "ben", "cat"])
    s2[who] = await submission(who, "release 2 distributed", (x) => x.status?.distributedRelease === 2);
  assert.deepEqual(s2.ann?.status?.keptOwnVersion, ["main.py"], "ann's edit is listed as kept");
  assert.deepEqual(s2.ben?.status?.keptOwnVersion ?? [], [], "ben changed nothing");
  assert.equal(
    await sh(ann, `cd ${HOME}/assignments/a1 && cat main.py notes.txt`),
    'print("mine")\nread me, v2\n',
    "ann keeps her edit and gets the corrected notes",
  );
  assert.equal(
    await sh(ben, `cd ${HOME}/assignments/a1 && cat main.py notes.txt`),
    "print(2)\nread me, v2\n",
    "ben's unchanged files are updated",
  );
  phase("release 2 (cat stopped)");

  // ann hands in on time.
  await rest.patch(submissionsPath(ns, subName("ann")), {
    spec: { handInRequestedAt: now(), handInRequestedBy: "student" },
  });
  const annIn = await submission("ann", "receipt", (x) => x.status?.receipt !== undefined);
  // The assignment's folder in the collection: its name and the start of its uid (issue 41 item 6).
  const a1Folder = await collectionFolder(ns, "a1");
  const handins = `${COLLECTION}/handins/${a1Folder}`;
  assert.deepEqual(
    { ...annIn.status?.receipt, time: undefined, bytes: undefined, copyStartedAt: undefined },
    {
      version: 1,
      requestedAt: annIn.spec.handInRequestedAt,
      copyStartedAt: undefined,
      time: undefined,
      bytes: undefined,
      files: 3, // main.py, notes.txt, data/input.txt: the delivery record is the platform's, not hers
      sha256: await manifestHash(tess, `${handins}/${collectionUserFolder("ann")}/1`),
      late: false,
      deadline: "2099-01-01T00:00:00Z",
      by: "student",
      skipped: 0,
    },
  );
  assert.equal(
    await sh(tess, `cat ${handins}/${collectionUserFolder("ann")}/1/main.py`),
    'print("mine")\n',
    "the teacher reads ann's hand-in",
  );
  phase("ann's hand-in");

  // ben: links out of his folder (to the course folder, to /etc), a FIFO, and a file over the limit.
  await sh(
    ben,
    `cd ${HOME}/assignments/a1 && ln -s ${COURSE} course-link && ln -s /etc etc-link && mkfifo pipe && printf 'ben\\n' >> main.py && dd if=/dev/zero of=big bs=1024 count=1100 2>/dev/null`,
  );
  // The deadline passes; hand-ins stay open (late) for an hour.
  const deadline = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, "Z");
  await rest.patch(assignmentsPath(ns, "a1"), {
    spec: { deadline, lateUntil: new Date(Date.now() + 3_600_000).toISOString() },
  });
  await rest.patch(submissionsPath(ns, subName("ben")), {
    spec: { handInRequestedAt: now(), handInRequestedBy: "student" },
  });
  const over = await submission("ben", "OverLimit", (x) => condition(x, "HandedIn")?.reason === "OverLimit");
  // Refused for good (issue 41 item 5): no retry takes his files later; he hands in again.
  assert.match(
    condition(over, "HandedIn")?.message ?? "",
    /^The hand-in of \S+Z was refused: Too much data: .*1 MiB.*Nothing was collected; hand in again once it is fixed$/,
  );
  assert.equal(over.status?.receipt, undefined);
  assert.equal(over.status?.refusedHandIn?.reason, "OverLimit");
  await sh(ben, `rm ${HOME}/assignments/a1/big`);
  // A moment of its own: requests only move forward, in whole seconds.
  await eventually("a second past the refused moment", () => now() !== over.spec.handInRequestedAt, 5000, 50);
  await rest.patch(submissionsPath(ns, subName("ben")), {
    spec: { handInRequestedAt: now(), handInRequestedBy: "student" },
  });
  const benIn = await submission("ben", "receipt of the new hand-in", (x) => x.status?.receipt !== undefined);
  const benFolder = `${handins}/${collectionUserFolder("ben")}/1`;
  assert.deepEqual(
    { ...benIn.status?.receipt, time: undefined, bytes: undefined, copyStartedAt: undefined },
    {
      version: 1,
      requestedAt: benIn.spec.handInRequestedAt,
      copyStartedAt: undefined,
      time: undefined,
      bytes: undefined,
      files: 3,
      sha256: await manifestHash(tess, benFolder),
      late: true,
      deadline,
      by: "student",
      skipped: 3,
    },
  );
  assert.equal(benIn.status?.failedCopies, undefined, "the count of failures is cleared");
  assert.equal(
    await sh(tess, `cd ${benFolder} && find . | LC_ALL=C sort`),
    ".\n./data\n./data/input.txt\n./main.py\n./notes.txt\n",
    "no link, FIFO or over-limit file was collected",
  );
  phase("ben's hand-in (over the limit, then late)");

  // The closing time: cat, stopped, is collected by the platform.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { lateUntil: now() } });
  const catIn = await submission(
    "cat",
    "collected at the closing time",
    (x) => x.status?.receipt !== undefined,
  );
  assert.equal(catIn.spec.handInRequestedBy, "deadline");
  assert.equal(catIn.status?.receipt?.by, "deadline");
  assert.equal(
    catIn.status?.receipt?.sha256,
    await manifestHash(tess, `${handins}/${collectionUserFolder("cat")}/1`),
  );
  const counted = await until("the counts", async () => {
    const a = await getA();
    return a.status?.handedIn === 3 && a;
  });
  assert.deepEqual([counted.status?.students, counted.status?.handedIn, counted.status?.missing], [3, 3, 0]);
  phase("cat collected at the closing time");

  // Feedback for ann, written by the teacher into the collection, returned by raising feedbackRelease.
  await sh(
    tess,
    `mkdir -p ${COLLECTION}/feedback/${a1Folder}/${collectionUserFolder("ann")} && printf 'well done\\n' > ${COLLECTION}/feedback/${a1Folder}/${collectionUserFolder("ann")}/comments.txt`,
  );
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { feedbackRelease: 1 } });
  const annBack = await submission("ann", "feedback returned", (x) => x.status?.feedbackRelease === 1);
  assert.equal(condition(annBack, "FeedbackReturned")?.reason, "Returned");
  assert.equal(annBack.status?.feedbackFiles, 1);
  assert.equal(await sh(ann, `cat ${HOME}/assignments/a1/feedback/comments.txt`), "well done\n");
  const benBack = await submission("ben", "no feedback", (x) => x.status?.feedbackRelease === 1);
  assert.equal(condition(benBack, "FeedbackReturned")?.reason, "NoFeedback");
  phase("feedback");
});
