/**
 * A control plane of a run's own (a benchmark, `npm run chaos`, `npm run soak`, a test that restarts
 * kube-apiserver), under .userland/<name>: made, then started, its info recorded in cluster.json
 * there and connected to as the admin, with the CRDs installed when asked.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeRest } from "../../lib/kubeRest.ts";
import { ControlPlane, type ControlPlaneInfo, type ControlPlaneOptions } from "../controlPlane.ts";
import { installCustomResourceDefinitions } from "../customResourceDefinitions.ts";
import type { RealNodeInfo } from "../node/realNode.ts";
import { repoRoot } from "../repoRoot.ts";
import { connect, type ClusterAccess } from "./connect.ts";

/** The control plane in .userland/<name>, not started yet (so a caller can stop it from a signal handler). */
export function privateControlPlane(name: string, opts: Omit<ControlPlaneOptions, "dir"> = {}): ControlPlane {
  return new ControlPlane({
    dir: join(repoRoot, ".userland", name),
    log: (line) => console.error(`[control-plane] ${line}`),
    ...opts,
  });
}

export interface ConnectOptions {
  /** Install the generated CRDs and wait until they are served. */
  crds?: boolean;
}

/** Starts `controlPlane`, then connects to it (connectTo). */
export async function startAndConnect(
  controlPlane: ControlPlane,
  opts: ConnectOptions = {},
): Promise<{ info: ControlPlaneInfo; cluster: ClusterAccess }> {
  const info = await controlPlane.start();
  return { info, cluster: await connectTo(info, opts) };
}

/** Records a started control plane's info (and a real node's) in its cluster.json and connects as the admin. */
export async function connectTo(
  info: ControlPlaneInfo & { realNode?: RealNodeInfo },
  opts: ConnectOptions = {},
): Promise<ClusterAccess> {
  const infoFile = join(info.dir, "cluster.json");
  writeFileSync(infoFile, JSON.stringify(info));
  const cluster = await connect(infoFile);
  if (opts.crds) {
    const rest = new KubeRest(cluster.kc, "userland-harness");
    await installCustomResourceDefinitions(rest);
    await rest.close();
  }
  return cluster;
}
