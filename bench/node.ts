/**
 * Real-node benchmark: `node bench/node.ts [N]` (default 20).
 * Starts a private control plane and the real node (cluster/node), then measures:
 *   - the node's start-up (namespace, containerd, images, kubelet Ready, CoreDNS Ready);
 *   - pod start-up, create → Ready by the pod's own readiness probe, for one pod and for N at once.
 * Baseline: the same pods on a kwok node, where nothing runs (what the control plane alone costs:
 * scheduling and status updates), side by side with the real node's numbers.
 */
import type { V1PodSpec } from "@kubernetes/client-node";
import { join } from "node:path";
import { repoRoot } from "../cluster/repoRoot.ts";
import { onRealNode } from "../cluster/node/addons.ts";
import { k8s } from "../lib/kube.ts";
import { startRealCluster } from "../cluster/realCluster.ts";
import { timePodsReady } from "./pods.ts";
import { percentile } from "./stats.ts";

const count = Number(process.argv[2] ?? 20);
if (!Number.isInteger(count) || count < 1) {
  console.error("usage: node bench/node.ts [number of pods started at once, default 20]");
  process.exit(2);
}

const cluster = await startRealCluster(join(repoRoot, ".userland", "bench-node"));
process.on("SIGINT", () => void cluster.stop().then(() => process.exit(130)));
const { node: info, nodeStartMs } = cluster;
const core = cluster.kc.makeApiClient(k8s.CoreV1Api);

function podSpec(real: boolean): V1PodSpec {
  return {
    ...(real ? onRealNode : {}),
    terminationGracePeriodSeconds: 0,
    containers: [
      {
        name: "web",
        image: info.images.tools ?? "",
        imagePullPolicy: "Never",
        command: [
          "sh",
          "-c",
          "mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec busybox httpd -f -p 8080 -h /tmp/www",
        ],
        readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1 },
      },
    ],
  };
}

const startPods = (namespace: string, n: number, real: boolean) =>
  timePodsReady(core, podSpec(real), { namespace, n });

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const rows: [string, number[], number[]][] = [];
rows.push(["1 pod", await startPods("bench-real-1", 1, true), await startPods("bench-kwok-1", 1, false)]);
rows.push([
  `${count} pods at once`,
  await startPods(`bench-real-${count}`, count, true),
  await startPods(`bench-kwok-${count}`, count, false),
]);

console.log(`\nReal node benchmark (${process.env.HOSTNAME ?? "this machine"}, 2 cores)\n`);
console.log(`real node start-up (containerd, images, kubelet Ready, CoreDNS Ready): ${s(nodeStartMs)}\n`);
console.log("| pods | real node p50 | real node p95 | real node max | kwok p50 | kwok p95 | kwok max |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const [what, real, kwok] of rows) {
  console.log(
    `| ${what} | ${s(percentile(real, 50))} | ${s(percentile(real, 95))} | ${s(percentile(real, 100))} | ${s(percentile(kwok, 50))} | ${s(percentile(kwok, 95))} | ${s(percentile(kwok, 100))} |`,
  );
}
console.log(
  "\ncreate → Ready by the pod's own readiness probe; kwok (nothing runs) is the control plane's share.",
);
await cluster.stop();
process.exit(0);
