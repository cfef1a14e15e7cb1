/**
 * The Assignment and Submission controllers against the real API server (docs/decisions/0011-
 * coursework.md): what they decide, which copy pods they make and what they write from a copy pod's
 * result. kwok runs no containers: a test finishes a copy pod by writing its terminated status (the
 * container's exit code and termination message) as the kubelet would, through pods/status.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1NetworkPolicy, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import { childNames, collectionUserFolder, submissionNameFor } from "../../api/naming.ts";
import {
  assignmentsPath,
  submissionsPath,
  type Assignment,
  type Submission,
  type TemplateSpec,
} from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { isConflict, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { installToolCrds } from "../../test/chart/support.ts";
import { resources } from "../resources.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import { copyRetryDelay } from "../coursework/copyRuns.ts";
import { onNode } from "../coursework/copyPods.ts";
import {
  adminRest,
  collectionFolder,
  createTemplate,
  createUserland,
  placeEnvironmentPod,
  simpleTemplateSpec,
} from "../../test/support/resources.ts";

const IMAGE = "registry.invalid/userland:test";
const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };
const SHA = (c: string) => c.repeat(64);

const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);

const courseworkSpec = (collection = true): TemplateSpec =>
  simpleTemplateSpec("registry.invalid/ide:1", {
    volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
    coursework: {
      home: { volume: "home", mountPath: "/home/student" },
      folders: [{ name: "course", mountPath: "/srv/course", pvcSpec: claimSpec }],
      ...(collection ? { collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" } } : {}),
    },
  });

const assignment = (name: string, templateName: string, extra: Partial<Assignment["spec"]> = {}) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Assignment",
  metadata: { name },
  spec: { templateName, title: "Week 1", source: { folder: "course", path: "week1" }, ...extra },
});

/** The copy pods of `job` in `ns`, as the API server has them. */
async function copyPods(rest: KubeRest, ns: string, job: string): Promise<V1Pod[]> {
  const list = await rest.list<V1Pod>(podsPath(ns), { query: { labelSelector: `userland.dev/copy=${job}` } });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

const finished = (pod: V1Pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

/** Finishes a copy pod as the kubelet would: its container terminated with `exitCode` and `message`. */
async function finish(rest: KubeRest, pod: V1Pod, exitCode: number, result: object): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await rest.patch(podsPath(pod.metadata?.namespace ?? "", pod.metadata?.name, "status"), {
    status: {
      phase: exitCode === 0 ? "Succeeded" : "Failed",
      containerStatuses: [
        {
          name: "copy",
          image: IMAGE,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: { exitCode, message: JSON.stringify(result), startedAt: now, finishedAt: now },
          },
        },
      ],
    },
  });
}

const condition = (
  obj: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } },
  type: string,
) => obj.status?.conditions?.find((c) => c.type === type);

