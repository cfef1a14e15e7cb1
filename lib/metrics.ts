/**
 * A component's Prometheus metrics (prom-client) on a registry of its own: several components in
 * one process (tests, benchmarks) never collide, and /metrics shows exactly that component. Each
 * metric is declared as its full name, its help and its labels; the full name stays spelled out so
 * that a search for it finds the dashboards, alerts and docs that use it.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** What every component's metrics carry: the registry its /metrics serves. */
export interface Registered {
  registry: Registry;
}

/**
 * A component's `createMetrics`: each call declares the metrics on a new registry, with the process
 * metrics (CPU, memory, event loop) under `prefix` when `defaultMetrics` is set (the running
 * component; tests leave them out).
 */
export function declareMetrics<T>(prefix: string, declare: (m: MetricRegistry) => T) {
  return (options: { defaultMetrics?: boolean } = {}): T & Registered => {
    const m = new MetricRegistry(options.defaultMetrics ? prefix : undefined);
    return { ...declare(m), registry: m.registry };
  };
}

export class MetricRegistry {
  readonly registry = new Registry();

  /** `defaultPrefix`: with it, the process metrics (CPU, memory, event loop) under that prefix. */
  constructor(defaultPrefix?: string) {
    if (defaultPrefix) collectDefaultMetrics({ register: this.registry, prefix: defaultPrefix });
  }

  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** `collect` runs at each scrape, to set the gauge from state read then. */
  gauge<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: () => void,
  ): Gauge<L> {
    return new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { collect } : {}),
    });
  }

  histogram<L extends string = never>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ): Histogram<L> {
    return new Histogram<L>({ name, help, labelNames, buckets, registers: [this.registry] });
  }
}
