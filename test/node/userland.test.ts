/**
 * The operator's work, for real: a Userland becomes a running container on the real node; a file in
 * its volume (a real PVC bound by local-path-provisioner) survives stop → start and a Template
 * roll-out; deleting the Userland makes the garbage collector remove its pod and container.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, LABELS } from "../../api/naming.ts";
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";
import { k8s } from "../../lib/kube.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { ok, run } from "../chart/support.ts";
import { startOperator } from "../support/operator.ts";
import {
  createTemplate,
  createUserland,
  getPvc,
  patchTemplate,
  patchUserland,
  userlandsPath,
  waitForPhase,
  adminRest,
} from "../support/resources.ts";
import {
  execInContainer,
  LOCAL_PATH_STORAGE_CLASS,
  onRealNode,
  realNode,
  waitForOnePodReady,
} from "../support/realNode.ts";

/**
 * An environment that keeps a file in its volume: the first start writes a random marker, every
 * start serves the volume's content on 8080 (readiness probe included). It ends on SIGTERM, as an
 * IDE does.
 */
function realTemplateSpec(image: string): TemplateSpec {
  return {
    displayName: "Real node test",
    template: {
      spec: {
        ...onRealNode,
        containers: [
          {
            name: "ide",
            image,
            imagePullPolicy: "Never",
            command: [
              "sh",
              "-c",
              // Not exec'd: as PID 1, httpd would ignore SIGTERM and every stop, roll-out
              // (Recreate) and delete would wait out the 30 s grace period; the shell's trap ends it.
              "[ -f /home/student/marker ] || head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /home/student/marker; busybox httpd -f -p 8080 -h /home/student & trap 'kill $!; exit 0' TERM; wait",
            ],
            env: [{ name: "ROLLOUT", value: "1" }],
            ports: [{ containerPort: 8080, name: "http" }],
            readinessProbe: { httpGet: { path: "/marker", port: 8080 }, periodSeconds: 1 },
            volumeMounts: [{ name: "home", mountPath: "/home/student" }],
          },
        ],
      },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    volumes: [
      {
        name: "home",
        pvcSpec: {
          storageClassName: LOCAL_PATH_STORAGE_CLASS,
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "64Mi" } },
        },
      },
    ],
  };
}

async function marker(pod: V1Pod): Promise<string> {
  const r = await execInContainer(pod, ["cat", "/home/student/marker"]);
  assert.equal(r.code, 0, `reading the marker: ${r.stderr}`);
  return r.stdout.trim();
}

test("a Userland runs as a real container, keeps its volume across stop, start and roll-out, and is collected when deleted", async (t) => {
  const node = await realNode();
  const ns = await testNamespace(t, "node-ul");
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  await startOperator(t, ns);
  await createTemplate(ns, "real", realTemplateSpec(node.images.tools ?? ""));
  const started = Date.now();
  await createUserland(ns, "alice", "alice", "real");
  await waitForPhase(ns, "alice", "Ready", 120_000);
  t.diagnostic(`Userland create → Ready on the real node: ${Date.now() - started} ms`);
  const selector = `${LABELS.instance}=${childNames("real", "alice").deployment}`;
  const first = await waitForOnePodReady(ns, selector);
  assert.equal(first.spec?.nodeName, node.name);
  const pvc = await getPvc(ns, childNames("real", "alice").pvc("home"));
  assert.equal(pvc?.status?.phase, "Bound", "local-path-provisioner bound the claim");
  const written = await marker(first);
  assert.match(written, /^[0-9a-f]{24}$/);

  // Stop: the pod goes away for real; start: a new pod, the same file.
  await patchUserland(ns, "alice", { spec: { enabled: false } });
  await waitForPhase(ns, "alice", "Stopped", 60_000);
  await eventually(
    "alice's pod to be gone",
    async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items.length === 0,
    60_000,
  );
  await patchUserland(ns, "alice", { spec: { enabled: true } });
  await waitForPhase(ns, "alice", "Ready", 120_000);
  const second = await waitForOnePodReady(ns, selector);
  assert.notEqual(second.metadata?.uid, first.metadata?.uid);
  assert.equal(await marker(second), written, "the volume survived stop → start");

  // A Template change rolls out a new pod; the file is still there.
  const template = realTemplateSpec(node.images.tools ?? "");
  const container = template.template.spec?.containers[0];
  assert.ok(container);
  container.env = [{ name: "ROLLOUT", value: "2" }];
  await patchTemplate(ns, "real", { spec: { template: template.template } });
  const third = await eventually(
    "the rolled-out pod",
    async () => {
      const pod = await waitForOnePodReady(ns, selector, 5_000).catch(() => undefined);
      return pod &&
        pod.metadata?.uid !== second.metadata?.uid &&
        pod.spec?.containers[0]?.env?.some((e) => e.name === "ROLLOUT" && e.value === "2")
        ? pod
        : undefined;
    },
    120_000,
  );
  assert.equal(await marker(third), written, "the volume survived the roll-out");

  // Delete: the garbage collector removes the Deployment's pod, and containerd its container.
  const containerId = third.status?.containerStatuses?.[0]?.containerID?.replace("containerd://", "") ?? "";
  await (await adminRest()).delete(userlandsPath(ns, "alice"));
  await eventually(
    "alice's pod to be collected",
    async () => (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items.length === 0,
    90_000,
  );
  await eventually(
    "the container to be gone from containerd",
    async () => {
      const listed = await run(join(node.binDir, "ctr"), [
        "--address",
        node.containerdSocket,
        "--namespace",
        "k8s.io",
        "containers",
        "list",
        "--quiet",
      ]);
      return !ok(listed, "ctr containers list").split("\n").includes(containerId);
    },
    60_000,
  );
});
