/**
 * What every sync handler works with: caches and their indexes (read), the API (write), events,
 * metrics, logs and the clock. Handlers get everything from here, nothing from the controller.
 */
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { Caches } from "./caches.ts";
import type { ClaimEvents } from "./claimEvents.ts";
import type { EventRecorder } from "./events.ts";
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
   * By "namespace/name": the stall reason ("" for none) of the last status each Userland's sync
   * computed, so a cause gets its Warning once even when the next sync reads an older cached status.
   */
  stalls: Map<string, string>;
  log: Logger;
  now(): Date;
}
