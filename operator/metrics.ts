/** Prometheus metrics of the operator (prom-client), on its own registry. */
import type { Counter, Gauge, Histogram } from "prom-client";
import { declareMetrics, type Registered } from "../lib/metrics.ts";
import { UserlandPhases, type Userland } from "../api/v1alpha1/index.ts";
import type { Spawns } from "./spawns.ts";
import type { QueueMetrics } from "./workqueue.ts";

/** What the leader's gauges are read from at each scrape. */
export interface LeaderState {
  userlands(): readonly Userland[];
  spawns: Spawns;
}

/** The operator's metrics; the leader's gauges read their state, set by `readFrom`, at each scrape. */
export interface OperatorMetrics extends Registered {
  reconciles: Counter<"kind" | "result">;
  reconcileDuration: Histogram<"kind">;
  queueDepth: Gauge;
  queueAdds: Counter;
  queueRetries: Counter;
  queueLatency: Histogram;
  apiRequests: Counter<"verb" | "code">;
  leader: Gauge;
  userlandPhases: Gauge<"phase" | "template">;
  spawnDuration: Histogram<"template">;
  spawnOldest: Gauge;
  culled: Counter;
  /** Where the leader's gauges read from: the leading controller, or nothing (a standby replica). */
  readFrom(state: LeaderState | undefined): void;
  queueMetrics(): QueueMetrics;
}

export const createMetrics = declareMetrics("userland_operator_", (m): Omit<OperatorMetrics, "registry"> => {
  /** The leader's cached Userlands and spawns, read at each scrape; none on a standby replica. */
  let leaderState: LeaderState | undefined;
  const metrics: Omit<OperatorMetrics, "registry"> = {
    reconciles: m.counter(
      "userland_operator_reconcile_total",
      "Reconciles by object kind and result (success, error).",
      ["kind", "result"],
    ),
    reconcileDuration: m.histogram(
      "userland_operator_reconcile_duration_seconds",
      "Time spent in one reconcile.",
      [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      ["kind"],
    ),
    queueDepth: m.gauge("userland_operator_workqueue_depth", "Keys waiting in the work queue."),
    queueAdds: m.counter("userland_operator_workqueue_adds_total", "Keys added to the work queue."),
    queueRetries: m.counter(
      "userland_operator_workqueue_retries_total",
      "Keys re-queued with back-off after a failed reconcile.",
    ),
    queueLatency: m.histogram(
      "userland_operator_workqueue_queue_duration_seconds",
      "How long a key waited in the queue before a worker took it.",
      [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    ),
    apiRequests: m.counter(
      "userland_operator_api_requests_total",
      "Requests to the Kubernetes API by verb and HTTP status (0: no response).",
      ["verb", "code"],
    ),
    leader: m.gauge("userland_operator_leader", "1 while this replica holds the leader Lease."),
    userlandPhases: m.gauge(
      "userland_operator_userlands",
      "Userlands by status.phase and Template, as last reported (Pending: no status yet); read from the leader's cache, none on a standby.",
      ["phase", "template"],
      () => countPhases(metrics.userlandPhases, leaderState),
    ),
    spawnDuration: m.histogram(
      "userland_operator_spawn_duration_seconds",
      "From a Userland's creation, enabling or return to Starting until it is Ready, by Template.",
      // From a pod that starts at once on a warm node to the Deployment's 10-minute progress deadline.
      [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600],
      ["template"],
    ),
    spawnOldest: m.gauge(
      "userland_operator_spawn_oldest_seconds",
      "How long the longest-waiting Userland on its way to Ready has waited (0: none is); the leader's view.",
      [],
      () => metrics.spawnOldest.set(leaderState?.spawns.oldestSeconds(Date.now()) ?? 0),
    ),
    culled: m.counter("userland_operator_culled_total", "Userlands stopped for inactivity."),
    readFrom(state) {
      leaderState = state;
    },
    queueMetrics: () => ({
      depth: (n) => metrics.queueDepth.set(n),
      added: () => metrics.queueAdds.inc(),
      retried: () => metrics.queueRetries.inc(),
      waited: (s) => metrics.queueLatency.observe(s),
    }),
  };
  return metrics;
});

/** Every phase of every Template in use, zeros included, so sums and alerts see 0 rather than no series. */
function countPhases(gauge: Gauge<"phase" | "template">, state: LeaderState | undefined): void {
  gauge.reset();
  if (!state) return;
  const counts = new Map<string, Map<string, number>>();
  for (const u of state.userlands()) {
    const template = u.spec.templateName;
    let byPhase = counts.get(template);
    if (!byPhase) counts.set(template, (byPhase = new Map(UserlandPhases.map((phase) => [phase, 0]))));
    const phase = u.status?.phase ?? "Pending";
    byPhase.set(phase, (byPhase.get(phase) ?? 0) + 1);
  }
  for (const [template, byPhase] of counts)
    for (const [phase, n] of byPhase) gauge.set({ phase, template }, n);
}
