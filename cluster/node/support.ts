/**
 * Can this machine run the real node? One line saying why not, or undefined. The node needs root,
 * Linux namespaces, overlayfs, cgroups and the Debian packages scripts/bootstrap.sh installs.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const COMMANDS = [
  "unshare",
  "nsenter",
  "setpriv",
  "tini",
  "socat",
  "nft",
  "ip",
  "conntrack",
  "mmdebstrap",
  "umoci",
];
const FILES = ["/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/portmap"];

export function realNodeUnsupported(): string | undefined {
  if (process.platform !== "linux") return `the real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "the real node needs root (containers, network namespaces, cgroups)";
  const missing = COMMANDS.filter((c) => spawnSync("sh", ["-c", `command -v ${c}`]).status !== 0);
  missing.push(...FILES.filter((f) => !existsSync(f)));
  if (missing.length > 0) {
    return `missing ${missing.join(", ")} (scripts/bootstrap.sh installs them from Debian's packages)`;
  }
  if (!readFileSync("/proc/filesystems", "utf8").includes("overlay")) return "the kernel has no overlayfs";
  if (!existsSync("/sys/fs/cgroup/cgroup.controllers") && !existsSync("/sys/fs/cgroup/memory/cgroup.procs")) {
    return "no cgroup hierarchy is mounted at /sys/fs/cgroup";
  }
  if (!existsSync("/proc/sys/net/bridge/bridge-nf-call-iptables")) {
    return "the kernel's br_netfilter is not loaded (modprobe br_netfilter)";
  }
  const probe = spawnSync("unshare", ["--net", "--pid", "--mount", "--fork", "true"], { encoding: "utf8" });
  if (probe.status !== 0) return `this machine refuses new namespaces: ${probe.stderr.trim()}`;
  return undefined;
}
