/**
 * Broken environments on the real node tell why, within 30 s of the cause, and recover when fixed:
 * an image that does not exist, a container that exits 1, a pod asking for more CPU than the node
 * has, a volume whose storage class is missing, a readiness check that never passes. The operator
 * reads it all from its pod and claim informers (and a Pending claim's Events); the student reads
 * it on their starting page, served by the proxy from the same status, and once fixed gets the
 * environment's own answer there instead.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { V1Container } from "@kubernetes/client-node";
import { childNames } from "../../api/naming.ts";
import type { StartProblem, TemplateSpec } from "../../api/v1alpha1/index.ts";
import { studentWords } from "../../lib/startProgress.ts";
import { send, startProxy, testKeys, type TestProxy } from "../../services/proxy/test/support.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getService,
  getUserland,
  patchTemplate,
  waitForPhase,
} from "../support/resources.ts";
import { exposeFromNode, LOCAL_PATH_STORAGE_CLASS, onRealNode, realNode } from "../support/realNode.ts";

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

/** The student's host for the Template "lab" at the test's proxy. */
const HOST = "lab.example.test";

/** What the starting page says, as the student reads it before any script runs. */
interface PageSays {
  status: number;
  /** The message span's text, unescaped: plain words for the student. */
  message: string;
  /** The operator's own message, one click away for the course administrator. */
  detail: string;
  /** Whether the message is marked as a problem (the start is stalled). */
  problem: boolean;
}

function pageSays(status: number, body: string): PageSays {
  const unescape = (text: string) =>
    text.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)));
  const span = /<span id="message" class="([^"]*)">([^<]*)<\/span>/.exec(body);
  const detail = /<span id="detail" class="status">([^<]*)<\/span>/.exec(body);
  return {
    status,
    message: unescape(span?.[2] ?? ""),
    detail: unescape(detail?.[1] ?? ""),
    problem: span?.[1] === "problem",
  };
}

/** The student's request through the proxy, as their browser sends it. */
async function asStudent(proxy: TestProxy, cookie: string, path: string) {
  return send(proxy.port, { path, headers: { host: HOST, cookie, accept: "text/html" } });
}

/**
 * Starts a Userland of `spec`, waits for `reason` (Ready's reason and Stalled=True) with a message
 * that `says` in the status and on the student's starting page, each within REPORTED_WITHIN_MS of
 * the create; then applies `fix` and waits for Ready with Stalled=False and for the environment's
 * own answer on the student's page.
 */
