/**
 * A real Prometheus (built from its Go module on demand, cluster/onDemandTools.ts) scraping the
 * real node, as the prometheus-operator would configure it from the chart's ServiceMonitors and
 * PrometheusRule. The operator itself is not run: the harness translates each ServiceMonitor the
 * way it does (its selector picks Services in its namespaces, each endpoint's named port picks
 * the Services' EndpointSlices' ready addresses) into a static scrape job with the operator's
 * target labels, and the PrometheusRule's groups into a rule file.
 *
 * Prometheus runs inside the node's network namespace, so the scrapes start there (pods are never
 * dialled from this machine's namespace); the test reaches its HTTP API on 127.0.0.1 through a
 * relay the caller owns.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { k8s } from "../../lib/kube.ts";
import { NodeNamespace } from "../../cluster/node/namespace.ts";
import type { Relays } from "../../cluster/node/relay.ts";
import { onDemandBinDir } from "../../cluster/onDemandTools.ts";
import { ProcessGroup, waitFor } from "../../cluster/processes.ts";
import { testCluster } from "./cluster.ts";
import { realNode } from "./realNode.ts";

interface ServiceMonitor {
  metadata: { name: string; namespace: string };
  spec: {
    selector: { matchLabels?: Record<string, string> };
    namespaceSelector?: { matchNames?: string[] };
    endpoints: { port: string; path?: string; interval?: string; scrapeTimeout?: string }[];
  };
}

interface PrometheusRule {
  metadata: { name: string; namespace: string };
  spec: { groups: unknown[] };
}

interface ScrapeConfig {
  job_name: string;
  metrics_path: string;
  scrape_interval?: string;
  scrape_timeout?: string;
  static_configs: { targets: string[]; labels: Record<string, string> }[];
}

/** Prometheus's port inside the node's namespace (its loopback: nothing else there listens on it). */
const PORT = 19090;

const monitoring = { group: "monitoring.coreos.com", version: "v1" };

/** The scrape jobs the prometheus-operator would make of the ServiceMonitors in `namespace`. */
export async function scrapeConfigsFromServiceMonitors(namespace: string): Promise<ScrapeConfig[]> {
  const { kc } = await testCluster();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
  const monitors = (
    (await custom.listNamespacedCustomObject({ ...monitoring, namespace, plural: "servicemonitors" })) as {
      items: ServiceMonitor[];
    }
  ).items;
  const jobs: ScrapeConfig[] = [];
  for (const monitor of monitors) {
    const selector = Object.entries(monitor.spec.selector.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    for (const ns of monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace]) {
      const services = (await core.listNamespacedService({ namespace: ns, labelSelector: selector })).items;
      for (const [i, endpoint] of monitor.spec.endpoints.entries()) {
        const job: ScrapeConfig = {
          job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${i}`,
          metrics_path: endpoint.path ?? "/metrics",
          ...(endpoint.interval ? { scrape_interval: endpoint.interval } : {}),
          ...(endpoint.scrapeTimeout ? { scrape_timeout: endpoint.scrapeTimeout } : {}),
          static_configs: [],
        };
        for (const service of services) {
          const name = service.metadata?.name ?? "";
          if (!service.spec?.ports?.some((p) => p.name === endpoint.port)) continue;
          const slices = (
            await discovery.listNamespacedEndpointSlice({
              namespace: ns,
              labelSelector: `kubernetes.io/service-name=${name}`,
            })
          ).items;
          for (const slice of slices) {
            const port = slice.ports?.find((p) => p.name === endpoint.port)?.port;
            if (port === undefined) continue;
            for (const address of slice.endpoints ?? []) {
              if (address.conditions?.ready === false) continue;
              for (const ip of address.addresses) {
                job.static_configs.push({
                  targets: [`${ip}:${port}`],
                  // The operator's target labels: job is the Service's name.
                  labels: {
                    job: name,
                    namespace: ns,
                    service: name,
                    endpoint: endpoint.port,
                    ...(address.targetRef?.kind === "Pod" ? { pod: address.targetRef.name ?? "" } : {}),
                  },
                });
              }
            }
          }
        }
        jobs.push(job);
      }
    }
  }
  return jobs;
}

/** The rule groups of the PrometheusRules in `namespace`, one rule file's content each. */
export async function ruleFilesFromPrometheusRules(namespace: string): Promise<{ groups: unknown[] }[]> {
  const { kc } = await testCluster();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const rules = (
    (await custom.listNamespacedCustomObject({ ...monitoring, namespace, plural: "prometheusrules" })) as {
      items: PrometheusRule[];
    }
  ).items;
  return rules.map((r) => ({ groups: r.spec.groups }));
}

export interface NodePrometheus {
  /** Its HTTP API on this machine's loopback, e.g. http://127.0.0.1:41234. */
  url: string;
  /** The scrape jobs translated from the ServiceMonitors. */
  scrapeConfigs: ScrapeConfig[];
  /** GET /api/v1/<path>; rejects unless Prometheus answers status "success". */
  api<T>(path: string, params?: Record<string, string>): Promise<T>;
  stop(): Promise<void>;
}

/**
 * Starts Prometheus inside the real node's namespace with the scrape jobs and rule files of
 * `namespace`'s ServiceMonitors and PrometheusRules, rules evaluated every `evaluationInterval`;
 * its API is exposed through `relays`.
 */
export async function startNodePrometheus(
  namespace: string,
  relays: Relays,
  evaluationInterval = "5s",
): Promise<NodePrometheus> {
  const node = await realNode();
  const dir = mkdtempSync(join(tmpdir(), "userland-prometheus-"));
  const config = join(dir, "prometheus.yaml");
  const scrapeConfigs = await scrapeConfigsFromServiceMonitors(namespace);
  const ruleFiles = (await ruleFilesFromPrometheusRules(namespace)).map((content, i) => {
    const file = join(dir, `rules-${i}.yaml`);
    writeFileSync(file, stringify(content));
    return file;
  });
  writeFileSync(
    config,
    stringify({
      global: { evaluation_interval: evaluationInterval },
      rule_files: ruleFiles,
      scrape_configs: scrapeConfigs,
    }),
  );
  mkdirSync(join(dir, "data"));
  const ns = NodeNamespace.attach(new ProcessGroup(join(dir, "logs"), () => undefined), node.namespacePid);
  await ns.startDaemon("prometheus", join(await onDemandBinDir(), "prometheus"), [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${PORT}`,
  ]);
  const port = await relays.expose(`127.0.0.1:${PORT}`);
  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(path: string, params: Record<string, string> = {}): Promise<T> => {
    const response = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params).toString()}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success")
      throw new Error(`Prometheus ${path} ${JSON.stringify(params)}: ${body.error}`);
    return body.data;
  };
  const log = join(dir, "logs", "prometheus.log");
  await waitFor(
    "Prometheus ready (in the node namespace)",
    async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200,
    60_000,
    { alive: () => ns.isRunning("prometheus"), logs: log, intervalMs: 250 },
  );
  return {
    url,
    scrapeConfigs,
    api,
    async stop() {
      await ns.stopDaemon("prometheus");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
