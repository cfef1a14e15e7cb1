/** Prometheus metrics of the operator (prom-client), on its own registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { UserlandPhases, type Userland } from "../api/v1alpha1/index.ts";
import type { Spawns } from "./spawns.ts";
import type { QueueMetrics } from "./workqueue.ts";

/** What the leader's gauges are read from at each scrape. */
export interface LeaderState {
  userlands(): readonly Userland[];
  spawns: Spawns;
}

export class OperatorMetrics {
  readonly registry = new Registry();
  /** The leader's cached Userlands and spawns, read at each scrape; none on a standby replica. */
  private leaderState: LeaderState | undefined;
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
    help: "Userlands by status.phase and Template, as last reported (Pending: no status yet); read from the leader's cache, none on a standby.",
    labelNames: ["phase", "template"] as const,
    registers: [this.registry],
    collect: () => this.countPhases(),
  });
  readonly spawnDuration = new Histogram({
    name: "userland_operator_spawn_duration_seconds",
    help: "From a Userland's creation, enabling or return to Starting until it is Ready, by Template.",
    labelNames: ["template"] as const,
    // From a pod that starts at once on a warm node to the Deployment's 10-minute progress deadline.
    buckets: [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600],
    registers: [this.registry],
  });
  readonly spawnOldest: Gauge = new Gauge({
    name: "userland_operator_spawn_oldest_seconds",
    help: "How long the longest-waiting Userland on its way to Ready has waited (0: none is); the leader's view.",
    registers: [this.registry],
    collect: () => this.spawnOldest.set(this.leaderState?.spawns.oldestSeconds(Date.now()) ?? 0),
  });
  readonly culled = new Counter({
    name: "userland_operator_culled_total",
    help: "Userlands stopped for inactivity.",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "userland_operator_" });
  }

  /** Where the leader's gauges read from: the leading controller, or nothing. */
  readFrom(state: LeaderState | undefined): void {
    this.leaderState = state;
  }

  private countPhases(): void {
    this.userlandPhases.reset();
    if (!this.leaderState) return;
    // Every phase of every Template in use is reported, zeros included, so sums and alerts see 0
    // rather than no series.
    const counts = new Map<string, Map<string, number>>();
    for (const u of this.leaderState.userlands()) {
      const template = u.spec.templateName;
      let byPhase = counts.get(template);
      if (!byPhase) counts.set(template, (byPhase = new Map(UserlandPhases.map((phase) => [phase, 0]))));
      const phase = u.status?.phase ?? "Pending";
      byPhase.set(phase, (byPhase.get(phase) ?? 0) + 1);
    }
    for (const [template, byPhase] of counts)
      for (const [phase, n] of byPhase) this.userlandPhases.set({ phase, template }, n);
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
