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
import { childNames, LABELS } from "../../api/naming.ts";
import { archivesPath, type Archive, type TemplateSpec } from "../../api/v1alpha1/index.ts";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";
import { paths } from "../../lib/kubeRest.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import { adminRest, createTemplate, createUserland, waitForPhase } from "../support/resources.ts";
import {
  execInContainer,
  LOCAL_PATH_STORAGE_CLASS,
  onRealNode,
  realNode,
  waitForOnePodReady,
  waitForPodReady,
} from "../support/realNode.ts";

const HOME = "/home/student";
const CLIENT_LABEL = { "userland.dev/test-archive-client": "yes" };
const claim = {
  storageClassName: LOCAL_PATH_STORAGE_CLASS,
  accessModes: ["ReadWriteOnce"],
  resources: { requests: { storage: "64Mi" } },
};

function labTemplate(image: string): TemplateSpec {
  return {
    displayName: "Downloads on the real node",
    template: {
      spec: {
        ...onRealNode,
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "ide",
            image,
            imagePullPolicy: "Never",
            command: ["busybox", "httpd", "-f", "-p", "8080", "-h", "/srv"],
            ports: [{ containerPort: 8080, name: "http" }],
            volumeMounts: [{ name: "home", mountPath: HOME }],
          },
        ],
      },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    volumes: [{ name: "home", pvcSpec: claim }],
    coursework: { home: { volume: "home", mountPath: HOME } },
  };
}

async function sh(pod: V1Pod, script: string): Promise<string> {
  const result = await execInContainer(pod, ["sh", "-euc", script], { timeoutMs: 60_000 });
  assert.equal(result.code, 0, `${pod.metadata?.name}: ${script}\n${result.stderr}`);
  return result.stdout;
}

const MANIFEST = `find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0r sha256sum | sha256sum | cut -d' ' -f1`;

test("a student's home downloaded on the real node: a read-only archive pod serves it once, only to the archive clients, and the zip holds exactly their files", async (t) => {
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
  await createTemplate(ns, "lab", labTemplate(tools));
  await createUserland(ns, "ann", "ann", "lab");
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
  const ann = await waitForOnePodReady(ns, `${LABELS.instance}=${childNames("lab", "ann").deployment}`);
  const fetcher = await waitForPodReady(ns, "fetcher");

  // Ann's work, and what a hostile student plants: a link out, a link to a folder, a FIFO.
  const expected = (
    await sh(
      ann,
      `cd ${HOME} && mkdir -p week1/data && printf 'print(1)\\n' > week1/main.py && head -c 300000 /dev/urandom > week1/data/blob.bin && printf 'é\\n' > 'notes ü.md' && ln -s /etc/passwd passwd && ln -s / root && mkfifo pipe && ${MANIFEST}`,
    )
  ).trim();

  const token = randomBytes(32).toString("base64url");
  await rest.create(archivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Archive",
    metadata: { name: "ann-home" },
    spec: {
      source: { home: { user: "ann", templateName: "lab" } },
      tokenSha256: createHash("sha256").update(token).digest("hex"),
      requestedBy: "test",
    },
  });
  const serving = await eventually(
    "the archive pod Serving",
    async () => {
      const a = await rest.get<Archive>(archivesPath(ns, "ann-home"));
      if (a.status?.phase === "Failed") throw new Error(`Failed: ${a.status.message}`);
      return a.status?.phase === "Serving" && a;
    },
    90_000,
    250,
  );
  const url = `http://${serving.status?.podIP}:${serving.status?.port}/archive.zip`;

  // The student's environment is no archive client: the NetworkPolicy drops its connection.
  const fromAnn = await execInContainer(ann, [
    "curl",
    "-sS",
    "-m",
    "5",
    "-o",
    "/dev/null",
    "-H",
    `Authorization: Bearer ${token}`,
    url,
  ]);
  assert.notEqual(fromAnn.code, 0, "the student's pod must not reach the archive pod");
  assert.match(fromAnn.stderr, /timed out|Connection refused|Couldn't connect/i);

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
      `cd /tmp && curl -sSf -m 60 -H 'Authorization: Bearer ${token}' -o a.zip ${url} && mkdir x && cd x && busybox unzip -q ../a.zip && ${MANIFEST} && find . -type l -o -type p | wc -l`,
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
});
