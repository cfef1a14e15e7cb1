/** What every sync handler works with: caches (read), the API (write), events, metrics, logs. */
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import type { Template, Userland } from "../api/v1alpha1/index.ts";
import type { Informer } from "../lib/informer.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import type { EventRecorder } from "./events.ts";
import type { OperatorMetrics } from "./metrics.ts";

export interface Caches {
  templates: Informer<Template>;
  userlands: Informer<Userland>;
  deployments: Informer<V1Deployment>;
  services: Informer<V1Service>;
  pvcs: Informer<V1PersistentVolumeClaim>;
}

export interface OperatorContext {
  namespace: string;
  rest: KubeRest;
  caches: Caches;
  events: EventRecorder;
  metrics: OperatorMetrics;
  log: Logger;
  /** Names of the Userlands that use a Template. */
  userlandsOfTemplate(namespace: string, template: string): string[];
  /** Cached Deployments or Services that carry a Userland's name annotation. */
  childrenOf<K extends "Deployment" | "Service">(
    kind: K,
    namespace: string,
    userland: string,
  ): (K extends "Deployment" ? V1Deployment : V1Service)[];
  now(): Date;
}
