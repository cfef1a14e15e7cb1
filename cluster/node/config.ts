/**
 * The real node's configuration files: containerd, the CNI network, kubelet and kube-proxy. Pure
 * functions of the node's directory and addresses, so what the node runs with can be read in one
 * place. Why each unusual setting is there is written next to it; the machine facts behind them are
 * in docs/decisions/0005-real-node.md.
 */
import { stringify } from "yaml";
import { CLUSTER_DNS_IP, NODE_IP, NODE_POD_CIDR, NODE_POD_GATEWAY, POD_CIDR } from "../addresses.ts";

export interface NodePaths {
  /** The node's directory: configuration, state and logs. */
  dir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  runcRoot: string;
  cniConfDir: string;
  cniDataDir: string;
  kubeletRoot: string;
  podLogs: string;
  volumes: string;
}

export function containerdConfig(p: NodePaths, sandboxImage: string): string {
  return `version = 3
root = "${p.containerdRoot}"
state = "${p.containerdState}"

[grpc]
  address = "${p.containerdSocket}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"

  # The sandbox image is built locally (no registry is reachable); pinning keeps it from image GC.
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${sandboxImage}"

[plugins.'io.containerd.cri.v1.runtime']
  # This machine refuses to lower oom_score_adj, even to root: without this every sandbox fails
  # with "runc create failed: ... can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true

  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"

    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "${p.runcRoot}"
        SystemdCgroup = false

  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${p.cniConfDir}"
    max_conf_num = 1
`;
}

/** One bridge for the node's pods; no masquerade and no route out, because there is no "out". */
export function cniConfig(p: NodePaths): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "userland-pods",
      plugins: [
        {
          type: "bridge",
          bridge: "cni0",
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            dataDir: p.cniDataDir,
            ranges: [[{ subnet: NODE_POD_CIDR, gateway: NODE_POD_GATEWAY }]],
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(p: NodePaths, cgroupRoot: string): string {
  return stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    // No systemd here, and the machine mounts cgroup v1 hierarchies, which kubelet refuses from
    // 1.35 unless told otherwise.
    cgroupDriver: "cgroupfs",
    failCgroupV1: false,
    // The node's pods live under their own cgroup, so the harness can find and remove what a
    // stopped kubelet leaves behind (cgroups.ts).
    cgroupRoot,
    cgroupsPerQOS: true,
    enforceNodeAllocatable: ["pods"],
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    address: NODE_IP,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: 10248,
    // Only this namespace can reach the kubelet; the API server never dials it (no logs/exec).
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: {} },
    authorization: { mode: "AlwaysAllow" },
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: "cluster.local",
    // Pods with dnsPolicy Default get no name servers of this machine.
    resolvConf: `${p.dir}/resolv.conf`,
    podLogsDir: p.podLogs,
    failSwapOn: false,
    // Images are imported, never pulled: nothing may garbage-collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%" },
    serializeImagePulls: false,
    maxPods: 110,
    // Processes per pod (Kubernetes has no per-pod field): a grading pod's fork bomb ends here
    // (docs/decisions/0015-grading.md); environments use a few hundred at most. At 4096 a fork bomb
    // kept 4,099 processes runnable and the 2-core machine 40 % in the kernel for 45 s (cold4's
    // vmstat), slowing every test beside it; 1024 ends it sooner and costs an environment nothing.
    podPidsLimit: 1024,
    registerNode: true,
    // Only pods that ask for the real node come here; everything else stays on kwok's nodes.
    registerWithTaints: [{ key: REAL_NODE_TAINT, value: "true", effect: "NoSchedule" }],
    nodeStatusUpdateFrequency: "4s",
    syncFrequency: "10s",
    fileCheckFrequency: "10s",
    rotateCertificates: false,
    serverTLSBootstrap: false,
    protectKernelDefaults: false,
    localStorageCapacityIsolation: true,
    shutdownGracePeriod: "0s",
  });
}

/** Pods that should run on the real node carry this toleration and REAL_NODE_LABEL as nodeSelector. */
export const REAL_NODE_TAINT = "userland.dev/real-node";
export const REAL_NODE_LABEL = { "userland.dev/node": "real" };

export function kubeProxyConfig(kubeconfig: string, nodeName: string): string {
  return stringify({
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    mode: "nftables",
    clientConnection: { kubeconfig },
    hostnameOverride: nodeName,
    bindAddress: NODE_IP,
    clusterCIDR: POD_CIDR,
    detectLocalMode: "ClusterCIDR",
    healthzBindAddress: "127.0.0.1:10256",
    metricsBindAddress: "127.0.0.1:10249",
    nodePortAddresses: [`${NODE_IP}/32`],
    // nf_conntrack_max is shared with the whole machine: leave it alone (0 = do not set).
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: "0s",
      tcpCloseWaitTimeout: "0s",
    },
  });
}
