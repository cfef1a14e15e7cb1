/**
 * The end of a term on the real node, with kubectl-style objects alone (docs/decisions/0011-
 * coursework.md, "End of term"): the operator (a process of the test; OPERATOR_COPY_IMAGE the
 * platform's image built from the Dockerfile, as in test/node/assignments.test.ts) archives a class
 * of three and its hand-ins into one zip in the collection with a real copy pod, reads it back with
 * a second one, lists the dry run, ends nothing on a wrong confirm and, on the right one, deletes
 * exactly the verified students' Userlands and claims. One student made a file of theirs unreadable
 * (the copy pods run as the student's user, without capabilities): their home cannot be archived
 * whole, so it is not verified and is kept. The teacher's own environment is not the class's.
 * Every file in the zip is checked with coreutils from a pod that mounts the collection read-only,
 * and the teacher's download (a real archive pod serving the zip as it is) is the zip read back.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, collectionUserFolder, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  archivesPath,
  assignmentsPath,
  classArchivesPath,
  submissionsPath,
  userlandsPath,
  type Archive,
  type ClassArchive,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { isConflict, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { paths } from "../../api/kubePaths.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import {
  appointTeacher,
  chartCourseTeacherRole,
  LAB_HOME,
  MANIFEST_SHA256_SCRIPT,
  realNodeLabTemplate,
} from "../support/coursework.ts";
import { startOperator } from "../support/operator.ts";
import { adminRest, createTemplate, createUserland, waitForPhase } from "../support/resources.ts";
import {
  onRealNode,
  realNode,
  waitForOnePodReady,
  waitForPodReady,
  shIn as sh,
} from "../support/realNode.ts";

const STUDENTS = ["ann", "ben", "cat"] as const;
/** The labels that make a pod an archive client (the chart gives them to the user-manager's pods). */
const CLIENT_LABEL = { "userland.dev/test-archive-client": "yes" };

const exists = (rest: KubeRest, path: string) =>
  rest.get(path).then(
    () => true,
    (e: unknown) => (isNotFound(e) ? false : Promise.reject(e as Error)),
  );