async function brokenThenFixed(
  t: TestContext,
  spec: TemplateSpec,
  reason: string,
  says: RegExp,
  fix: (ns: string) => Promise<unknown>,
): Promise<void> {
  const ns = await testNamespace(t, "node-stall");
  await startOperator(t, ns);
  const keys = await testKeys(t);
  const proxy = await startProxy(t, ns, keys, { PROXY_HOST_TEMPLATES: `${HOST}=lab` });
  const cookie = await keys.cookie("ada");
  await createTemplate(ns, "lab", spec);
  const created = Date.now();
  await createUserland(ns, "ada", "ada", "lab");

  // The status and the page are watched side by side, each timed from the create.
  let lastPage: PageSays | undefined;
  const [stalled, onPage] = await Promise.all([
    eventually(
      `the status to say ${reason}`,
      async () => {
        const u = await getUserland(ns, "ada");
        const condition = u.status?.conditions?.find((c) => c.type === "Stalled");
        return condition?.status === "True" && condition.reason === reason ? u : undefined;
      },
      REPORTED_WITHIN_MS,
      250,
    ).then((u) => ({ u, ms: Date.now() - created })),
    eventually(
      `the starting page to say ${says}`,
      async () => {
        const r = await asStudent(proxy, cookie, "/");
        lastPage = pageSays(r.status, r.body);
        return lastPage.problem && says.test(lastPage.detail) ? lastPage : undefined;
      },
      REPORTED_WITHIN_MS,
      250,
    )
      .catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; the page last said: ${JSON.stringify(lastPage)}`);
      })
      .then((page) => ({ page, ms: Date.now() - created })),
  ]);
  t.diagnostic(`${reason} in the status ${stalled.ms} ms after the create: ${stalled.u.status?.message}`);
  t.diagnostic(`${reason} on the starting page ${onPage.ms} ms after the create: ${onPage.page.detail}`);
  assert.equal(stalled.u.status?.phase, "Starting");
  assert.equal(stalled.u.status?.conditions?.find((c) => c.type === "Ready")?.reason, reason);
  assert.match(stalled.u.status?.message ?? "", says);
  assert.equal(onPage.page.status, 503);
  assert.equal(onPage.page.message, studentWords(reason as StartProblem), "plain words for the student");
  const warning = await eventually("its Warning Event", async () => {
    const events = await (
      await adminRest()
    ).list<{ type?: string; reason?: string }>(`/api/v1/namespaces/${ns}/events`, {
      query: { fieldSelector: "involvedObject.name=ada,involvedObject.kind=Userland" },
    });
    return events.items.find((e) => e.type === "Warning" && e.reason === reason);
  });
  assert.ok(warning);

  // Once fixed, the proxy reaches the environment through a relay into the node.
  const serviceName = childNames("lab", "ada").service;
  const service = await getService(ns, serviceName);
  assert.ok(service?.spec?.clusterIP, `Service ${serviceName} has an address`);
  proxy.resolver.set(
    ns,
    serviceName,
    `http://127.0.0.1:${await exposeFromNode(t, `${service.spec.clusterIP}:80`)}`,
  );

  const fixed = Date.now();
  await fix(ns);
  const ready = await waitForPhase(ns, "ada", "Ready", 120_000);
  assert.equal(ready.status?.conditions?.find((c) => c.type === "Stalled")?.status, "False");
  assert.equal(ready.status?.progress?.steps.at(-1)?.step, "Reachable");
  // The student's page: the environment's own answer (its readiness file), no longer the reason.
  const answer = await eventually(
    "the environment's own answer on the student's page",
    async () => {
      const r = await asStudent(proxy, cookie, "/ready");
      return r.status === 200 ? r : undefined;
    },
    30_000,
    250,
  );
  assert.equal(answer.body.trim(), "ok");
  t.diagnostic(`fixed → the environment's answer on the page: ${Date.now() - fixed} ms`);
}

const fixContainer = async (ns: string) =>
  patchTemplate(ns, "lab", { spec: { template: { spec: { containers: [await healthy()] } } } });

test("an image that does not exist: named in the status, and fixed by a Template that names a real one", async (t) => {
  const broken = {
    ...(await healthy()),
    image: "registry.invalid/userland/missing:1",
    imagePullPolicy: "IfNotPresent",
  };
  await brokenThenFixed(
    t,
    templateOf(broken),
    "ImagePullFailed",
    /^The image "registry\.invalid\/userland\/missing:1" of container "ide" cannot be pulled/,
    fixContainer,
  );
});

test("a container that exits 1: its exit code and its last output in the status", async (t) => {
  const broken = {
    ...(await healthy()),
    command: ["sh", "-c", "echo 'loading settings'; echo 'settings.json: no such file' >&2; exit 1"],
  };
  await brokenThenFixed(
    t,
    templateOf(broken),
    "ContainerCrashing",
    /^The container "ide" stopped with exit code 1[\s\S]*settings\.json: no such file/,
    fixContainer,
  );
});

test("a pod asking for more CPU than the node has: the scheduler's reason", async (t) => {
  const broken = { ...(await healthy()), resources: { requests: { cpu: "1000" } } };
  await brokenThenFixed(
    t,
    templateOf(broken),
    "Unschedulable",
    /^No node can take the environment: .*Insufficient cpu/,
    fixContainer,
  );
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
  // The class name is letters, digits and a dash: nothing in it needs escaping in a pattern.
  const says = new RegExp(
    `^The volume "home" \\(storage class "${storageClass}"\\) cannot be provisioned: storageclass\\.storage\\.k8s\\.io "${storageClass}" not found$`,
  );
  await brokenThenFixed(t, spec, "VolumeProvisioningFailed", says, async () => {
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
});

test("a readiness check that never passes: said after the grace, fixed by a check that fits", async (t) => {
  const broken = {
    ...(await healthy()),
    readinessProbe: { httpGet: { path: "/never-there", port: 8080 }, periodSeconds: 1 },
  };
  await brokenThenFixed(
    t,
    templateOf(broken),
    "ReadinessProbeFailing",
    /does not pass its readiness check \(container "ide"\)/,
    fixContainer,
  );
});
