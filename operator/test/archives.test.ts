/**
 * The Archive controller against the real API server (docs/decisions/0011-coursework.md,
 * "Downloads"): the archive pod it makes from an Archive (the claim derived, never named by the
 * Archive; read-only; no token; the serving program with the token's hash), its two
 * NetworkPolicies, and the status from the pod's life. kwok runs no containers (nor binds claims):
 * the test reports the pod running with an address and then ended, as the kubelet would, through
 * pods/status.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames } from "../../api/naming.ts";
import { archivesPath, assignmentsPath, type Archive } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { isInvalid, type KubeRest } from "../../lib/kubeRest.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { startOperator } from "../../test/support/operator.ts";
import { onNode } from "../coursework/copyPods.ts";
import {
  adminRest,
  collectionFolder,
  createTemplate,
  createUserland,
  getDeployment,
  getPvc,
  patchTemplate,
  placeEnvironmentPod,
  simpleTemplateSpec,
} from "../../test/support/resources.ts";

const IMAGE = "registry.invalid/userland:test";
const claimSpec = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } };
const HASH = "ab".repeat(32);

const OPERATOR_ENV = {
  OPERATOR_COPY_IMAGE: IMAGE,
  OPERATOR_ARCHIVE_CLIENTS: `userland-system:app.kubernetes.io/component=user-manager`,
};
/** A Template with a home volume and a collection: what archives read. */
const labSpec = () =>
  simpleTemplateSpec("registry.invalid/ide:1", {
    volumes: [{ name: "home", pvcSpec: claimSpec }],
    coursework: {
      home: { volume: "home", mountPath: "/home/student" },
      collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
    },
  });

const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);
const policyPath = (ns: string, name: string) =>
  paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns, name);

const archive = (name: string, source: Archive["spec"]["source"]) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Archive",
  metadata: { name },
  spec: { source, tokenSha256: HASH, requestedBy: "userland:alice" },
});

async function archivePod(rest: KubeRest, ns: string, owner: string): Promise<V1Pod | undefined> {
  const list = await rest.list<V1Pod>(podsPath(ns), {
    query: { labelSelector: "userland.dev/copy=archive" },
  });
  return list.items.find(
    (p) => p.metadata?.ownerReferences?.[0]?.name === owner && !p.metadata.deletionTimestamp,
  );
}

