/**
 * A real IDE's start on the real node, one student at a time: `node bench/ideStart.ts [N]` (default
 * 10; `npm run bench:idestart`).
 *
 * Starts a private control plane with the real node and the operator (no proxy, no sign-in). For
 * code-server and Jupyter (deploy/'s Templates, their images built here from Debian and npm
 * packages), N times each, one after another: a Userland created → Ready (the operator's status),
 * and created → the IDE's first answer through its Service (any HTTP status below 500 at its root,
 * asked every 100 ms through the harness's relay from the moment it is Ready). Each Userland is
 * deleted and its pod waited out before the next. Baseline: the same pod spec as a bare Pod
 * (emptyDir volumes, no operator, no Service), create → Ready by its own probe, N times. Numbers side
 * by side, asserted nowhere (issue 28's measurement).
 */
import { join } from "node:path";
import { userlandNameFor } from "../api/naming.ts";
import type { Template, Userland } from "../api/v1alpha1/index.ts";
import { connectTo, privateControlPlane } from "../cluster/harness/privateControlPlane.ts";
import { localTemplate } from "../cluster/node/localTemplates.ts";
import { RealNode } from "../cluster/node/realNode.ts";
import { Relays } from "../cluster/node/relay.ts";
import { paths } from "../api/kubePaths.ts";
import { k8s } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import {
  operatorKubeconfig,
  spawnOperator,
  waitForLeadership,
  type OperatorProcess,
} from "../cluster/harness/operator.ts";
import { timePodsReady } from "./pods.ts";
import { runBench } from "./run.ts";
import { percentile } from "./stats.ts";

const count = Number(process.argv[2] ?? 10);
if (!Number.isInteger(count) || count < 1) {
  console.error("usage: node bench/ideStart.ts [starts per IDE, default 10]");
  process.exit(2);
}
const NAMESPACE = "bench-idestart";
const IDES = ["code-server.yaml", "jupyter.yaml"];
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const controlPlane = privateControlPlane("bench-idestart");
const node = new RealNode({
  controlPlane,
  dir: join(controlPlane.dir, "node"),
  log: (line) => console.error(`[real-node] ${line}`),
});
let operator: OperatorProcess | undefined;
let relays: Relays | undefined;
async function cleanup(): Promise<void> {
  await relays?.close().catch(() => undefined);
  await operator?.stop("SIGKILL").catch(() => undefined);
  await node.stop().catch(() => undefined);
  await controlPlane.stop().catch(() => undefined);
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

await runBench("bench/ideStart.ts", cleanup, async () => {
  const info = await controlPlane.start();
  const nodeStarted = Date.now();
  const nodeInfo = await node.start();
  const nodeStartMs = Date.now() - nodeStarted;
  const cluster = await connectTo({ ...info, realNode: nodeInfo }, { crds: true });
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const rest = new KubeRest(cluster.kc, "userland-bench");
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const { path, username } = await operatorKubeconfig(NAMESPACE, cluster);
  operator = await spawnOperator(path, username, NAMESPACE, { env: { LOG_LEVEL: "warn" } });
  await waitForLeadership(operator);
  relays = Relays.into(nodeInfo.namespacePid);
  const containerd = { ctr: join(info.binDir, "ctr"), socket: nodeInfo.containerdSocket };
  const userlands = paths.namespaced("userland.dev", "v1alpha1", "userlands", NAMESPACE);

  /** One start of `template`: created → Ready, and created → the IDE's first answer, in ms. */
  async function start(
    template: string,
    i: number,
  ): Promise<{ ready: number; answer: number; refused: number }> {
    const user = `student-${i}`;
    const name = userlandNameFor(user, template);
    const created = performance.now();
    await rest.create(userlands, {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name },
      spec: { user, templateName: template },
    });
    let userland: Userland | undefined;
    const deadline = created + 10 * 60_000;
    for (;;) {
      userland = await rest.get<Userland>(`${userlands}/${name}`);
      if (userland.status?.phase === "Ready") break;
      if (performance.now() > deadline) throw new Error(`${name}: not Ready after 10 minutes`);
      await sleep(100);
    }
    const ready = performance.now() - created;
    const service = await core.readNamespacedService({
      namespace: NAMESPACE,
      name: userland.status?.service?.name ?? "",
    });
    const port = await relays?.expose(`${service.spec?.clusterIP}:${userland.status?.service?.port ?? 80}`);
    // Refused or closed before an answer (the Service not routed yet, the app not listening): asked
    // again, as a browser's starting page does, and counted.
    let refused = 0;
    let answer = 0;
    while (!answer) {
      if (performance.now() > deadline) throw new Error(`${name}: no answer after 10 minutes`);
      const status = await fetch(`http://127.0.0.1:${port}/`, {
        redirect: "manual",
        signal: AbortSignal.timeout(10_000),
      }).then(
        (r) => r.status,
        () => 0,
      );
      if (status > 0 && status < 500) answer = performance.now() - created;
      else {
        refused++;
        await sleep(100);
      }
    }
    await rest.delete(`${userlands}/${name}`);
    while (
      (
        await core.listNamespacedPod({
          namespace: NAMESPACE,
          labelSelector: "app.kubernetes.io/managed-by=userland-operator",
        })
      ).items.length > 0
    )
      await sleep(250);
    return { ready, answer, refused };
  }

  /** The Template's pod spec as a bare Pod (emptyDir for its volumes): create → Ready, in ms. */
  async function bare(template: Template, i: number): Promise<number> {
    const spec = structuredClone(template.spec.template.spec);
    if (!spec) throw new Error(`${template.metadata.name}: no pod spec`);
    spec.volumes = (template.spec.volumes ?? []).map((v) => ({ name: v.name, emptyDir: {} }));
    const [ms] = await timePodsReady(core, spec, {
      namespace: `bare-${template.metadata.name}-${i}`,
      n: 1,
    });
    return ms ?? 0;
  }

  const rows: string[] = [];
  for (const file of IDES) {
    const template = await localTemplate(file, containerd);
    const name = template.metadata.name ?? "";
    await rest.create(paths.namespaced("userland.dev", "v1alpha1", "templates", NAMESPACE), {
      ...template,
      metadata: { name },
    });
    const starts: { ready: number; answer: number; refused: number }[] = [];
    for (let i = 0; i < count; i++) {
      starts.push(await start(name, i));
      console.error(`[bench] ${name} ${i + 1}/${count}: ${JSON.stringify(starts.at(-1))}`);
    }
    const baseline: number[] = [];
    for (let i = 0; i < count; i++) baseline.push(await bare(template, i));
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const cells = (xs: number[]) => [50, 90, 100].map((p) => s(percentile(sorted(xs), p))).join(" | ");
    rows.push(
      `| ${name} | ${cells(starts.map((x) => x.ready))} | ${cells(starts.map((x) => x.answer))} | ${cells(baseline)} | ${starts.reduce((n, x) => n + x.refused, 0)} |`,
    );
  }

  console.log(`\nA real IDE's start on the real node, ${count} times each, one at a time (2 cores)\n`);
  console.log(`real node start-up: ${s(nodeStartMs)}\n`);
  console.log(
    "| IDE | create → Ready p50 | p90 | max | create → first answer p50 | p90 | max | baseline: bare pod create → Ready p50 | p90 | max | asked again |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows) console.log(row);
  console.log(
    "\nReady: the operator's status (the Deployment available and the Service's EndpointSlice ready);" +
      " first answer: any HTTP status below 500 at the IDE's root through its Service;" +
      " asked again: requests refused or closed before an answer, all starts together.",
  );
});