test("an Assignment is published by a locked-down copy pod, read again after an operator restart; every student gets a Submission, a copy into their volume (on their running environment's node), a hand-in and, at the closing time, the platform's request", async (t) => {
  const ns = await testNamespace(t, "asgn");
  const rest = await adminRest();
  const operator = await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "lab", courseworkSpec());
  await createUserland(ns, "alice", "alice", "lab", false);
  await createUserland(ns, "bob", "bob", "lab", false);
  await createUserland(ns, "carol", "carol", "lab", true);
  await rest.create(assignmentsPath(ns), assignment("a1", "lab", { deadline: "2099-01-01T00:00:00Z" }));
  const a1 = await collectionFolder(ns, "a1");

  // The collection claim is the Template's, Retain: no owner.
  const collection = await eventually("the collection claim", () =>
    rest
      .get<{ metadata: { ownerReferences?: unknown[]; annotations?: Record<string, string> } }>(
        paths.namespaced("", "v1", "persistentvolumeclaims", ns, "lab-collection"),
      )
      .catch(() => undefined),
  );
  assert.equal(collection.metadata.ownerReferences, undefined);
  assert.equal(collection.metadata.annotations?.["userland.dev/course-template"], "lab");

  const [publish] = await eventually("the publish pod", async () => {
    const pods = await copyPods(rest, ns, "publish");
    return pods.length > 0 && pods;
  });
  assert.ok(publish);
  const spec = publish.spec;
  const container = spec?.containers[0];
  assert.equal(spec?.automountServiceAccountToken, false);
  assert.equal(spec?.restartPolicy, "Never");
  assert.ok((spec?.activeDeadlineSeconds ?? 0) > 0);
  assert.deepEqual(
    [
      spec?.securityContext?.runAsUser,
      spec?.securityContext?.runAsGroup,
      spec?.securityContext?.runAsNonRoot,
    ],
    [1000, 1000, true],
  );
  assert.equal(container?.image, IMAGE);
  assert.deepEqual(container?.command, [
    "node",
    "coursework/copy.ts",
    "handin",
    "/source/week1",
    `/published/${a1}/1`,
  ]);
  assert.equal(container?.terminationMessagePolicy, "File");
  assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
  assert.equal(container?.securityContext?.allowPrivilegeEscalation, false);
  assert.deepEqual(container?.securityContext?.capabilities?.drop, ["ALL"]);
  assert.ok(container?.resources?.limits?.cpu && container.resources.limits.memory);
  assert.deepEqual(
    spec?.volumes?.map((v) => [
      v.persistentVolumeClaim?.claimName,
      v.persistentVolumeClaim?.readOnly ?? false,
    ]),
    [
      ["lab-course-course", true],
      ["lab-collection", false],
    ],
  );
  assert.deepEqual(
    container?.volumeMounts?.map((m) => [m.mountPath, m.subPath ?? "", m.readOnly ?? false]),
    [
      ["/source", "", true],
      ["/published", "published", false],
    ],
  );
  const policy = await rest.get<V1NetworkPolicy>(
    paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns, "userland-copy-pods-deny-all"),
  );
  assert.deepEqual(policy.spec?.policyTypes, ["Ingress", "Egress"]);
  assert.equal(policy.spec?.ingress, undefined);
  assert.equal(policy.spec?.egress, undefined);
  await eventually(
    "Published=False, Publishing",
    async () =>
      condition(await rest.get<Assignment>(assignmentsPath(ns, "a1")), "Published")?.reason === "Publishing",
  );

  // The operator stops while the copy runs; the copy ends; a new operator reads the same pod.
  assert.equal(await operator.stop("SIGTERM"), 0);
  await finish(rest, publish, 0, {
    files: [{ path: "a.py", bytes: 3, sha256: SHA("1") }],
    bytes: 3,
    sha256: SHA("a"),
    skipped: [],
  });
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  const published = await eventually("the published release", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return a.status?.publishedRelease === 1 && a;
  });
  assert.equal(published.status?.publishedRevision, SHA("a"));
  assert.equal(condition(published, "Published")?.status, "True");
  await eventually(
    "the finished publish pod deleted, none made again",
    async () => (await copyPods(rest, ns, "publish")).length === 0,
  );

  // One Submission per student, owned by the Assignment.
  for (const user of ["alice", "bob", "carol"]) {
    const s = await eventually(`${user}'s Submission`, () =>
      rest.get<Submission>(submissionsPath(ns, submissionNameFor("a1", user))).catch(() => undefined),
    );
    assert.equal(s.metadata.ownerReferences?.[0]?.kind, "Assignment");
  }

  // A copy into each volume: a stopped environment's anywhere; a running one's waits for its node.
  const home = (userland: string) => childNames("lab", userland).pvc("home");
  const byClaim = (pods: V1Pod[], userland: string) =>
    pods.find((p) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === home(userland)));
  const distributes = await eventually("alice's and bob's distribute pods", async () => {
    const pods = await copyPods(rest, ns, "distribute");
    return byClaim(pods, "alice") && byClaim(pods, "bob") && pods;
  });
  const alicePod = byClaim(distributes, "alice");
  assert.ok(alicePod);
  assert.equal(alicePod.spec?.affinity, undefined);
  assert.deepEqual(alicePod.spec?.containers[0]?.command?.slice(2), [
    "distribute",
    "/collection",
    "/home-claim/assignments/a1",
  ]);
  assert.deepEqual(
    alicePod.spec?.containers[0]?.volumeMounts?.map((m) => [
      m.mountPath,
      m.subPath ?? "",
      m.readOnly ?? false,
    ]),
    [
      ["/collection", `published/${a1}/1`, true],
      ["/home-claim", "", false],
    ],
  );
  const carolName = submissionNameFor("a1", "carol");
  await eventually("carol's copy waiting for her environment's node", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, carolName));
    return condition(s, "Distributed")?.reason === "WaitingForVolume";
  });
  assert.equal(byClaim(await copyPods(rest, ns, "distribute"), "carol"), undefined);
  const node = await placeEnvironmentPod(ns, childNames("lab", "carol").deployment);
  const carolPod = await eventually("carol's distribute pod", async () =>
    byClaim(await copyPods(rest, ns, "distribute"), "carol"),
  );
  assert.deepEqual(carolPod.spec?.affinity, onNode(node), "on the node of carol's running environment");

  await finish(rest, alicePod, 0, {
    revision: SHA("a"),
    files: 1,
    written: [],
    updated: [],
    unchanged: 0,
    kept: [{ path: "a.py", reason: "changed by the student" }],
    skipped: [],
  });
  const aliceName = submissionNameFor("a1", "alice");
  const distributed = await eventually("alice's copy", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, aliceName));
    return s.status?.distributedRelease === 1 && s;
  });
  assert.equal(distributed.status?.distributedRevision, SHA("a"));
  assert.deepEqual(distributed.status?.keptOwnVersion, ["a.py"]);

  // alice hands in; her folder is over the limit: a condition with the message, no receipt.
  await rest.patch(submissionsPath(ns, aliceName), {
    spec: { handInRequestedAt: "2026-01-01T00:00:00Z", handInRequestedBy: "student" },
  });
  const [handin] = await eventually("alice's hand-in pod", async () => {
    const pods = await copyPods(rest, ns, "handin");
    return pods.length > 0 && pods;
  });
  assert.ok(handin);
  assert.deepEqual(handin.spec?.containers[0]?.command?.slice(2), [
    "handin",
    "/home-claim/assignments/a1",
    `/collection/${a1}/${collectionUserFolder("alice")}/1`,
    "--moment",
    "2026-01-01T00:00:00Z",
    "--max-bytes",
    "104857600",
    "--max-files",
    "1000",
  ]);
  assert.deepEqual(
    handin.spec?.containers[0]?.volumeMounts?.map((m) => [m.mountPath, m.subPath ?? "", m.readOnly ?? false]),
    [
      ["/home-claim", "", true],
      ["/collection", "handins", false],
    ],
  );
  assert.equal(
    handin.spec?.volumes?.find((v) => v.persistentVolumeClaim?.claimName === home("alice"))
      ?.persistentVolumeClaim?.readOnly,
    true,
  );
  await finish(rest, handin, 3, {
    error: { kind: "limit", message: "more than 1000 files: hand in fewer", limit: "maxFiles", value: 1001 },
  });
  const over = await eventually("alice's over-limit condition", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, aliceName));
    return condition(s, "HandedIn")?.reason === "OverLimit" && s;
  });
  // Refused for good (issue 41 item 5): no retry takes her files later, after their moment; the
  // message is copy.ts's, for the student, who may hand in again.
  assert.equal(
    condition(over, "HandedIn")?.message,
    "The hand-in of 2026-01-01T00:00:00Z was refused: more than 1000 files: hand in fewer. Nothing was collected; hand in again once it is fixed",
  );
  assert.deepEqual(
    { ...over.status?.refusedHandIn, at: undefined },
    {
      requestedAt: "2026-01-01T00:00:00Z",
      reason: "OverLimit",
      message: "more than 1000 files: hand in fewer",
      at: undefined,
    },
  );
  assert.equal(over.status?.failedCopies, undefined, "nothing to try again");
  assert.equal(over.status?.receipt, undefined);

  // The closing time passes: the platform asks for bob's and carol's hand-ins, not alice's again.
  await rest.patch(assignmentsPath(ns, "a1"), { spec: { deadline: "2026-02-01T00:00:00Z" } });
  const bobName = submissionNameFor("a1", "bob");
  const bob = await eventually("bob's hand-in requested by the deadline", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, bobName));
    return s.spec.handInRequestedAt ? s : undefined;
  });
  assert.deepEqual(
    [bob.spec.handInRequestedAt, bob.spec.handInRequestedBy],
    ["2026-02-01T00:00:00Z", "deadline"],
  );
  const alice = await rest.get<Submission>(submissionsPath(ns, aliceName));
  assert.deepEqual(
    [alice.spec.handInRequestedAt, alice.spec.handInRequestedBy],
    ["2026-01-01T00:00:00Z", "student"],
  );

  const bobHandin = await eventually("bob's hand-in pod", async () =>
    (await copyPods(rest, ns, "handin")).find((p) =>
      p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === home("bob")),
    ),
  );
  await finish(rest, bobHandin, 0, {
    files: [{ path: "a.py", bytes: 3, sha256: SHA("1") }],
    bytes: 3,
    sha256: SHA("b"),
    skipped: [{ path: "link", reason: "a symbolic link" }],
    omitted: { skipped: 2 },
  });
  const receipt = await eventually(
    "bob's receipt",
    async () => (await rest.get<Submission>(submissionsPath(ns, bobName))).status?.receipt,
  );
  assert.deepEqual(receipt, {
    version: 1,
    requestedAt: "2026-02-01T00:00:00Z",
    time: receipt.time,
    files: 1,
    bytes: 3,
    sha256: SHA("b"),
    late: false,
    deadline: "2026-02-01T00:00:00Z",
    by: "deadline",
    skipped: 3,
  });
  const counted = await eventually("the counts", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return a.status?.handedIn === 1 && a;
  });
  assert.deepEqual(
    [
      counted.status?.students,
      counted.status?.distributed,
      counted.status?.handedIn,
      counted.status?.late,
      counted.status?.missing,
    ],
    [3, 1, 1, 0, 2],
  );
  const aliceAtEnd = await rest.get<Submission>(submissionsPath(ns, aliceName));
  assert.deepEqual(
    [aliceAtEnd.status?.receipt, aliceAtEnd.status?.refusedHandIn?.requestedAt],
    [undefined, "2026-01-01T00:00:00Z"],
    "alice's refused hand-in was never collected by the closing time's request",
  );
});