test("an Archive of a student's home gets a read-only, token-less archive pod reachable only by the user-manager's pods; its status follows the pod from Serving to Served", async (t) => {
  const ns = await testNamespace(t, "arch");
  const rest = await adminRest();
  await startOperator(t, ns, { env: OPERATOR_ENV });
  await createTemplate(ns, "lab", labSpec());
  await createUserland(ns, "alice-lab", "alice", "lab", true);
  // A home is archived on the node its environment runs on, so the environment is placed first.
  const node = await placeEnvironmentPod(ns, childNames("lab", "alice-lab").deployment);

  // The API server refuses an Archive naming both sources or none, and any change to one.
  for (const source of [
    {},
    { home: { user: "alice", templateName: "lab" }, handins: { templateName: "lab", assignment: "a" } },
  ]) {
    await assert.rejects(rest.create(archivesPath(ns), archive("bad", source)), (e) => isInvalid(e));
  }

  await rest.create(
    archivesPath(ns),
    archive("alice-home", { home: { user: "alice", templateName: "lab" } }),
  );
  await assert.rejects(
    rest.patch(archivesPath(ns, "alice-home"), { spec: { tokenSha256: "cd".repeat(32) } }),
    (e) => isInvalid(e),
  );
  const pod = await eventually("the archive pod", () => archivePod(rest, ns, "alice-home"));
  const spec = pod.spec!;
  const container = spec.containers[0]!;
  assert.equal(spec.automountServiceAccountToken, false);
  assert.deepEqual(spec.affinity, onNode(node), "on the node of alice's running environment");
  assert.equal(spec.restartPolicy, "Never");
  assert.equal(spec.activeDeadlineSeconds, 3600);
  assert.equal(container.image, IMAGE);
  assert.deepEqual(container.command?.slice(0, 7), [
    "node",
    "coursework/copy.ts",
    "serve-archive",
    "/archive-source",
    "--token-sha256",
    HASH,
    "--port",
  ]);
  assert.deepEqual(
    container.ports?.map((p) => p.containerPort),
    [8080],
  );
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
  assert.deepEqual(
    spec.volumes?.map((v) => [v.persistentVolumeClaim?.claimName, v.persistentVolumeClaim?.readOnly]),
    [[childNames("lab", "alice-lab").pvc("home"), true]],
  );
  assert.deepEqual(
    container.volumeMounts?.map((m) => [m.mountPath, m.readOnly]),
    [["/archive-source", true]],
  );

  const deny = await rest.get<{ spec: { policyTypes: string[] } }>(
    policyPath(ns, "userland-copy-pods-deny-all"),
  );
  assert.deepEqual(deny.spec.policyTypes, ["Ingress", "Egress"]);
  const ingress = await rest.get<{ spec: unknown }>(policyPath(ns, "userland-archive-pods-ingress"));
  assert.deepEqual(ingress.spec, {
    podSelector: { matchLabels: { "userland.dev/copy": "archive" } },
    policyTypes: ["Ingress"],
    ingress: [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "userland-system" } },
            podSelector: { matchLabels: { "app.kubernetes.io/component": "user-manager" } },
          },
        ],
        ports: [{ protocol: "TCP", port: 8080 }],
      },
    ],
  });

  // Running (kwok binds no claims, so the test reports it as the kubelet would): the Archive says
  // where it listens.
  const started = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await rest.patch(podsPath(ns, pod.metadata?.name, "status"), {
    status: {
      phase: "Running",
      podIP: "10.244.0.7",
      podIPs: [{ ip: "10.244.0.7" }],
      containerStatuses: [
        {
          name: "copy",
          image: IMAGE,
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: started } },
        },
      ],
    },
  });
  const serving = await eventually("Serving", async () => {
    const a = await rest.get<Archive>(archivesPath(ns, "alice-home"));
    return a.status?.phase === "Serving" && a;
  });
  assert.equal(serving.status?.port, 8080);
  assert.equal(serving.status?.podIP, "10.244.0.7");

  // The program served its one caller and ended.
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await rest.patch(podsPath(ns, pod.metadata?.name, "status"), {
    status: {
      phase: "Succeeded",
      containerStatuses: [
        {
          name: "copy",
          image: IMAGE,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: {
              exitCode: 0,
              startedAt: now,
              finishedAt: now,
              message: JSON.stringify({
                files: [{ path: "a.py", bytes: 3, sha256: "1".repeat(64) }],
                bytes: 3,
                sha256: "e".repeat(64),
                skipped: [{ path: "passwd", reason: "a symbolic link" }],
                changed: [],
              }),
            },
          },
        },
      ],
    },
  });
  const served = await eventually("Served", async () => {
    const a = await rest.get<Archive>(archivesPath(ns, "alice-home"));
    return a.status?.phase === "Served" && a;
  });
  assert.deepEqual(served.status?.summary, { files: 1, bytes: 3, sha256: "e".repeat(64), skipped: 1 });
  await eventually("the finished pod deleted", async () => !(await archivePod(rest, ns, "alice-home")));

  // Sources that do not exist fail with a message and make no pod.
  await rest.create(archivesPath(ns), archive("nobody", { home: { user: "mallory", templateName: "lab" } }));
  await rest.create(
    archivesPath(ns),
    archive("no-assignment", { handins: { templateName: "lab", assignment: "a9" } }),
  );
  for (const [name, message] of [
    ["nobody", /mallory has no Userland of Template "lab"/],
    ["no-assignment", /has no assignment "a9"/],
  ] as const) {
    const failed = await eventually(`${name} Failed`, async () => {
      const a = await rest.get<Archive>(archivesPath(ns, name));
      return a.status?.phase === "Failed" && a;
    });
    assert.match(failed.status?.message ?? "", message);
    assert.equal(await archivePod(rest, ns, name), undefined);
  }

  // An assignment's hand-ins: the collection's root, read-only, and only handins/<its folder> served.
  await rest.create(assignmentsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name: "a1" },
    spec: { templateName: "lab", title: "Week 1", source: { folder: "course", path: "week1" } },
  });
  await rest.create(
    archivesPath(ns),
    archive("a1-handins", { handins: { templateName: "lab", assignment: "a1" } }),
  );
  const handins = await eventually("the hand-ins' archive pod", () => archivePod(rest, ns, "a1-handins"));
  assert.equal(
    handins.spec?.containers[0]?.command?.[3],
    `/archive-source/handins/${await collectionFolder(ns, "a1")}`,
  );
  assert.deepEqual(
    handins.spec?.volumes?.map((v) => [
      v.persistentVolumeClaim?.claimName,
      v.persistentVolumeClaim?.readOnly,
    ]),
    [["lab-collection", true]],
  );
});

test("an Archive of a running environment whose pod is not there yet waits for it, then follows it to its node", async (t) => {
  const ns = await testNamespace(t, "arch-wait");
  const rest = await adminRest();
  await startOperator(t, ns, { env: OPERATOR_ENV });
  // The environment's pod cannot be made (its priority class does not exist): it stands for a pod
  // the ReplicaSet controller has not made yet, or that the operator's cache has not seen yet.
  const spec = labSpec();
  spec.template.spec = { ...spec.template.spec, priorityClassName: `missing-${ns}` };
  await createTemplate(ns, "lab", spec);
  await createUserland(ns, "alice-lab", "alice", "lab", true);
  const names = childNames("lab", "alice-lab");
  await eventually("alice's Deployment and claim", async () => {
    const [deployment, claim] = await Promise.all([
      getDeployment(ns, names.deployment),
      getPvc(ns, names.pvc("home")),
    ]);
    return deployment !== undefined && claim !== undefined;
  });

  await rest.create(
    archivesPath(ns),
    archive("alice-home", { home: { user: "alice", templateName: "lab" } }),
  );
  const pending = await eventually("the Archive to wait", async () => {
    const a = await rest.get<Archive>(archivesPath(ns, "alice-home"));
    return a.status?.phase === "Pending" && a;
  });
  assert.match(pending.status?.message ?? "", /environment is starting; the copy follows it to its node/);
  assert.equal(await archivePod(rest, ns, "alice-home"), undefined, "no archive pod placed anywhere");

  // The pod can be made now: once it is on a node, the archive pod goes there.
  await patchTemplate(ns, "lab", { spec: { template: { spec: { priorityClassName: null } } } });
  const node = await placeEnvironmentPod(ns, names.deployment);
  const pod = await eventually("the archive pod", () => archivePod(rest, ns, "alice-home"));
  assert.deepEqual(pod.spec?.affinity, onNode(node), "on the node of alice's environment");
});
