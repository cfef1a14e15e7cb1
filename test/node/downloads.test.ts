/**
 * Downloads on the real node (docs/decisions/0011-coursework.md, "Downloads"): the operator (a
 * process of the test, OPERATOR_COPY_IMAGE the platform's image built from the Dockerfile, as in
 * test/node/assignments.test.ts) makes a real archive pod from an Archive; it mounts the student's
 * local-path claim read-only and serves the zip once. Its NetworkPolicies are enforced by the node:
 * the student's own environment cannot reach it; a pod with the archive clients' labels (standing in
 * for the user-manager's pod, which the chart labels so) fetches it with the token, unzips it and
 * hashes it with coreutils. Every request is made from pods inside the node: the test itself dials
 * no pod. (The user-manager's piping to a browser is tested in-process against a loopback stand-in:
 * services/user-manager/test/downloads.test.ts.)
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, LABELS, submissionNameFor } from "../../api/naming.ts";
import {
  archivesPath,
  assignmentsPath,
  submissionsPath,
  type Archive,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { paths } from "../../api/kubePaths.ts";
import { isConflict } from "../../lib/kubeRest.ts";
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
  execInContainer,
  onRealNode,
  realNode,
  waitForOnePodReady,
  waitForPodReady,
  shIn as sh,
} from "../support/realNode.ts";

const HOME = LAB_HOME;
const CLIENT_LABEL = { "userland.dev/test-archive-client": "yes" };

/** Writes an Archive for `source` and waits until its pod listens; returns the token and the URL. */
async function serveArchive(ns: string, name: string, source: Archive["spec"]["source"]) {
  const rest = await adminRest();
  const token = randomBytes(32).toString("base64url");
  await rest.create(archivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Archive",
    metadata: { name },
    spec: { source, tokenSha256: createHash("sha256").update(token).digest("hex"), requestedBy: "test" },
  });
  const serving = await eventually(
    `${name} Serving`,
    async () => {
      const a = await rest.get<Archive>(archivesPath(ns, name));
      if (a.status?.phase === "Failed") throw new Error(`Failed: ${a.status.message}`);
      return a.status?.phase === "Serving" && a;
    },
    90_000,
    250,
  );
  return { token, url: `http://${serving.status?.podIP}:${serving.status?.port}/archive.zip` };
}