test("end of term on the real node: a class of three archived into one zip in the collection and read back, a dry run, a wrong confirm ending nothing, the right one deleting exactly the verified students' Userlands and claims; an unreadable home kept", async (t) => {
  const node = await realNode();
  const image = await buildPlatformImage();
  await importImage(join(node.binDir, "ctr"), node.containerdSocket, image);
  const tools = node.images.tools ?? "";

  const ns = await testNamespace(t, "node-term");
  const rest = await adminRest();
  await startOperator(t, ns, {
    env: {
      OPERATOR_COPY_IMAGE: image.ref,
      OPERATOR_ARCHIVE_CLIENTS: `${ns}:${Object.entries(CLIENT_LABEL)
        .map(([k, v]) => `${k}=${v}`)
        .join(",")}`,
    },
  });
  // A teacher, whose environment mounts (and so binds) the collection; she is not a student.
  await appointTeacher(ns, await chartCourseTeacherRole(t, ns), "tess", "teach-tess");
  await createTemplate(ns, "lab", realNodeLabTemplate(tools, "End of term on the real node"));
  for (const u of [...STUDENTS, "tess"]) await createUserland(ns, u, u, "lab");
  const pods = new Map<string, V1Pod>();
  for (const u of [...STUDENTS, "tess"]) {
    await waitForPhase(ns, u, "Ready", 120_000);
    pods.set(u, await waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", u).deployment}`));
  }

  // Each student's work; ann's with her answer to a1, a link out and a FIFO (no data: skipped, still complete); cat's
  // with a file she made unreadable (mode 000: the copy pods run as her user, without capabilities).
  const expected = new Map<string, string>();
  for (const u of STUDENTS) {
    const before =
      u === "ann"
        ? " && ln -s /etc/passwd passwd && mkfifo pipe && mkdir -p assignments/a1 && printf 'answer = 42\\n' > assignments/a1/answer.py"
        : u === "cat"
          ? " && printf 'private\\n' > secret.txt"
          : "";
    const after = u === "cat" ? " && chmod 000 secret.txt" : "";
    const hash = await sh(
      pods.get(u)!,
      `cd ${LAB_HOME} && mkdir -p src && printf '${u} was here\\n' > src/main.py && head -c 100000 /dev/urandom > data.bin${before} && ${MANIFEST_SHA256_SCRIPT}${after}`,
    );
    expected.set(u, hash.trim());
  }

  // Ann hands in a1 (the operator's real hand-in copy into the collection).
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "week1" } },
  });
  const request = {
    handInRequestedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    handInRequestedBy: "student",
  };
  await rest
    .create(submissionsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Submission",
      metadata: { name: submissionNameFor("a1", "ann") },
      spec: { assignment: "a1", user: "ann", ...request },
    })
    .catch(async (error: unknown) => {
      if (!isConflict(error)) throw error;
      await rest.patch(submissionsPath(ns, submissionNameFor("a1", "ann")), { spec: request });
    });
  const receipt = await eventually(
    "ann's receipt",
    async () =>
      (await rest.get<Submission>(submissionsPath(ns, submissionNameFor("a1", "ann")))).status?.receipt,
    90_000,
    250,
  );

  // kubectl apply: archive the class.
  await rest.create(classArchivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "ClassArchive",
    metadata: { name: "term1" },
    spec: { templateName: "lab", class: "*", archive: true },
  });
  const get = () => rest.get<ClassArchive>(classArchivesPath(ns, "term1"));
  const dry = await eventually(
    "the dry run",
    async () => {
      const ca = await get();
      if (ca.status?.phase === "Failed") throw new Error(`Failed: ${ca.status.message}`);
      return ca.status?.phase === "DryRun" && ca;
    },
    300_000,
    500,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify((await get()).status)}`);
  });
  const status = dry.status!;
  assert.deepEqual(
    status.students?.map((s) => s.user),
    [...STUDENTS],
    "the teacher's environment is not the class's",
  );
  assert.deepEqual(
    status.toDelete?.map((d) => [d.user, d.claims]),
    ["ann", "ben"].map((u) => [u, [childNames("lab", u).pvc("home")]]),
  );
  assert.deepEqual(
    status.kept?.map((k) => k.user),
    ["cat"],
  );
  assert.match(status.kept?.[0]?.reason ?? "", /secret\.txt: could not be read/);
  assert.deepEqual([status.studentCount, status.verifiedCount, status.toDeleteCount], [3, 2, 2]);
  for (const u of [...STUDENTS, "tess"]) {
    const enabled = (await rest.get<{ spec: { enabled?: boolean } }>(userlandsPath(ns, u))).spec.enabled;
    assert.equal(enabled, u === "tess" ? true : false, `${u} stopped (the teacher not)`);
  }

  // The zip in the collection, as a pod that mounts it read-only finds it: each student's home
  // byte for byte as they had it, and ann's hand-in as her receipt names it.
  await rest.create(paths.namespaced("", "v1", "pods", ns), {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "checker" },
    spec: {
      ...onRealNode,
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsUser: 1000, runAsGroup: 1000 },
      containers: [
        {
          name: "c",
          image: tools,
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
          volumeMounts: [{ name: "collection", mountPath: "/collection", readOnly: true }],
        },
      ],
      volumes: [
        { name: "collection", persistentVolumeClaim: { claimName: "lab-collection", readOnly: true } },
      ],
    },
  });
  const checker = await waitForPodReady(ns, "checker");
  const zipPath = `/collection/${status.archive?.path}`;
  assert.match(zipPath, /^\/collection\/archives\/term1-[a-z2-7]{8}\.zip$/);
  const folders = [
    ...STUDENTS.map((u) => `students/${collectionUserFolder(u)}/home`),
    `handins/a1/${collectionUserFolder("ann")}/1`,
  ];
  const out = (
    await sh(
      checker,
      `sha256sum ${zipPath} | cut -d' ' -f1 && cd /tmp && mkdir x && cd x && busybox unzip -q ${zipPath} && for f in ${folders.join(" ")}; do (cd $f && ${MANIFEST_SHA256_SCRIPT}); done && find . -type l -o -type p | wc -l`,
    )
  )
    .trim()
    .split("\n");
  assert.equal(out[0], status.archive?.sha256, "the zip is the one read back");
  assert.equal(out[1], expected.get("ann"), "ann's home, links and FIFOs left out");
  assert.equal(out[2], expected.get("ben"), "ben's home");
  assert.notEqual(out[3], expected.get("cat"), "cat's unreadable file is not in the zip");
  assert.equal(out[4], receipt.sha256, "ann's hand-in as her receipt names it");
  assert.equal(out[5], "0", "no link or FIFO in the zip");

  // The teacher's download: an Archive of the class's zip, served as it is by a real archive pod
  // (copy.ts serve-file), fetched by a pod with the archive clients' labels, as the user-manager's.
  const token = randomBytes(32).toString("base64url");
  await rest.create(archivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Archive",
    metadata: { name: "term1-zip" },
    spec: {
      source: { classArchive: { templateName: "lab", name: "term1" } },
      tokenSha256: createHash("sha256").update(token).digest("hex"),
    },
  });
  await rest.create(paths.namespaced("", "v1", "pods", ns), {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "fetcher", labels: CLIENT_LABEL },
    spec: {
      ...onRealNode,
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsUser: 1000, runAsGroup: 1000 },
      containers: [{ name: "c", image: tools, imagePullPolicy: "Never", command: ["sleep", "3600"] }],
    },
  });
  const fetcher = await waitForPodReady(ns, "fetcher");
  const serving = await eventually(
    "the class's zip served",
    async () => {
      const a = await rest.get<Archive>(archivesPath(ns, "term1-zip"));
      if (a.status?.phase === "Failed") throw new Error(`Failed: ${a.status.message}`);
      return a.status?.phase === "Serving" && a;
    },
    90_000,
    250,
  );
  const fetched = await sh(
    fetcher,
    `curl -sSf -m 60 -H 'Authorization: Bearer ${token}' http://${serving.status?.podIP}:${serving.status?.port}/archive.zip | sha256sum | cut -d' ' -f1`,
  );
  assert.equal(fetched.trim(), status.archive?.sha256, "the download is the zip that was read back");

  // kubectl patch with a wrong confirm: nothing is deleted.
  await rest.patch(classArchivesPath(ns, "term1"), { spec: { end: true, confirm: "0".repeat(64) } });
  await eventually("the wrong confirm refused", async () => {
    const ca = await get();
    return (
      ca.status?.observedGeneration === ca.metadata.generation &&
      /nothing is deleted/.test(ca.status?.message ?? "")
    );
  });
  for (const u of [...STUDENTS, "tess"]) assert.ok(await exists(rest, userlandsPath(ns, u)), u);

  // The right one: ann's and ben's Userlands and claims go; cat (kept) and the teacher stay.
  await rest.patch(classArchivesPath(ns, "term1"), { spec: { confirm: status.dryRunHash } });
  const ended = await eventually(
    "Ended",
    async () => {
      const ca = await get();
      return ca.status?.phase === "Ended" && ca;
    },
    120_000,
    500,
  );
  assert.equal(ended.status?.deleted, 2);
  const pvc = (u: string) =>
    paths.namespaced("", "v1", "persistentvolumeclaims", ns, childNames("lab", u).pvc("home"));
  for (const u of ["ann", "ben"]) {
    assert.equal(await exists(rest, userlandsPath(ns, u)), false, `${u}'s Userland`);
    assert.equal(await exists(rest, pvc(u)), false, `${u}'s claim`);
  }
  for (const u of ["cat", "tess"]) {
    assert.ok(await exists(rest, userlandsPath(ns, u)), `${u}'s Userland`);
    assert.ok(await exists(rest, pvc(u)), `${u}'s claim`);
  }
  // Nothing left behind: the class's environments' pods and the copy pods are gone.
  await eventually("no pods of ann and ben, no copy pods", async () => {
    const list = await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns));
    return !list.items.some(
      (p) =>
        p.metadata?.labels?.[LABELS.copy] !== undefined ||
        ["ann", "ben"].some((u) => p.metadata?.labels?.[LABELS.instance] === childNames("lab", u).deployment),
    );
  });
  assert.equal(
    (await sh(checker, `test -s ${zipPath} && echo kept`)).trim(),
    "kept",
    "the zip stays in the collection",
  );
});
