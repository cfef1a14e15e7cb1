/**
 * Uploads (docs/decisions/0011-coursework.md, "Uploads"): an Archive with a `target` gets an upload
 * pod that mounts only the target folder read-write (a subPath of the course folder's claim, or of
 * the collection at the assignment's feedback), runs `receive-upload` with the token's hash (and, for
 * a feedback zip, the assignment's students), and nothing else. kwok runs no containers: the pod's
 * spec is what is checked here; the real node runs one in test/node/uploads.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { collectionNames, collectionUserFolder, courseFolderNames } from "../../api/naming.ts";
import { archivesPath, assignmentsPath, type Archive } from "../../api/v1alpha1/index.ts";
import { isInvalid, type KubeRest } from "../../lib/kubeRest.ts";
import { paths } from "../../api/kubePaths.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  collectionFolder,
  createTemplate,
  createUserland,
  simpleTemplateSpec,
} from "../../test/support/resources.ts";

const IMAGE = "registry.invalid/userland:test";
const claimSpec = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } };
const HASH = "ab".repeat(32);

const podsPath = (ns: string) => paths.namespaced("", "v1", "pods", ns);

const upload = (name: string, target: unknown) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Archive",
  metadata: { name },
  spec: { target, tokenSha256: HASH, requestedBy: "userland:tina" },
});

async function podOf(rest: KubeRest, ns: string, owner: string): Promise<V1Pod | undefined> {
  const list = await rest.list<V1Pod>(podsPath(ns), {
    query: { labelSelector: "userland.dev/copy=archive" },
  });
  return list.items.find((p) => p.metadata?.ownerReferences?.[0]?.name === owner);
}

test("an Archive with a target gets an upload pod writing only that folder: materials into a course folder, feedback into the collection, by student", async (t) => {
  const ns = await testNamespace(t, "upl");
  const rest = await adminRest();
  await startOperator(t, ns, {
    env: {
      OPERATOR_COPY_IMAGE: IMAGE,
      OPERATOR_ARCHIVE_CLIENTS: `userland-system:app.kubernetes.io/component=user-manager`,
    },
  });
  await createTemplate(
    ns,
    "lab",
    simpleTemplateSpec("registry.invalid/ide:1", {
      volumes: [{ name: "home", pvcSpec: claimSpec }],
      coursework: {
        home: { volume: "home", mountPath: "/home/student" },
        folders: [{ name: "course", mountPath: "/srv/course", pvcSpec: claimSpec }],
        collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
      },
    }),
  );
  await createUserland(ns, "alice-lab", "alice", "lab", false);
  await createUserland(ns, "bob-lab", "Bob Smith", "lab", false);
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "week1" } },
  });

  // Exactly one of source and target; a target names exactly one of materials and feedback.
  for (const spec of [
    { tokenSha256: HASH },
    {
      tokenSha256: HASH,
      source: { home: { user: "alice", templateName: "lab" } },
      target: { materials: { templateName: "lab", folder: "course", path: "week1" } },
    },
    { tokenSha256: HASH, target: {} },
    { tokenSha256: HASH, target: { materials: { templateName: "lab", folder: "course", path: "../up" } } },
    { tokenSha256: HASH, target: { materials: { templateName: "lab", folder: "course", path: "/abs" } } },
  ])
    await assert.rejects(
      rest.create(archivesPath(ns), { ...upload("bad", {}), spec }),
      (e) => isInvalid(e),
      JSON.stringify(spec),
    );

  const expectPod = async (owner: string, command: string[], claim: string, subPath: string | undefined) => {
    const pod = await eventually(`the upload pod of ${owner}`, () => podOf(rest, ns, owner));
    const spec = pod.spec!;
    const container = spec.containers[0]!;
    assert.equal(spec.automountServiceAccountToken, false);
    assert.deepEqual(container.command?.slice(2, 5), ["receive-upload", "/upload-target", "--token-sha256"]);
    assert.deepEqual(container.command?.slice(10), command);
    assert.deepEqual(
      spec.volumes?.map((v) => [v.persistentVolumeClaim?.claimName, v.persistentVolumeClaim?.readOnly]),
      [[claim, undefined]],
    );
    assert.deepEqual(
      container.volumeMounts?.map((m) => [m.mountPath, m.subPath, m.readOnly]),
      [["/upload-target", subPath, undefined]],
    );
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
  };

  await rest.create(
    archivesPath(ns),
    upload("materials", { materials: { templateName: "lab", folder: "course", path: "week1/lab" } }),
  );
  await expectPod("materials", [], courseFolderNames("lab", "course").claim, "week1/lab");
  // "." is the course folder's root: the whole claim (issue 44 item 7).
  await rest.create(
    archivesPath(ns),
    upload("materials-root", { materials: { templateName: "lab", folder: "course", path: "." } }),
  );
  await expectPod("materials-root", [], courseFolderNames("lab", "course").claim, undefined);

  // The students are the assignment's Submissions: the operator makes them for the class.
  await eventually("the assignment's Submissions", async () => {
    const list = await rest.list<{ spec: { user: string } }>(
      paths.namespaced("userland.dev", "v1alpha1", "submissions", ns),
    );
    return list.items.length === 2 || undefined;
  });
  await rest.create(
    archivesPath(ns),
    upload("fb-bob", { feedback: { templateName: "lab", assignment: "a1", user: "Bob Smith" } }),
  );
  await expectPod(
    "fb-bob",
    [],
    collectionNames("lab").claim,
    `feedback/${await collectionFolder(ns, "a1")}/${collectionUserFolder("Bob Smith")}`,
  );
  await rest.create(
    archivesPath(ns),
    upload("fb-all", { feedback: { templateName: "lab", assignment: "a1" } }),
  );
  await expectPod(
    "fb-all",
    ["--student", "Bob Smith", "--student", "alice"],
    collectionNames("lab").claim,
    `feedback/${await collectionFolder(ns, "a1")}`,
  );

  // Someone who is no student of the assignment, a folder that is no course folder: Failed, no pod.
  for (const [name, target, message] of [
    ["fb-eve", { feedback: { templateName: "lab", assignment: "a1", user: "eve" } }, /eve is not a student/],
    [
      "m-x",
      { materials: { templateName: "lab", folder: "nope", path: "x" } },
      /"nope" is not a course folder/,
    ],
  ] as const) {
    await rest.create(archivesPath(ns), upload(name, target));
    const failed = await eventually(`${name} Failed`, async () => {
      const a = await rest.get<Archive>(archivesPath(ns, name));
      return a.status?.phase === "Failed" ? a : undefined;
    });
    assert.match(failed.status?.message ?? "", message);
    assert.equal(await podOf(rest, ns, name), undefined);
  }
});