test("an Assignment deleted and made again with its name shares nothing with the first: a folder of its own in the collection, its own Submissions, none of the first one's hand-ins counted or in its way (issue 41 item 6)", async (t) => {
  const ns = await testNamespace(t, "asgn-again");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "lab", courseworkSpec());
  await createUserland(ns, "alice", "alice", "lab", false);
  await createUserland(ns, "bob", "bob", "lab", false);
  const create = () =>
    rest.create<Assignment>(
      assignmentsPath(ns),
      assignment("a1", "lab", { deadline: "2099-01-01T00:00:00Z" }),
    );
  const aliceName = submissionNameFor("a1", "alice");
  const podWriting = (job: string, target: string) =>
    eventually(`the ${job} pod writing ${target}`, async () =>
      (await copyPods(rest, ns, job)).find((p) => p.spec?.containers[0]?.command?.[4] === target),
    );
  const handIn = async (folder: string) => {
    await rest.patch(submissionsPath(ns, aliceName), {
      spec: { handInRequestedAt: "2026-01-01T00:00:00Z", handInRequestedBy: "student" },
    });
    return podWriting("handin", `/collection/${folder}/${collectionUserFolder("alice")}/1`);
  };

  const firstUid = (await create()).metadata.uid;
  const first = await collectionFolder(ns, "a1");
  await finish(rest, await podWriting("publish", `/published/${first}/1`), 0, {
    files: [],
    bytes: 0,
    sha256: SHA("a"),
    skipped: [],
  });
  await eventually("alice's Submission", () =>
    rest.get<Submission>(submissionsPath(ns, aliceName)).catch(() => undefined),
  );
  await finish(rest, await handIn(first), 0, { files: [], bytes: 0, sha256: SHA("b"), skipped: [] });
  await eventually("alice's receipt", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return a.status?.handedIn === 1;
  });

  // A finalizer holds alice's Submission of the first while the second is made: the garbage
  // collector's window, as long as the test needs it.
  await rest.patch(submissionsPath(ns, aliceName), { metadata: { finalizers: ["test.userland.dev/hold"] } });
  await rest.delete(assignmentsPath(ns, "a1"));
  await eventually("the first a1 gone", async () =>
    rest.get(assignmentsPath(ns, "a1")).then(
      () => false,
      (error: unknown) => isNotFound(error),
    ),
  );
  const secondUid = (await create()).metadata.uid;
  assert.notEqual(secondUid, firstUid);
  const second = await collectionFolder(ns, "a1");
  assert.notEqual(second, first);
  await finish(rest, await podWriting("publish", `/published/${second}/1`), 0, {
    files: [],
    bytes: 0,
    sha256: SHA("c"),
    skipped: [],
  });
  const counted = await eventually("the second a1 counts bob alone", async () => {
    const a = await rest.get<Assignment>(assignmentsPath(ns, "a1"));
    return a.status?.publishedRelease === 1 && a.status.students === 1 && a;
  });
  assert.equal(counted.status?.handedIn, 0, "alice's hand-in of the first is not the second's");

  // Let go, the first one's Submission is collected, and alice gets one of the second.
  await rest.patch(submissionsPath(ns, aliceName), { metadata: { finalizers: null } });
  const fresh = await eventually("alice's Submission of the second a1", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, aliceName)).catch(() => undefined);
    return s?.metadata.ownerReferences?.[0]?.uid === secondUid && s;
  });
  assert.equal(fresh.status?.receipt, undefined);
  // Her hand-in goes to the second one's folder: the first one's version 1 is not in its way.
  await finish(rest, await handIn(second), 0, { files: [], bytes: 0, sha256: SHA("d"), skipped: [] });
  const received = await eventually("her receipt of the second a1", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, aliceName));
    return s.status?.receipt && s;
  });
  assert.equal(received.status?.receipt?.sha256, SHA("d"));
});

