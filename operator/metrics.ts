/** Prometheus metrics of the operator (prom-client), on its own registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { UserlandPhases, type Userland } from "../api/v1alpha1/index.ts";
import type { QueueMetrics } from "./workqueue.ts";

export class OperatorMetrics {
  readonly registry = new Registry();
  /** The leader's cached Userlands, counted at each scrape; none on a standby replica. */
  private userlands: (() => readonly Userland[]) | undefined;
  readonly reconciles = new Counter({
    name: "userland_operator_reconcile_total",
    help: "Reconciles by object kind and result (success, error).",
    labelNames: ["kind", "result"] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: "userland_operator_reconcile_duration_seconds",
    help: "Time spent in one reconcile.",
    labelNames: ["kind"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "userland_operator_workqueue_depth",
    help: "Keys waiting in the work queue.",
    registers: [this.registry],
  });
  readonly queueAdds = new Counter({
    name: "userland_operator_workqueue_adds_total",
    help: "Keys added to the work queue.",
    registers: [this.registry],
  });
  readonly queueRetries = new Counter({
    name: "userland_operator_workqueue_retries_total",
    help: "Keys re-queued with back-off after a failed reconcile.",
    registers: [this.registry],
  });
  readonly queueLatency = new Histogram({
    name: "userland_operator_workqueue_queue_duration_seconds",
    help: "How long a key waited in the queue before a worker took it.",
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly apiRequests = new Counter({
    name: "userland_operator_api_requests_total",
    help: "Requests to the Kubernetes API by verb and HTTP status (0: no response).",
    labelNames: ["verb", "code"] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: "userland_operator_leader",
    help: "1 while this replica holds the leader Lease.",
    registers: [this.registry],
  });
  readonly userlandPhases = new Gauge({
    name: "userland_operator_userlands",
    help: "Userlands by status.phase, as last reconciled (read from the leader's cache; none on a standby).",
    labelNames: ["phase"] as const,
    registers: [this.registry],
    collect: () => this.countPhases(),
  });
  readonly culled = new Counter({
    name: "userland_operator_culled_total",
    help: "Userlands stopped for inactivity.",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "userland_operator_" });
  }

  /** Where the userlands gauge counts from: the leading controller's cache, or nothing. */
  countUserlandsIn(userlands: (() => readonly Userland[]) | undefined): void {
    this.userlands = userlands;
  }

  private countPhases(): void {
    this.userlandPhases.reset();
    if (!this.userlands) return;
    const counts = new Map<string, number>(UserlandPhases.map((phase) => [phase, 0]));
    for (const u of this.userlands()) {
      const phase = u.status?.phase;
      if (phase) counts.set(phase, (counts.get(phase) ?? 0) + 1);
    }
    for (const [phase, n] of counts) this.userlandPhases.set({ phase }, n);
  }

  queueMetrics(): QueueMetrics {
    return {
      depth: (n) => this.queueDepth.set(n),
      added: () => this.queueAdds.inc(),
      retried: () => this.queueRetries.inc(),
      waited: (s) => this.queueLatency.observe(s),
    };
  }
}
