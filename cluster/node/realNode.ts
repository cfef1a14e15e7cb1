/**
 * One real Kubernetes node beside kwok's simulated ones: containerd + runc, the CNI bridge,
 * kubelet, kube-proxy (nftables), CoreDNS, kube-network-policies and local-path-provisioner, all
 * in a network/PID/mount namespace of their own (namespace.ts) with no route out. The node joins
 * the test control plane through a relay; its pods are real containers of locally built images.
 *
 * Pods reach it only by asking (nodeSelector userland.dev/node=real and a toleration for the
 * userland.dev/real-node taint; `onRealNode` in addons.ts), so kwok keeps everything else.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { METADATA_IP, NODE_API_SERVER_PORT, NODE_IP, SERVICE_CIDR } from "../addresses.ts";
import { kubeconfigYaml, REAL_NODE_NAME, type ControlPlane } from "../controlPlane.ts";
import { ProcessGroup, waitFor } from "../processes.ts";
import {
  bootstrapObjects,
  coreDnsObjects,
  LOCAL_PATH_NAMESPACE,
  LOCAL_PATH_SERVICE_ACCOUNT,
  localPathObjects,
} from "./addons.ts";
import {
  cgroupProcesses,
  cgroupRootFor,
  createCgroupRoot,
  killCgroupProcesses,
  removeCgroupRoot,
  removeCgroupRootAfterExit,
} from "./cgroups.ts";
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  REAL_NODE_LABEL,
  type NodePaths,
} from "./config.ts";
import { buildImages, importImage, type BuiltImage } from "./images.ts";
import { NodeNamespace } from "./namespace.ts";
import { Relays } from "./relay.ts";
import { realNodeUnsupported } from "./support.ts";

const execFileAsync = promisify(execFile);

/** Images every real node has; tests import their own (images.ts `importImage`). */
const NODE_IMAGES = ["pause", "tools", "coredns"];

/** Where the kubelet of the node in `dir` writes containers' logs (<ns>_<pod>_<uid>/<container>/N.log). */
export function podLogsDir(dir: string): string {
  return join(dir, "pod-logs");
}

export interface RealNodeInfo {
  name: string;
  ip: string;
  /** Host PID of the namespace's init: `nsenter -t <pid> --net` runs a command inside. */
  namespacePid: number;
  /** Image references by name ("tools", ...), as pods must name them. */
  images: Record<string, string>;
  /** containerd's socket, for `ctr` (image lists, exec into a container). */
  containerdSocket: string;
  dir: string;
}

export class RealNode {
  readonly dir: string;
  private readonly controlPlane: ControlPlane;
  private readonly log: (line: string) => void;
  private readonly processes: ProcessGroup;
  private readonly ns: NodeNamespace;
  private readonly relays: Relays;
  private readonly paths: NodePaths;
  private readonly cgroupRoot: string;
  private images: Record<string, BuiltImage> = {};
  private started = false;

  constructor(opts: { controlPlane: ControlPlane; dir: string; log?: (line: string) => void }) {
    this.controlPlane = opts.controlPlane;
    this.dir = opts.dir;
    this.log = opts.log ?? ((line) => process.stderr.write(`[real-node] ${line}\n`));
    this.processes = new ProcessGroup(join(this.dir, "logs"), this.log);
    this.ns = new NodeNamespace(this.processes);
    this.relays = new Relays(join(this.dir, "relay"), this.ns);
    this.cgroupRoot = cgroupRootFor(this.dir);
    this.paths = {
      dir: this.dir,
      containerdRoot: join(this.dir, "containerd", "root"),
      // Under /run, which is a tmpfs of the node's own (see prepareNamespace): containerd's shims
      // put their sockets in /run/containerd/s whatever the configuration says.
      containerdState: "/run/containerd",
      containerdSocket: join(this.dir, "containerd.sock"),
      runcRoot: "/run/runc",
      cniConfDir: join(this.dir, "cni"),
      cniDataDir: join(this.dir, "cni-ipam"),
      kubeletRoot: join(this.dir, "kubelet"),
      podLogs: podLogsDir(this.dir),
      volumes: join(this.dir, "volumes"),
    };
  }

  private get bin(): string {
    return this.controlPlane.binDir;
  }

