/**
 * Broken environments on the real node tell why, within 30 s of the cause, and recover when fixed:
 * an image that does not exist, a container that exits 1, a pod asking for more CPU than the node
 * has, a volume whose storage class is missing, a readiness check that never passes. The operator
 * reads it all from its pod and claim informers (and a Pending claim's Events).
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { V1Container } from "@kubernetes/client-node";
import type { TemplateSpec, Userland } from "../../api/v1alpha1/index.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getUserland,
  patchTemplate,
  waitForPhase,
} from "../support/resources.ts";
import { LOCAL_PATH_STORAGE_CLASS, onRealNode, realNode } from "../support/realNode.ts";

/** Within this long of the cause, the status must say it. */
const REPORTED_WITHIN_MS = 30_000;

/** A small web server on 8080 that passes its readiness check. */
async function healthy(): Promise<V1Container> {
  return {
    name: "ide",
    image: (await realNode()).images.tools ?? "",
    imagePullPolicy: "Never",
    command: [
      "sh",
      "-c",
      "mkdir -p /tmp/www && echo ok > /tmp/www/ready && exec busybox httpd -f -p 8080 -h /tmp/www",
    ],
    ports: [{ containerPort: 8080, name: "http" }],
    readinessProbe: { httpGet: { path: "/ready", port: 8080 }, periodSeconds: 1 },
  };
}

function templateOf(container: V1Container, extra: Partial<TemplateSpec> = {}): TemplateSpec {
  return {
    displayName: "Broken on purpose",
    template: { spec: { ...onRealNode, containers: [container] } },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    ...extra,
  };
}

/**
 * Starts a Userland of `spec`, waits for `reason` (Ready's reason and Stalled=True) within
 * REPORTED_WITHIN_MS of the create, then applies `fix` and waits for Ready with Stalled=False.
 */
async function brokenThenFixed(
  t: TestContext,
  spec: TemplateSpec,
  reason: string,
  fix: (ns: string) => Promise<unknown>,
): Promise<Userland> {
  const ns = await testNamespace(t, "node-stall");
  await startOperator(t, ns);
  await createTemplate(ns, "lab", spec);
  const created = Date.now();
  await createUserland(ns, "ada", "ada", "lab");
  const stalled = await eventually(
    `the status to say ${reason}`,
    async () => {
      const u = await getUserland(ns, "ada");
      const condition = u.status?.conditions?.find((c) => c.type === "Stalled");
      return condition?.status === "True" && condition.reason === reason ? u : undefined;
    },
    REPORTED_WITHIN_MS,
    250,
  );
  t.diagnostic(`${reason} reported ${Date.now() - created} ms after the create: ${stalled.status?.message}`);
  assert.equal(stalled.status?.phase, "Starting");
  assert.equal(stalled.status?.conditions?.find((c) => c.type === "Ready")?.reason, reason);
  const warning = await eventually("its Warning Event", async () => {
    const events = await (
      await adminRest()
    ).list<{ type?: string; reason?: string }>(`/api/v1/namespaces/${ns}/events`, {
      query: { fieldSelector: "involvedObject.name=ada,involvedObject.kind=Userland" },
    });
    return events.items.find((e) => e.type === "Warning" && e.reason === reason);
  });
  assert.ok(warning);

  await fix(ns);
  const ready = await waitForPhase(ns, "ada", "Ready", 120_000);
  assert.equal(ready.status?.conditions?.find((c) => c.type === "Stalled")?.status, "False");
  assert.equal(ready.status?.progress?.steps.at(-1)?.step, "Reachable");
  return stalled;
}

const fixContainer = async (ns: string) =>
  patchTemplate(ns, "lab", { spec: { template: { spec: { containers: [await healthy()] } } } });

test("an image that does not exist: named in the status, and fixed by a Template that names a real one", async (t) => {
  const broken = {
    ...(await healthy()),
    image: "registry.invalid/userland/missing:1",
    imagePullPolicy: "IfNotPresent",
  };
  const stalled = await brokenThenFixed(t, templateOf(broken), "ImagePullFailed", fixContainer);
  assert.match(
    stalled.status?.message ?? "",
    /^The image "registry\.invalid\/userland\/missing:1" of container "ide" cannot be pulled/,
  );
});

test("a container that exits 1: its exit code and its last output in the status", async (t) => {
  const broken = {
    ...(await healthy()),
    command: ["sh", "-c", "echo 'loading settings'; echo 'settings.json: no such file' >&2; exit 1"],
  };
  const stalled = await brokenThenFixed(t, templateOf(broken), "ContainerCrashing", fixContainer);
  assert.match(stalled.status?.message ?? "", /^The container "ide" stopped with exit code 1/);
  assert.match(stalled.status?.message ?? "", /settings\.json: no such file/);
});

test("a pod asking for more CPU than the node has: the scheduler's reason", async (t) => {
  const broken = { ...(await healthy()), resources: { requests: { cpu: "1000" } } };
  const stalled = await brokenThenFixed(t, templateOf(broken), "Unschedulable", fixContainer);
  assert.match(stalled.status?.message ?? "", /^No node can take the environment: .*Insufficient cpu/);
});

test("a volume whose storage class does not exist: the class, as the provisioner says; fixed when the class appears", async (t) => {
  const rest = await adminRest();
  const storageClass = `longhorn-${Date.now().toString(36)}`;
  const container = { ...(await healthy()), volumeMounts: [{ name: "home", mountPath: "/home/student" }] };
  const spec = templateOf(container, {
    volumes: [
      {
        name: "home",
        pvcSpec: {
          storageClassName: storageClass,
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "64Mi" } },
        },
        reclaimPolicy: "Delete",
      },
    ],
  });
  t.after(() => rest.delete(`/apis/storage.k8s.io/v1/storageclasses/${storageClass}`).catch(() => undefined));
  const stalled = await brokenThenFixed(t, spec, "VolumeProvisioningFailed", async () => {
    // The admin creates the class the Template names (here: the node's local-path provisioner).
    const local = await rest.get<Record<string, unknown>>(
      `/apis/storage.k8s.io/v1/storageclasses/${LOCAL_PATH_STORAGE_CLASS}`,
    );
    await rest.create("/apis/storage.k8s.io/v1/storageclasses", {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: storageClass },
      provisioner: local.provisioner,
      volumeBindingMode: local.volumeBindingMode,
      reclaimPolicy: "Delete",
    });
  });
  assert.equal(
    stalled.status?.message,
    `The volume "home" (storage class "${storageClass}") cannot be provisioned: storageclass.storage.k8s.io "${storageClass}" not found`,
  );
});

test("a readiness check that never passes: said after the grace, fixed by a check that fits", async (t) => {
  const broken = {
    ...(await healthy()),
    readinessProbe: { httpGet: { path: "/never-there", port: 8080 }, periodSeconds: 1 },
  };
  const stalled = await brokenThenFixed(t, templateOf(broken), "ReadinessProbeFailing", fixContainer);
  assert.match(stalled.status?.message ?? "", /does not pass its readiness check \(container "ide"\)/);
});
