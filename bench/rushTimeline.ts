/**
 * When each step of a Userland's start happened, as this process sees the API server's watch
 * events (performance.now(), so comparable with the students' clocks): the Userland created, its
 * pod created and Ready, the Userland Ready, and its demo environment published in the proxy's
 * upstream override file (the local platform's stand-in for a Service that answers).
 */
import { readFileSync } from "node:fs";
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS } from "../api/naming.ts";
import { userlandsPath, type Userland } from "../api/v1alpha1/index.ts";
import { Informer } from "../lib/informer.ts";
import { paths } from "../api/kubePaths.ts";
import type { k8s } from "../lib/kube.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import { createLogger } from "../lib/logger.ts";

export const STEPS = ["created", "podCreated", "podReady", "ready", "published"] as const;
export type Step = (typeof STEPS)[number];

export class Timeline {
  /** Userland name → step → when. */
  private readonly at = new Map<string, Partial<Record<Step, number>>>();
  /** "namespace/Service" → Userland name. */
  private readonly byService = new Map<string, string>();
  private readonly userlands: Informer<Userland>;
  private readonly pods: Informer<V1Pod>;
  private readonly poll: NodeJS.Timeout;

  constructor(kc: k8s.KubeConfig, rest: KubeRest, namespace: string, overridesFile: string) {
    const log = createLogger("rush-timeline", "warn");
    this.userlands = new Informer<Userland>(rest, { path: userlandsPath(namespace), log });
    this.pods = new Informer<V1Pod>(rest, {
      path: paths.namespaced("", "v1", "pods", namespace),
      labelSelector: LABELS.managedBy,
      log,
    });
    const onUserland = (u: Userland) => {
      const name = u.metadata.name ?? "";
      this.mark(name, "created");
      if (u.status?.service?.name) this.byService.set(`${namespace}/${u.status.service.name}`, name);
      if (u.status?.phase === "Ready") this.mark(name, "ready");
    };
    this.userlands.on("add", onUserland);
    this.userlands.on("update", onUserland);
    const onPod = (pod: V1Pod) => {
      // The label is the Userland's name fitted to 63 characters: the benchmark's names are shorter.
      const name = pod.metadata?.labels?.[LABELS.userland];
      if (!name) return;
      this.mark(name, "podCreated");
      if (pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
        this.mark(name, "podReady");
    };
    this.pods.on("add", onPod);
    this.pods.on("update", onPod);
    // The platform rewrites the file whole (rename), so reading it is always consistent.
    this.poll = setInterval(() => {
      let map: Record<string, string>;
      try {
        map = JSON.parse(readFileSync(overridesFile, "utf8")) as Record<string, string>;
      } catch {
        return;
      }
      for (const key of Object.keys(map)) {
        const name = this.byService.get(key);
        if (name) this.mark(name, "published");
      }
    }, 50);
  }

  async start(): Promise<void> {
    await Promise.all([this.userlands.start(), this.pods.start()]);
  }

  async stop(): Promise<void> {
    clearInterval(this.poll);
    await Promise.all([this.userlands.stop(), this.pods.stop()]);
  }

  stepsOf(userlandName: string): Partial<Record<Step, number>> {
    return this.at.get(userlandName) ?? {};
  }

  /** How many Userlands of these names are Ready and published. */
  readyAndPublished(names: readonly string[]): number {
    return names.filter((n) => {
      const steps = this.stepsOf(n);
      return steps.ready !== undefined && steps.published !== undefined;
    }).length;
  }

  /** Userlands and pods still in the caches (waiting for a clean-up to finish). */
  remaining(): { userlands: number; pods: number } {
    return { userlands: this.userlands.list().length, pods: this.pods.list().length };
  }

  private mark(name: string, step: Step): void {
    const steps = this.at.get(name) ?? {};
    steps[step] ??= performance.now();
    this.at.set(name, steps);
  }
}