test("downloads on the real node: a read-only archive pod serves a student's home once, only to the archive clients, the zip holding exactly their files; an assignment's hand-ins, a folder per student, as the receipt says", async (t) => {
  const node = await realNode();
  const image = await buildPlatformImage();
  await importImage(join(node.binDir, "ctr"), node.containerdSocket, image);
  const tools = node.images.tools ?? "";

  const ns = await testNamespace(t, "node-dl");
  const rest = await adminRest();
  await startOperator(t, ns, {
    env: {
      OPERATOR_COPY_IMAGE: image.ref,
      OPERATOR_ARCHIVE_CLIENTS: `${ns}:${Object.entries(CLIENT_LABEL)
        .map(([k, v]) => `${k}=${v}`)
        .join(",")}`,
    },
  });
  // A teacher, whose environment mounts the collection: its local-path claim is bound on the node
  // when her pod is scheduled (before copy pods were placed by affinity, the scheduler never saw them
  // and a fresh WaitForFirstConsumer claim stayed unbound; see 0011).
  await appointTeacher(ns, await chartCourseTeacherRole(t, ns), "tess", "teach-tess");
  await createTemplate(ns, "lab", realNodeLabTemplate(tools, "Downloads on the real node"));
  await createUserland(ns, "ann", "ann", "lab");
  await createUserland(ns, "tess", "tess", "lab");
  // The stand-in for the user-manager's pod: only the labels count.
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
  await waitForPhase(ns, "ann", "Ready", 120_000);
  await waitForPhase(ns, "tess", "Ready", 120_000);
  const ann = await waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", "ann").deployment}`);
  const fetcher = await waitForPodReady(ns, "fetcher");

  // Ann's work, and what a hostile student plants: a link out, a link to a folder, a FIFO.
  const expected = (
    await sh(
      ann,
      `cd ${HOME} && mkdir -p week1/data && printf 'print(1)\\n' > week1/main.py && head -c 300000 /dev/urandom > week1/data/blob.bin && printf 'é\\n' > 'notes ü.md' && ln -s /etc/passwd passwd && ln -s / root && mkfifo pipe && ${MANIFEST_SHA256_SCRIPT}`,
    )
  ).trim();

  const { token, url } = await serveArchive(ns, "ann-home", { home: { user: "ann", templateName: "lab" } });

  // The student's environment is no archive client: once the node's enforcer has learnt the new
  // pod (it does so asynchronously, as test/node/networkpolicy.test.ts waits for too; until then only
  // the token guards the archive), the NetworkPolicy drops its connections. The probe sends no
  // token, so a connection that got through uses nothing up.
  const fromAnn = () =>
    execInContainer(ann, ["curl", "-sS", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", url]);
  const refused = await eventually(
    "the archive pod's NetworkPolicy enforced against the student's pod",
    async () => {
      const r = await fromAnn();
      return r.code !== 0 && r;
    },
    30_000,
    250,
  );
  assert.match(refused.stderr, /timed out|Connection refused|Couldn't connect/i);

  // The client: a wrong token is a 401 and uses nothing up; the right one gets the zip.
  assert.equal(
    (
      await sh(fetcher, `curl -s -m 20 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' ${url}`)
    ).trim(),
    "401",
  );
  const fetched = (
    await sh(
      fetcher,
      `cd /tmp && curl -sSf -m 60 -H 'Authorization: Bearer ${token}' -o a.zip ${url} && mkdir x && cd x && busybox unzip -q ../a.zip && ${MANIFEST_SHA256_SCRIPT} && find . -type l -o -type p | wc -l`,
    )
  ).split("\n");
  assert.equal(fetched[0], expected, "the zip holds exactly ann's regular files, byte for byte");
  assert.equal(fetched[1], "0", "no link or FIFO in the zip");

  const served = await eventually(
    "Served",
    async () => {
      const a = await rest.get<Archive>(archivesPath(ns, "ann-home"));
      return a.status?.phase === "Served" && a;
    },
    30_000,
    250,
  );
  assert.equal(served.status?.summary?.sha256, expected);
  assert.equal(served.status?.summary?.skipped, 3);
  // Served once: the pod has ended, and is removed.
  await eventually(
    "the archive pod deleted",
    async () =>
      (
        await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns), {
          query: { labelSelector: "userland.dev/copy=archive" },
        })
      ).items.length === 0,
    30_000,
    250,
  );

  // A teacher's download of an assignment's hand-ins: ann hands in (the operator's real hand-in
  // copy into the collection), then the hand-ins' archive holds her folder, hashed as her receipt,
  // though she changed her files since (issue 42: a hand-in is the files as they were).
  await sh(
    ann,
    `mkdir -p ${HOME}/assignments/a1 && printf 'answer = 42\\n' > ${HOME}/assignments/a1/answer.py`,
  );
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
      // The operator made it first: the hand-in request is a patch, as the user-manager's.
      if (!isConflict(error)) throw error;
      await rest.patch(submissionsPath(ns, submissionNameFor("a1", "ann")), { spec: request });
    });
  const submissionPath = submissionsPath(ns, submissionNameFor("a1", "ann"));
  const receipt = await eventually(
    "ann's receipt",
    async () => (await rest.get<Submission>(submissionPath)).status?.receipt,
    90_000,
    250,
  ).catch(async (error: unknown) => {
    // What the operator says instead, for whoever reads the failure.
    const s = await rest.get<Submission>(submissionPath);
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify(s.status)}`);
  });
  // ann changes her work after handing in: the teacher's download is still what she handed in.
  await sh(
    ann,
    `printf 'answer = 0\\n' > ${HOME}/assignments/a1/answer.py && touch ${HOME}/assignments/a1/later.py`,
  );
  const handins = await serveArchive(ns, "a1-handins", {
    handins: { templateName: "lab", assignment: "a1" },
  });
  // Named by the student, not by the collection's slug and hash (issue 44 item 7).
  const folder = "ann";
  const inZip = (
    await sh(
      fetcher,
      `cd /tmp && curl -sSf -m 60 -H 'Authorization: Bearer ${handins.token}' -o h.zip ${handins.url} && mkdir h && cd h && busybox unzip -q ../h.zip && ls && cd '${folder}/1' && ${MANIFEST_SHA256_SCRIPT}`,
    )
  ).split("\n");
  assert.equal(inZip[0], folder, "one folder per student, a folder per version in it");
  assert.equal(inZip[1], receipt.sha256, "the hand-in in the zip is the one the receipt names");
});