  async start(): Promise<RealNodeInfo> {
    const reason = realNodeUnsupported();
    if (reason) throw new Error(`cannot start the real node: ${reason}`);
    const started = Date.now();
    await this.clearLeftovers();
    for (const d of [this.paths.cniConfDir, this.paths.podLogs, this.paths.volumes, this.paths.kubeletRoot]) {
      mkdirSync(d, { recursive: true });
    }
    this.started = true;

    // Built once, cached afterwards (0.5 s); containerd's configuration names the pause image.
    const images = await buildImages(NODE_IMAGES, { COREDNS_BIN: join(this.bin, "coredns") });
    await this.ns.create();
    await this.prepareNamespace();
    this.writeConfig();

    // The control plane, as the node and its pods see it: the node's address, port 6443.
    const apiPort = Number(new URL(this.controlPlane.server).port);
    await this.relays.exposeInside(`${NODE_IP}:${NODE_API_SERVER_PORT}`, apiPort);
    // The cloud metadata stand-in: a pod must never reach it (NetworkPolicy tests prove it).
    await this.ns.startDaemon("metadata", "socat", [
      `TCP-LISTEN:80,bind=${METADATA_IP},fork,reuseaddr`,
      "SYSTEM:printf 'HTTP/1.0 200 OK\\r\\n\\r\\nsecret-instance-credentials\\n'",
    ]);

    await this.startContainerd(images.pause);
    await this.loadImages(images);
    await this.kubectlApply(bootstrapObjects());
    await this.startKubelet();
    await this.startNetworkDaemons();
    await this.kubectlApply([
      ...coreDnsObjects(this.imageRef("coredns")),
      ...localPathObjects(this.paths.volumes, this.imageRef("tools")),
    ]);
    await this.startLocalPathProvisioner();
    await this.waitForDeployment("kube-system", "coredns", 120_000);
    this.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)}s: node ${REAL_NODE_NAME} at ${NODE_IP}`);
    return this.info();
  }

  info(): RealNodeInfo {
    return {
      name: REAL_NODE_NAME,
      ip: NODE_IP,
      namespacePid: this.ns.pid,
      images: Object.fromEntries(Object.entries(this.images).map(([name, image]) => [name, image.ref])),
      containerdSocket: this.paths.containerdSocket,
      dir: this.dir,
    };
  }

  imageRef(name: string): string {
    const image = this.images[name];
    if (!image) throw new Error(`image ${name} is not loaded on the real node`);
    return image.ref;
  }

  private async loadImages(images: Record<string, BuiltImage>): Promise<void> {
    for (const [name, image] of Object.entries(images)) {
      await importImage(join(this.bin, "ctr"), this.paths.containerdSocket, image);
      this.images[name] = image;
    }
  }

  async stop(opts: { keepFiles?: boolean } = {}): Promise<void> {
    if (!this.started) return;
    this.started = false;
    // The kubelet first, so that it does not restart what containerd is stopping; the kernel then
    // ends every container with the namespace.
    for (const [name, graceMs] of [
      ["local-path-provisioner", 5_000],
      // On SIGTERM it removes its nftables table at once, then sleeps 5 s before exiting (its
      // main.go's "grace period"); the table is in the node's network namespace, gone with it.
      ["kube-network-policies", 1_000],
      ["kube-proxy", 5_000],
      ["kubelet", 5_000],
      ["containerd", 5_000],
    ] as const) {
      await this.ns.stopDaemon(name, graceMs);
    }
    await this.ns.destroy();
    await this.relays.close();
    await this.removeCgroups();
    if (!opts.keepFiles) rmSync(this.dir, { recursive: true, force: true });
  }

  // --- steps --------------------------------------------------------------------------------

  /**
   * What an interrupted run may have left: its cgroups and files. Its processes and mounts died with
   * it, but for one kind: a container being made when it stopped can stay frozen (`runc init` in a
   * FROZEN freezer cgroup), which is thawed and killed here.
   */
  private async clearLeftovers(): Promise<void> {
    if (removeCgroupRoot(this.cgroupRoot).length > 0) {
      const killed = killCgroupProcesses(this.cgroupRoot);
      this.log(`killed ${killed} processes an earlier real node left in its cgroups`);
      await waitFor("their end", () => cgroupProcesses(this.cgroupRoot) === 0, 10_000).catch(() => undefined);
    }
    const left = removeCgroupRoot(this.cgroupRoot);
    if (left.length > 0)
      throw new Error(`cgroups of an earlier real node are still in use: ${left.join(", ")}`);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async prepareNamespace(): Promise<void> {
    const script = [
      "set -e",
      "ip link set lo up",
      // The node's address and the metadata stand-in, on interfaces that lead nowhere: bridges
      // without ports, because this kernel has no dummy interfaces.
      "ip link add node0 type bridge",
      `ip addr add ${NODE_IP}/32 dev node0`,
      "ip link set node0 up",
      "ip link add metadata0 type bridge",
      `ip addr add ${METADATA_IP}/32 dev metadata0`,
      "ip link set metadata0 up",
      // Locally started connections to Service addresses need a route before kube-proxy's DNAT
      // rewrites them; there is no default route, so nothing else leaves.
      `ip route add ${SERVICE_CIDR} dev node0`,
      "echo 1 > /proc/sys/net/ipv4/ip_forward",
      "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables",
      // Runtime state that containerd, its shims and runc keep in fixed places under /run and
      // /var/lib/cni: a tmpfs of this namespace, gone with it, never the machine's own.
      "mount -t tmpfs -o mode=0755 tmpfs /run",
      "mkdir -p /var/lib/cni",
      "mount -t tmpfs -o mode=0755 tmpfs /var/lib/cni",
    ].join("\n");
    await this.ns.run("sh", ["-c", script]);
  }

  private writeConfig(): void {
    const cp = this.controlPlane;
    const tokens = cp.realNodeTokens;
    const server = `https://${NODE_IP}:${NODE_API_SERVER_PORT}`;
    const ca = readFileSync(cp.caFile);
    writeFileSync(
      join(this.dir, "kubelet.kubeconfig"),
      kubeconfigYaml(server, ca, "kubelet", tokens.kubelet),
    );
    writeFileSync(
      join(this.dir, "kube-proxy.kubeconfig"),
      kubeconfigYaml(server, ca, "kube-proxy", tokens.kubeProxy),
    );
    writeFileSync(join(this.dir, "addons.kubeconfig"), kubeconfigYaml(server, ca, "addons", tokens.addons));
    writeFileSync(join(this.paths.cniConfDir, "10-userland.conflist"), cniConfig(this.paths));
    writeFileSync(join(this.dir, "kubelet.yaml"), kubeletConfig(this.paths, this.cgroupRoot));
    writeFileSync(
      join(this.dir, "kube-proxy.yaml"),
      kubeProxyConfig(join(this.dir, "kube-proxy.kubeconfig"), REAL_NODE_NAME),
    );
    // Pods with dnsPolicy Default get no name server of this machine.
    writeFileSync(join(this.dir, "resolv.conf"), "");
  }

  private async startContainerd(pause: BuiltImage | undefined): Promise<void> {
    if (!pause) throw new Error("the pause image was not built");
    writeFileSync(join(this.dir, "containerd.toml"), containerdConfig(this.paths, pause.ref));
    await this.ns.startDaemon(
      "containerd",
      join(this.bin, "containerd"),
      ["--config", join(this.dir, "containerd.toml")],
      {
        ...process.env,
        // containerd finds its shim on PATH; the shim finds runc from the configuration.
        PATH: `${this.bin}:/usr/sbin:/usr/bin:/sbin:/bin`,
      },
    );
    const ctr = join(this.bin, "ctr");
    await waitFor(
      "containerd",
      async () =>
        (await execFileAsync(ctr, ["--address", this.paths.containerdSocket, "version"])).stdout.includes(
          "Server",
        ),
      30_000,
      { alive: () => this.ns.isRunning("containerd"), logs: this.processes.logFile("containerd") },
    );
  }

  private async startKubelet(): Promise<void> {
    createCgroupRoot(this.cgroupRoot);
    // Also when the harness is killed outright and stop() never runs.
    removeCgroupRootAfterExit(this.cgroupRoot, join(this.dir, "cgroup-owner"));
    const labels = Object.entries(REAL_NODE_LABEL).map(([k, v]) => `${k}=${v}`);
    await this.ns.startDaemon("kubelet", join(this.bin, "kubelet"), [
      `--config=${join(this.dir, "kubelet.yaml")}`,
      `--kubeconfig=${join(this.dir, "kubelet.kubeconfig")}`,
      `--root-dir=${this.paths.kubeletRoot}`,
      `--hostname-override=${REAL_NODE_NAME}`,
      // kubelet refuses a loopback node address; this one is inside the namespace.
      `--node-ip=${NODE_IP}`,
      `--node-labels=${labels.join(",")}`,
      "--v=1",
    ]);
    await waitFor("the real node to be Ready", () => this.nodeReady(), 90_000, {
      alive: () => this.ns.isRunning("kubelet"),
      logs: this.processes.logFile("kubelet"),
    });
  }

  private async startNetworkDaemons(): Promise<void> {
    await this.ns.startDaemon("kube-proxy", join(this.bin, "kube-proxy"), [
      `--config=${join(this.dir, "kube-proxy.yaml")}`,
      "--v=1",
    ]);
    await this.ns.startDaemon("kube-network-policies", join(this.bin, "kube-network-policies"), [
      `--kubeconfig=${join(this.dir, "addons.kubeconfig")}`,
      `--hostname-override=${REAL_NODE_NAME}`,
      "--metrics-bind-address=127.0.0.1:9080",
      // NRI would need containerd's NRI socket; the pod informer is enough for one node.
      "--disable-nri",
      // A policy must hold even if the enforcer is down: tests would otherwise pass by accident.
      "--fail-open=false",
      // Strict mode re-checks established connections through conntrack labels, which this kernel
      // cannot set from the queue (see cluster/tools/kube-network-policies/build.sh).
      "--strict-mode=false",
      "--v=1",
    ]);
  }

  private async startLocalPathProvisioner(): Promise<void> {
    await this.ns.startDaemon("local-path-provisioner", join(this.bin, "local-path-provisioner"), [
      "start",
      `--kubeconfig=${join(this.dir, "addons.kubeconfig")}`,
      `--namespace=${LOCAL_PATH_NAMESPACE}`,
      `--service-account-name=${LOCAL_PATH_SERVICE_ACCOUNT}`,
      `--helper-image=${this.imageRef("tools")}`,
      "--provisioner-name=rancher.io/local-path",
    ]);
  }

  private async removeCgroups(): Promise<void> {
    // The kernel empties the cgroups as the namespace's processes die; give it a moment.
    await waitFor(
      "the real node's processes to end",
      () => cgroupProcesses(this.cgroupRoot) === 0,
      15_000,
    ).catch(() => undefined);
    let left = removeCgroupRoot(this.cgroupRoot);
    if (left.length > 0 && killCgroupProcesses(this.cgroupRoot) > 0) {
      await waitFor("the frozen ones to end", () => cgroupProcesses(this.cgroupRoot) === 0, 10_000).catch(
        () => undefined,
      );
      left = removeCgroupRoot(this.cgroupRoot);
    }
    if (left.length > 0) this.log(`could not remove cgroups: ${left.join(", ")}`);
  }

  // --- the API, as the harness's admin ---------------------------------------------------------

  private async kubectlApply(objects: Record<string, unknown>[]): Promise<void> {
    const input = objects.map((o) => `---\n${stringify(o)}`).join("");
    await new Promise<void>((resolve, reject) => {
      const child = execFile(
        join(this.bin, "kubectl"),
        [
          `--kubeconfig=${this.controlPlane.kubeconfigPath}`,
          "apply",
          "--server-side",
          "--force-conflicts",
          "-f",
          "-",
        ],
        (error, _stdout, stderr) =>
          error ? reject(new Error(`kubectl apply: ${stderr || error.message}`)) : resolve(),
      );
      child.stdin?.end(input);
    });
  }

  private async nodeReady(): Promise<boolean> {
    // A failed request rejects, which waitFor counts as not Ready yet.
    const node = await this.controlPlane.rest.get<{
      status?: { conditions?: { type: string; status: string }[] };
    }>(`/api/v1/nodes/${REAL_NODE_NAME}`);
    return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
  }

  private async waitForDeployment(namespace: string, name: string, timeoutMs: number): Promise<void> {
    await waitFor(
      `deployment ${namespace}/${name} on the real node`,
      async () => {
        const d = await this.controlPlane.rest.get<{ status?: { readyReplicas?: number } }>(
          `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
        );
        return (d.status?.readyReplicas ?? 0) >= 1;
      },
      timeoutMs,
      { logs: join(this.dir, "logs") },
    );
  }
}
