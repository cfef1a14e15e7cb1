/**
 * The real node's cgroups: one root (kubelet's cgroupRoot) per node directory, in every mounted
 * hierarchy. The kernel removes the processes but not the directories when the node stops, and a
 * stopped kubelet leaves its `kubepods` tree behind, so the harness creates the root before the
 * kubelet starts and removes the whole tree, deepest first, after the node is gone.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const CGROUP_FS = "/sys/fs/cgroup";

/** The cgroup root of the node kept in `dir`, e.g. "/userland-node-1a2b3c4d". */
export function cgroupRootFor(dir: string): string {
  return `/userland-node-${createHash("sha256").update(dir).digest("hex").slice(0, 8)}`;
}

/** The directories that hold hierarchies: one per v1 controller (cpu, memory, ...), or the v2 root. */
function hierarchies(): string[] {
  if (existsSync(join(CGROUP_FS, "cgroup.controllers"))) return [CGROUP_FS];
  return readdirSync(CGROUP_FS)
    .map((name) => join(CGROUP_FS, name))
    .filter((path) => existsSync(join(path, "cgroup.procs")));
}

export function createCgroupRoot(root: string): void {
  for (const hierarchy of hierarchies()) mkdirSync(join(hierarchy, root), { recursive: true });
}

/** Processes still in the tree (0 once the node's PID namespace is gone). */
export function cgroupProcesses(root: string): number {
  let count = 0;
  for (const hierarchy of hierarchies()) {
    walk(join(hierarchy, root), (dir) => {
      count += readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).length;
    });
  }
  return count;
}

/**
 * Ends what an earlier node left in the tree: its freezer cgroups thawed (a container being made
 * when the node was stopped can stay frozen, its `runc init` unkillable until thawed), then every
 * process in it killed. Returns how many were killed. Only for a tree whose node is gone.
 */
export function killCgroupProcesses(root: string): number {
  let killed = 0;
  for (const hierarchy of hierarchies()) {
    walk(join(hierarchy, root), (dir) => {
      const state = join(dir, "freezer.state");
      if (existsSync(state) && readFileSync(state, "utf8").trim() !== "THAWED")
        writeFileSync(state, "THAWED");
    });
  }
  for (const hierarchy of hierarchies()) {
    walk(join(hierarchy, root), (dir) => {
      for (const pid of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
          killed++;
        } catch {
          // Gone meanwhile.
        }
      }
    });
  }
  return killed;
}

/** Removes the tree in every hierarchy; returns the directories that could not be removed. */
export function removeCgroupRoot(root: string): string[] {
  const left: string[] = [];
  for (const hierarchy of hierarchies()) {
    walk(join(hierarchy, root), (dir) => {
      try {
        rmdirSync(dir);
      } catch {
        left.push(dir);
      }
    });
  }
  return left;
}

/** Calls `visit` for `dir` and every cgroup below it, children before parents. */
function walk(dir: string, visit: (dir: string) => void): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path, visit);
  }
  visit(dir);
}

/**
 * Removes the tree once this process has died, however it died: a detached shell that outlives it
 * by the few seconds the kernel needs to end the node's processes, then exits. `ownerFile` holds
 * this process's PID; a node started again in the same directory overwrites it, and the shell
 * then leaves the cgroups to that node.
 */
export function removeCgroupRootAfterExit(root: string, ownerFile: string): void {
  writeFileSync(ownerFile, String(process.pid));
  const dirs = hierarchies().map((h) => join(h, root));
  const script = `
    while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
    for i in 1 2 3 4 5 6 7 8 9 10; do
      [ "$(cat ${JSON.stringify(ownerFile)} 2>/dev/null)" = "${process.pid}" ] || exit 0
      left=0
      for d in ${dirs.map((d) => JSON.stringify(d)).join(" ")}; do
        [ -d "$d" ] || continue
        find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
        [ -d "$d" ] && left=1
      done
      [ $left = 0 ] && exit 0
      sleep 1
    done`;
  spawn("sh", ["-c", script], { detached: true, stdio: "ignore" }).unref();
}