test("an Assignment says what keeps it from being published: no Template, a Template without coursework, an unknown source folder, no copy image", async (t) => {
  const ns = await testNamespace(t, "asgn-cond");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "plain", courseworkSpec(false));
  await createTemplate(ns, "lab", courseworkSpec());
  await rest.create(assignmentsPath(ns), assignment("nothere", "missing"));
  await rest.create(assignmentsPath(ns), assignment("nocollection", "plain"));
  await rest.create(assignmentsPath(ns), {
    ...assignment("nofolder", "lab"),
    spec: { ...assignment("x", "lab").spec, source: { folder: "other", path: "w" } },
  });
  const expect = async (name: string, reason: string, message: RegExp) => {
    const a = await eventually(`${name}: ${reason}`, async () => {
      const got = await rest.get<Assignment>(assignmentsPath(ns, name));
      const published = condition(got, "Published");
      return published?.reason === reason && message.test(published.message) && got;
    });
    assert.equal(condition(a, "Published")?.status, "False");
    assert.match(condition(a, "Published")?.message ?? "", message);
  };
  await expect("nothere", "TemplateNotFound", /Template "missing" does not exist/);
  await expect("nocollection", "CourseworkNotSet", /needs spec\.coursework\.collection/);
  await expect("nofolder", "SourceFolderNotFound", /no course folder "other"/);
  // Someone else's claim holds the collection's name: nothing is published into it.
  await rest.create(paths.namespaced("", "v1", "persistentvolumeclaims", ns), {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "taken-collection" },
    spec: claimSpec,
  });
  await createTemplate(ns, "taken", courseworkSpec());
  await rest.create(assignmentsPath(ns), assignment("taken", "taken"));
  await expect("taken", "CollectionUnavailable", /Template "taken": .*taken-collection/);
  assert.deepEqual(await copyPods(rest, ns, "publish"), []);

  const other = await testNamespace(t, "asgn-noimg");
  await startOperator(t, other);
  await createTemplate(other, "lab", courseworkSpec());
  await rest.create(assignmentsPath(other), assignment("a", "lab"));
  const a = await eventually("CopyImageUnset", async () => {
    const got = await rest.get<Assignment>(assignmentsPath(other, "a"));
    return condition(got, "Published")?.reason === "CopyImageUnset" && got;
  });
  assert.match(condition(a, "Published")?.message ?? "", /OPERATOR_COPY_IMAGE/);
});

