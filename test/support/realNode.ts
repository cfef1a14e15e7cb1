/**
 * What a test needs from the real node started by test/run.ts (cluster/node): its images, a way to
 * schedule pods there, and ways in that never leave its network namespace: commands run inside the
 * namespace (`inNode`), or inside a pod's container through containerd (`execInContainer`, what
 * `kubectl exec` does; the API server cannot dial the kubelet from loopback).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { TestContext } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { k8s } from "../../lib/kube.ts";
import { podLogsDir, type RealNodeInfo } from "../../cluster/node/realNode.ts";
import { Relays } from "../../cluster/node/relay.ts";
import { run, type RunResult } from "../chart/support.ts";
import { eventually, testCluster } from "./cluster.ts";

export { onRealNode } from "../../cluster/node/addons.ts";
export { LOCAL_PATH_STORAGE_CLASS } from "../../cluster/node/addons.ts";

export async function realNode(): Promise<RealNodeInfo & { binDir: string }> {
  const { info } = await testCluster();
  if (!info.realNode) {
    throw new Error("the real node is not running: test/run.ts starts it unless USERLAND_REAL_NODE=off");
  }
  return { ...info.realNode, binDir: info.binDir };
}

/**
 * The last `lines` lines a container of a pod on the real node wrote, as `kubectl logs` shows
 * them (the API server cannot dial the kubelet from loopback; the logs are files on this machine).
 */
export async function podLog(pod: V1Pod, container: string, lines = 40): Promise<string> {
  const dir = podLogsDir((await realNode()).dir);
  const prefix = `${pod.metadata?.namespace}_${pod.metadata?.name}_`;
  const podDir = readdirSync(dir).find((d) => d.startsWith(prefix));
  if (!podDir) return `(no logs of ${prefix}* in ${dir})`;
  const files = readdirSync(join(dir, podDir, container)).sort();
  const last = files.at(-1);
  if (!last) return "(no log file)";
  return readFileSync(join(dir, podDir, container, last), "utf8")
    .trimEnd()
    .split("\n")
    .slice(-lines)
    .join("\n");
}

/** Runs `command` in the real node's network namespace (not in a pod); resolves with its outcome. */
export async function inNode(command: string, args: string[], timeoutMs = 20_000): Promise<RunResult> {
  const node = await realNode();
  return run("nsenter", ["-t", String(node.namespacePid), "--net", "--", command, ...args], { timeoutMs });
}

/**
 * Relays across the real node's wall (cluster/node/relay.ts) for a test's own use: `expose` gives a
 * 127.0.0.1 port of this machine that reaches a pod or Service address inside (how a browser or a
 * client gets in without any route into the namespace); `exposeInside` lets pods reach a loopback
 * service of this machine at NODE_IP (see MACHINE_HOST). `close` removes them.
 */
export async function nodeRelays(): Promise<Relays> {
  return Relays.into((await realNode()).namespacePid);
}

/** A 127.0.0.1 port of this machine that reaches `target` ("ip:port") inside the real node while `t` runs. */
export async function exposeFromNode(t: TestContext, target: string): Promise<number> {
  const relays = await nodeRelays();
  t.after(() => relays.close());
  return relays.expose(target);
}

/**
 * Waits until the real node's kube-proxy sends `clusterIP`:`port` (TCP) to an endpoint: the
 * Service's element in its nftables map `service-ips`. A Userland turns Ready when the Service's
 * EndpointSlice has a ready address; kube-proxy programs that a moment later (about a second here),
 * and until then it rejects a connection to the Service (`no-endpoint-services`). The proxy rides
 * that moment out itself (services/proxy/forward/readyRetry.ts); a test that dials the Service straight
 * waits for it here.
 */
export async function waitForServiceRouting(
  clusterIP: string,
  port: number,
  timeoutMs = 30_000,
): Promise<void> {
  await eventually(
    `the real node's kube-proxy to route ${clusterIP}:${port}`,
    async () =>
      (
        await inNode("nft", [
          "get",
          "element",
          "ip",
          "kube-proxy",
          "service-ips",
          `{ ${clusterIP} . tcp . ${port} }`,
        ])
      ).code === 0,
    timeoutMs,
    100,
  );
}

