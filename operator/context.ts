/**
 * What every sync handler works with: caches and their indexes (read), the API (write), events,
 * metrics, logs and the clock. Handlers get everything from here, nothing from the controller.
 */
import type { ArchiveClients } from "./coursework/copyPods.ts";
import type { GradingConfig } from "./grading/gradePods.ts";
import type { UserlandStatus } from "../api/v1alpha1/index.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { Caches } from "./caches.ts";
import type { ClaimEvents } from "./claimEvents.ts";
import type { EventRecorder } from "../lib/events.ts";
import type { OperatorMetrics } from "./metrics.ts";
import type { Spawns } from "./spawns.ts";
import type { Teachers } from "./teachers.ts";

export interface OperatorContext {
  rest: KubeRest;
  caches: Caches;
  events: EventRecorder;
  metrics: OperatorMetrics;
  /** When each Userland on its way to Ready began to start. */
  spawns: Spawns;
  /** Who teaches a Template: RBAC's cached answers (course folders read-write). */
  teachers: Teachers;
  /** Why a Pending claim waits: its Warning Events, looked up sparingly. */
  claimEvents: ClaimEvents;
  /**
   * By "namespace/name": the last status each Userland's sync computed to write. The next sync may
   * read an older cached status; with this one a cause gets its Warning once, and a step the
   * operator saw itself (Reachable) keeps the time it was first seen instead of taking a new one,
   * which would be one more write, after the state had converged.
   */
  computed: Map<string, UserlandStatus>;
  /**
   * Copy pods (operator/coursework/): the image they run (unset: no copies), a failed copy's first
   * wait before it runs again, the namespaces whose deny-all policy exists, and who may fetch from
   * archive pods.
   */
  coursework: {
    image: string;
    retryMs: number;
    /** The VolumeSnapshotClass a hand-in's volume is frozen with at its moment; "": none (coursework/handInSnapshots.ts). */
    snapshotClass: string;
    policies: Set<string>;
    archiveClients?: ArchiveClients;
    /** Grading pods (operator/grading/): images autograders may name, and their limits. */
    grading: GradingConfig;
  };
  log: Logger;
  now(): Date;
}