test("failed copies say why and back off: PublishFailed tried again after 2 s then 4 s (OPERATOR_COPY_RETRY doubling), CopyFailed, NothingToCopy, NoEnvironment, the feedback job and NoFeedback", async (t) => {
  const ns = await testNamespace(t, "asgn-fail");
  const rest = await adminRest();
  // 2 s: a pod's finishedAt has whole seconds, so the first wait the test can see is at least 1 s.
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE, OPERATOR_COPY_RETRY: "2s" } });
  await createTemplate(ns, "lab", courseworkSpec());
  await createUserland(ns, "alice", "alice", "lab", false);
  await createUserland(ns, "bob", "bob", "lab", false);
  // An admin's Submission for someone with no environment of the Template (kubectl create).
  await rest.create(submissionsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Submission",
    metadata: { name: submissionNameFor("a1", "dave") },
    spec: { assignment: "a1", user: "dave" },
  });
  await rest.create(assignmentsPath(ns), assignment("a1", "lab"));
  const getA = () => rest.get<Assignment>(assignmentsPath(ns, "a1"));
  const getS = (user: string) => rest.get<Submission>(submissionsPath(ns, submissionNameFor("a1", user)));
  const podOf = (job: string, what: string, not?: string) =>
    eventually(`${what}`, async () =>
      (await copyPods(rest, ns, job)).find((p) => !finished(p) && p.metadata?.uid !== not),
    );
  const failure = { error: { kind: "failed", message: "EIO: i/o error, read" } };

  // The publish copy fails: PublishFailed with the message and when it runs again (2 s later).
  const first = await podOf("publish", "the publish pod");
  await finish(rest, first, 1, failure);
  const once = await eventually("PublishFailed", async () => {
    const a = await getA();
    return condition(a, "Published")?.reason === "PublishFailed" && a;
  });
  assert.match(
    condition(once, "Published")?.message ?? "",
    /^Release 1 of course\/week1: EIO: i\/o error, read \(failed once; trying again at \S+Z\)$/,
  );
  assert.equal(once.status?.failedCopies?.count, 1);
  assert.equal(once.status?.failedCopies?.pod, first.metadata?.name);
  // Again after 2 s, under the same name; its failure doubles the wait.
  const second = await podOf("publish", "the publish pod run again", first.metadata?.uid);
  assert.equal(second.metadata?.name, first.metadata?.name);
  await finish(rest, second, 1, failure);
  const twice = await eventually("two failures counted", async () => {
    const a = await getA();
    return a.status?.failedCopies?.count === 2 && a;
  });
  const finishedAt = (await rest.get<V1Pod>(podsPath(ns, second.metadata?.name))).status
    ?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
  assert.equal(
    Date.parse(twice.status?.failedCopies?.retryAt ?? "") - Date.parse(String(finishedAt)),
    4000,
    "the second wait is twice the first",
  );
  assert.match(condition(twice, "Published")?.message ?? "", /\(failed 2 times in a row; trying again at /);
  const third = await podOf("publish", "the publish pod a third time", second.metadata?.uid);
  await finish(rest, third, 0, { files: [], bytes: 0, sha256: SHA("a"), skipped: [] });
  const published = await eventually("published", async () => {
    const a = await getA();
    return a.status?.publishedRelease === 1 && a;
  });
  assert.equal(published.status?.failedCopies, undefined, "cleared by the success");

  // dave has no Userland: nothing can reach his work.
  const dave = await eventually("dave: NoEnvironment", async () => {
    const s = await getS("dave");
    return condition(s, "Distributed")?.reason === "NoEnvironment" && s;
  });
  assert.match(condition(dave, "Distributed")?.message ?? "", /dave has no Userland of Template "lab"/);

  // alice's copy fails (CopyFailed); bob's is refused (NothingToCopy, e.g. his folder is a link).
  const home = (userland: string) => childNames("lab", userland).pvc("home");
  const distributeOf = (userland: string, not?: string) =>
    eventually(`${userland}'s distribute pod`, async () =>
      (await copyPods(rest, ns, "distribute")).find(
        (p) =>
          !finished(p) &&
          p.metadata?.uid !== not &&
          p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === home(userland)),
      ),
    );
  const aliceFailed = await distributeOf("alice");
  await finish(rest, aliceFailed, 1, { error: { kind: "failed", message: "ENOSPC: no space left" } });
  await finish(rest, await distributeOf("bob"), 4, {
    error: { kind: "refused", message: "assignments/a1 is a symbolic link" },
  });
  const expectCondition = async (user: string, type: string, reason: string, message: RegExp) => {
    const s = await eventually(`${user}: ${reason}`, async () => {
      const got = await getS(user);
      return condition(got, type)?.reason === reason && got;
    });
    assert.match(condition(s, type)?.message ?? "", message);
    return s;
  };
  await expectCondition("alice", "Distributed", "CopyFailed", /^ENOSPC: no space left \(failed once; trying/);
  await expectCondition(
    "bob",
    "Distributed",
    "NothingToCopy",
    /^assignments\/a1 is a symbolic link \(failed once/,
  );

  // alice's retry succeeds; bob hands in instead. Feedback: bob's is returned, alice has none.
  await finish(rest, await distributeOf("alice", aliceFailed.metadata?.uid), 0, {
    revision: SHA("a"),
    files: 0,
    written: [],
    updated: [],
    unchanged: 0,
    kept: [],
    skipped: [],
  });
  await eventually("alice's copy", async () => (await getS("alice")).status?.distributedRelease === 1);
  await rest.patch(submissionsPath(ns, submissionNameFor("a1", "bob")), {
    spec: { handInRequestedAt: "2026-01-01T00:00:00Z", handInRequestedBy: "student" },
  });
  const [handin] = await eventually("bob's hand-in pod", async () => {
    const pods = await copyPods(rest, ns, "handin");
    return pods.length > 0 && pods;
  });
  assert.ok(handin);
  await finish(rest, handin, 0, { files: [], bytes: 0, sha256: SHA("b"), skipped: [] });
  await eventually("bob's receipt", async () => (await getS("bob")).status?.receipt);

  await rest.patch(assignmentsPath(ns, "a1"), { spec: { feedbackRelease: 1 } });
  const feedbackPods = await eventually("two feedback pods", async () => {
    const pods = await copyPods(rest, ns, "feedback");
    return pods.length === 2 && pods;
  });
  const byClaim = (userland: string) =>
    feedbackPods.find((p) =>
      p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === home(userland)),
    );
  const bobFeedback = byClaim("bob");
  const aliceFeedback = byClaim("alice");
  assert.ok(bobFeedback && aliceFeedback);
  assert.deepEqual(bobFeedback.spec?.containers[0]?.command?.slice(2), [
    "distribute",
    `/collection/${await collectionFolder(ns, "a1")}/${collectionUserFolder("bob")}`,
    "/home-claim/assignments/a1/feedback",
  ]);
  assert.deepEqual(
    bobFeedback.spec?.containers[0]?.volumeMounts?.map((m) => [
      m.mountPath,
      m.subPath ?? "",
      m.readOnly ?? false,
    ]),
    [
      ["/collection", "feedback", true],
      ["/home-claim", "", false],
    ],
  );
  await finish(rest, bobFeedback, 0, {
    revision: SHA("c"),
    files: 2,
    written: ["comments.txt", "grade.txt"],
    updated: [],
    unchanged: 0,
    kept: [],
    skipped: [],
  });
  const bob = await expectCondition(
    "bob",
    "FeedbackReturned",
    "Returned",
    /^2 files in assignments\/a1\/feedback\/$/,
  );
  assert.deepEqual([bob.status?.feedbackRelease, bob.status?.feedbackFiles], [1, 2]);
  await finish(rest, aliceFeedback, 4, {
    error: { kind: "refused", message: "/collection/a1/alice: no such folder" },
  });
  const alice = await expectCondition("alice", "FeedbackReturned", "NoFeedback", /no such folder/);
  assert.deepEqual([alice.status?.feedbackRelease, alice.status?.feedbackFiles], [1, 0]);
  await eventually(
    "finished feedback pods deleted",
    async () => (await copyPods(rest, ns, "feedback")).length === 0,
  );
});

