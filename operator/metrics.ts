/** Prometheus metrics of the operator (prom-client), on its own registry. */
import type { Gauge } from "prom-client";
import { MetricRegistry } from "../lib/metrics.ts";
import { UserlandPhases, type Userland } from "../api/v1alpha1/index.ts";
import type { Spawns } from "./spawns.ts";
import type { QueueMetrics } from "./workqueue.ts";

/** What the leader's gauges are read from at each scrape. */
export interface LeaderState {
  userlands(): readonly Userland[];
  spawns: Spawns;
}

export class OperatorMetrics {
  private readonly metrics = new MetricRegistry("userland_operator_");
  readonly registry = this.metrics.registry;
  /** The leader's cached Userlands and spawns, read at each scrape; none on a standby replica. */
  private leaderState: LeaderState | undefined;
  readonly reconciles = this.metrics.counter(
    "userland_operator_reconcile_total",
    "Reconciles by object kind and result (success, error).",
    ["kind", "result"],
  );
  readonly reconcileDuration = this.metrics.histogram(
    "userland_operator_reconcile_duration_seconds",
    "Time spent in one reconcile.",
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ["kind"],
  );
  readonly queueDepth = this.metrics.gauge(
    "userland_operator_workqueue_depth",
    "Keys waiting in the work queue.",
  );
  readonly queueAdds = this.metrics.counter(
    "userland_operator_workqueue_adds_total",
    "Keys added to the work queue.",
  );
  readonly queueRetries = this.metrics.counter(
    "userland_operator_workqueue_retries_total",
    "Keys re-queued with back-off after a failed reconcile.",
  );
  readonly queueLatency = this.metrics.histogram(
    "userland_operator_workqueue_queue_duration_seconds",
    "How long a key waited in the queue before a worker took it.",
    [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
  );
  readonly apiRequests = this.metrics.counter(
    "userland_operator_api_requests_total",
    "Requests to the Kubernetes API by verb and HTTP status (0: no response).",
    ["verb", "code"],
  );
  readonly leader = this.metrics.gauge(
    "userland_operator_leader",
    "1 while this replica holds the leader Lease.",
  );
  readonly userlandPhases = this.metrics.gauge(
    "userland_operator_userlands",
    "Userlands by status.phase and Template, as last reported (Pending: no status yet); read from the leader's cache, none on a standby.",
    ["phase", "template"],
    () => this.countPhases(),
  );
  readonly spawnDuration = this.metrics.histogram(
    "userland_operator_spawn_duration_seconds",
    "From a Userland's creation, enabling or return to Starting until it is Ready, by Template.",
    // From a pod that starts at once on a warm node to the Deployment's 10-minute progress deadline.
    [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600],
    ["template"],
  );
  readonly spawnOldest: Gauge = this.metrics.gauge(
    "userland_operator_spawn_oldest_seconds",
    "How long the longest-waiting Userland on its way to Ready has waited (0: none is); the leader's view.",
    [],
    () => this.spawnOldest.set(this.leaderState?.spawns.oldestSeconds(Date.now()) ?? 0),
  );
  readonly culled = this.metrics.counter(
    "userland_operator_culled_total",
    "Userlands stopped for inactivity.",
  );

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
