/**
 * Kubernetes Events for what the operator and the user-manager do, so `kubectl describe userland x`
 * tells an admin (and a visit's student) what happened. Events are written only for actions and
 * state changes, never on a quiet resync. Shared here, not in operator/, so that no service imports
 * the operator.
 */
import { randomBytes } from "node:crypto";
import { API_VERSION, type Template, type Userland } from "../api/v1alpha1/index.ts";
import { paths } from "../api/kubePaths.ts";
import type { KubeRest } from "./kubeRest.ts";
import type { Logger } from "./logger.ts";

export interface EventTarget {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** Events name the object's kind and version explicitly, whatever the cached copy carries. */
export const userlandRef = (userland: Userland): EventTarget => ({
  apiVersion: API_VERSION,
  kind: "Userland",
  metadata: userland.metadata,
});

export const templateRef = (template: Template): EventTarget => ({
  apiVersion: API_VERSION,
  kind: "Template",
  metadata: template.metadata,
});

/**
 * Events are written in the background, a few at a time, like client-go's event broadcaster (one
 * writer, at most 1,000 waiting): when a class starts, a thousand Events sent at once would take
 * connections and API server time from the creates that students wait for.
 */
const EVENT_WRITERS = 2;
const MAX_QUEUED_EVENTS = 1000;

export class EventRecorder {
  private readonly rest: KubeRest;
  private readonly component: string;
  private readonly log: Logger;
  private readonly queued: { namespace: string; event: unknown; reason: string }[] = [];
  private writing = 0;
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
    if (this.queued.length >= MAX_QUEUED_EVENTS) {
      this.log.warn({ reason }, "too many events waiting; this one is dropped");
      return;
    }
    this.queued.push({ namespace, event, reason });
    if (this.writing < EVENT_WRITERS) void this.write();
  }

  private async write(): Promise<void> {
    this.writing++;
    for (let next = this.queued.shift(); next; next = this.queued.shift()) {
      await this.rest
        .create(paths.namespaced("", "v1", "events", next.namespace), next.event)
        .catch((error: unknown) => {
          this.log.warn({ err: (error as Error).message, reason: next?.reason }, "could not record event");
        });
    }
    this.writing--;
  }
}
