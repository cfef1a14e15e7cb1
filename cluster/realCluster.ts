/**
 * A control plane with the real node in `dir`, for benchmarks and the local platform.
 * If the node cannot start, the control plane is stopped again and the node's error is thrown.
 */
import { join } from "node:path";
import { ControlPlane } from "./controlPlane.ts";
import { RealNode, type RealNodeInfo } from "./node/realNode.ts";
import { k8s } from "../lib/kube.ts";

export interface RealCluster {
  controlPlane: ControlPlane;
  node: RealNodeInfo;
  /** The Go-built tools: helm, kubectl, ctr, ... */
  binDir: string;
  kc: InstanceType<typeof k8s.KubeConfig>;
  /** How long the node took to start (containerd, images, kubelet Ready, CoreDNS Ready). */
  nodeStartMs: number;
  stop(): Promise<void>;
}

export async function startRealCluster(
  dir: string,
  log = (line: string) => console.error(line),
): Promise<RealCluster> {
  const controlPlane = new ControlPlane({
    dir,
    nodes: 1,
    log: (line) => log(`[control-plane] ${line}`),
  });
  const realNode = new RealNode({
    controlPlane,
    dir: join(controlPlane.dir, "node"),
    log: (line) => log(`[real-node] ${line}`),
  });
  const stop = async () => {
    await realNode.stop().catch(() => undefined);
    await controlPlane.stop().catch(() => undefined);
  };
  const { binDir } = await controlPlane.start();
  const started = Date.now();
  const node = await realNode.start().catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const nodeStartMs = Date.now() - started;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  return { controlPlane, node, binDir, kc, nodeStartMs, stop };
}