/**
 * Runs a shell script (`sh -euc`) in a pod's container, as the harness acts for a teacher or a
 * student; fails the test with its stderr. Resolves with its stdout.
 */
export async function shIn(pod: V1Pod, script: string, timeoutMs = 60_000): Promise<string> {
  const result = await execInContainer(pod, ["sh", "-euc", script], { timeoutMs });
  assert.equal(result.code, 0, `${pod.metadata?.name}: ${script}\n${result.stderr}`);
  return result.stdout;
}

/** Every file below `dir` on this machine, by its path relative to it (a fixture for writeFilesIn). */
export function filesOf(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files[relative(dir, path)] = readFileSync(path, "utf8");
    }
  };
  walk(dir);
  return files;
}

/** Writes `files` (relative path → text) under `dir` in a pod's container, its folders made as needed. */
export async function writeFilesIn(pod: V1Pod, dir: string, files: Record<string, string>): Promise<void> {
  const script = Object.entries(files)
    .map(([path, text]) => {
      const target = `${dir}/${path}`;
      return `mkdir -p "$(dirname '${target}')" && echo '${Buffer.from(text).toString("base64")}' | base64 -d > '${target}'`;
    })
    .join(" && ");
  await shIn(pod, script);
}

/** Runs `argv` in a running container of a pod, like `kubectl exec`; resolves with its outcome. */
export async function execInContainer(
  pod: V1Pod,
  argv: string[],
  opts: { container?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const node = await realNode();
  const status = pod.status?.containerStatuses?.find((c) => !opts.container || c.name === opts.container);
  const id = status?.containerID?.replace(/^containerd:\/\//, "");
  if (!id) throw new Error(`pod ${pod.metadata?.name} has no running container ${opts.container ?? ""}`);
  const execId = `test-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`;
  // ctr hands the process's stdio to the shim through FIFOs under /run/containerd, which is the
  // node's own tmpfs: ctr must run in the node's mount namespace to share them.
  return run(
    "nsenter",
    [
      "-t",
      String(node.namespacePid),
      "--mount",
      // The node's /proc belongs to its PID namespace: ctr's /proc/self must be there too.
      "--pid",
      "--",
      join(node.binDir, "ctr"),
      ...[
        "--address",
        node.containerdSocket,
        "--namespace",
        "k8s.io",
        "tasks",
        "exec",
        "--exec-id",
        execId,
        id,
      ],
      ...argv,
    ],
    { timeoutMs: opts.timeoutMs ?? 30_000 },
  );
}

/** Waits until the pod runs on the real node and is Ready (by its own probes); returns it. */
export async function waitForPodReady(namespace: string, name: string, timeoutMs = 90_000): Promise<V1Pod> {
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  return eventually(
    `pod ${namespace}/${name} to be Ready on the real node`,
    async () => {
      const pod = await core.readNamespacedPod({ namespace, name });
      const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return ready ? pod : undefined;
    },
    timeoutMs,
    250,
  );
}

/** The pods of a Deployment-like selector, once exactly one is Ready; returns it. */
export async function waitForOnePodReady(
  namespace: string,
  labelSelector: string,
  timeoutMs = 120_000,
): Promise<V1Pod> {
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  return eventually(
    `one Ready pod for ${labelSelector} in ${namespace}`,
    async () => {
      const pods = (await core.listNamespacedPod({ namespace, labelSelector })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      const ready = pods.filter((p) =>
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      );
      return pods.length === 1 && ready.length === 1 ? ready[0] : undefined;
    },
    timeoutMs,
    250,
  );
}

/**
 * Deletes a namespace a real-node test file installed the platform into and waits until its pods
 * are gone: the real node's two CPUs are what every file's pods request, and a platform left
 * running (the chart's components and students' IDEs) left the next file's class of four
 * Jupyters Unschedulable (CI ci4). Bounded: a namespace still terminating after `timeoutMs` fails.
 */
export async function releaseNamespace(namespace: string, timeoutMs = 120_000): Promise<void> {
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await eventually(
    `the pods of namespace ${namespace} gone`,
    async () => (await core.listNamespacedPod({ namespace })).items.length === 0,
    timeoutMs,
  );
}
