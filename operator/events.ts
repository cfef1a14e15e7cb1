/**
 * Kubernetes Events for what the operator does, so `kubectl describe userland x` tells an admin
 * what happened. Events are written only for actions and state changes, never on a quiet resync.
 */
import { randomBytes } from "node:crypto";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";

export interface EventTarget {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export class EventRecorder {
  private readonly rest: KubeRest;
  private readonly component: string;
  private readonly log: Logger;
  constructor(rest: KubeRest, component: string, log: Logger) {
    this.rest = rest;
    this.component = component;
    this.log = log;
  }

  normal(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Normal", reason, message);
  }

  warning(target: EventTarget, reason: string, message: string): void {
    this.record(target, "Warning", reason, message);
  }

  /** Fire and forget: a lost Event must never fail or slow a reconcile. */
  private record(target: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    const namespace = target.metadata.namespace ?? "default";
    const now = new Date().toISOString();
    const event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${target.metadata.name}.${randomBytes(8).toString("hex")}`, namespace },
      involvedObject: {
        apiVersion: target.apiVersion,
        kind: target.kind,
        name: target.metadata.name,
        namespace,
        uid: target.metadata.uid,
        resourceVersion: target.metadata.resourceVersion,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      source: { component: this.component },
      reportingComponent: this.component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    this.log.info({ kind: target.kind, name: target.metadata.name, namespace, reason, type }, message);
    this.rest
      .create(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, event)
      .catch((error: unknown) => {
        this.log.warn({ err: (error as Error).message, reason }, "could not record event");
      });
  }
}