test("a copy that keeps failing waits OPERATOR_COPY_RETRY, doubling, at most 10 minutes", () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 50].map((n) => copyRetryDelay(60_000, n)),
    [60_000, 120_000, 240_000, 480_000, 600_000, 600_000],
  );
});

/** What the test reads of a snapshot.storage.k8s.io/v1 VolumeSnapshot. */
interface VolumeSnapshot {
  metadata: { name: string; ownerReferences?: { kind: string; name: string }[]; deletionTimestamp?: string };
  spec: unknown;
}

test("with OPERATOR_HANDIN_SNAPSHOT_CLASS a hand-in is read from a VolumeSnapshot taken at its moment: no copy before it is ready, the copy pod mounts the restored claim, the receipt says when the files were frozen, and both go after (issue 42)", async (t) => {
  // The CSI external-snapshotter's own CRD; kwok has no snapshot controller, so the test writes the
  // snapshot's status as the controller would.
  await installToolCrds(["snapshot.storage.k8s.io_volumesnapshots.yaml"]);
  const ns = await testNamespace(t, "asgn-snap");
  const rest = await adminRest();
  // The chart's rights with the class set (volumesnapshots get/create/delete), and the setting.
  await startOperator(t, ns, {
    env: { OPERATOR_COPY_IMAGE: IMAGE, OPERATOR_HANDIN_SNAPSHOT_CLASS: "csi-snapshots" },
    chartValues: { operator: { handInSnapshots: { volumeSnapshotClass: "csi-snapshots" } } },
  });
  await createTemplate(ns, "lab", courseworkSpec());
  await createUserland(ns, "alice", "alice", "lab", false);
  await rest.create(assignmentsPath(ns), assignment("a1", "lab", { deadline: "2099-01-01T00:00:00Z" }));
  const name = submissionNameFor("a1", "alice");
  const request = { handInRequestedAt: "2026-01-01T00:00:00Z", handInRequestedBy: "student" };
  await rest
    .create(submissionsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Submission",
      metadata: { name },
      spec: { assignment: "a1", user: "alice", ...request },
    })
    .catch(async (error: unknown) => {
      // The Assignment controller made it first.
      if (!isConflict(error)) throw error;
      await rest.patch(submissionsPath(ns, name), { spec: request });
    });
  const home = childNames("lab", "alice").pvc("home");

  const snapshot = await eventually(
    "alice's snapshot",
    async () => (await rest.list<VolumeSnapshot>(resources.VolumeSnapshot.path(ns))).items[0],
  );
  assert.deepEqual(snapshot.spec, {
    volumeSnapshotClassName: "csi-snapshots",
    source: { persistentVolumeClaimName: home },
  });
  assert.deepEqual(
    snapshot.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
    [["Submission", name]],
  );
  await eventually("Snapshotting", async () => {
    const s = await rest.get<Submission>(submissionsPath(ns, name));
    return condition(s, "HandedIn")?.reason === "Snapshotting";
  });
  assert.deepEqual(await copyPods(rest, ns, "handin"), [], "no copy before the snapshot is ready");

  await rest.patch(resources.VolumeSnapshot.path(ns, snapshot.metadata.name, "status"), {
    status: { readyToUse: true, creationTime: "2026-01-01T00:00:01Z", restoreSize: "1Gi" },
  });
  const [handin] = await eventually("the hand-in pod", async () => {
    const pods = await copyPods(rest, ns, "handin");
    return pods.length > 0 && pods;
  });
  assert.ok(handin);
  const restored = await rest.get<V1PersistentVolumeClaim>(
    resources.PersistentVolumeClaim.path(ns, snapshot.metadata.name),
  );
  assert.deepEqual(restored.spec?.dataSource, {
    apiGroup: "snapshot.storage.k8s.io",
    kind: "VolumeSnapshot",
    name: snapshot.metadata.name,
  });
  assert.deepEqual(
    handin.spec?.volumes?.flatMap((v) =>
      v.persistentVolumeClaim
        ? [[v.persistentVolumeClaim.claimName, v.persistentVolumeClaim.readOnly ?? false]]
        : [],
    ),
    [
      [snapshot.metadata.name, true],
      ["lab-collection", false],
    ],
    "the restored claim, read-only, never the live home claim",
  );
  assert.equal(handin.spec?.affinity, undefined, "not tied to the environment's node");
  assert.ok(!handin.spec?.containers[0]?.command?.includes("--moment"), "nothing written after a snapshot");

  await finish(rest, handin, 0, {
    files: [{ path: "a.py", bytes: 3, sha256: SHA("1") }],
    bytes: 3,
    sha256: SHA("f"),
    skipped: [],
  });
  const receipt = await eventually(
    "alice's receipt",
    async () => (await rest.get<Submission>(submissionsPath(ns, name))).status?.receipt,
  );
  assert.deepEqual(
    [receipt.requestedAt, receipt.frozenAt, receipt.sha256, receipt.late],
    ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", SHA("f"), false],
  );
  await eventually("the snapshot and the restored claim deleted", async () => {
    const gone = async (path: string) =>
      rest.get<{ metadata: { deletionTimestamp?: string } }>(path).then(
        (o) => o.metadata.deletionTimestamp !== undefined,
        (error: unknown) => isNotFound(error),
      );
    return (
      (await gone(resources.VolumeSnapshot.path(ns, snapshot.metadata.name))) &&
      (await gone(resources.PersistentVolumeClaim.path(ns, snapshot.metadata.name)))
    );
  });
});
