/**
 * The chart's ServiceMonitors and PrometheusRule are accepted by the real API server with the
 * prometheus-operator's CRDs (from its Go module, copied by cluster/build.sh), scrape the port that
 * serves each component's /metrics, and every alert links a section of the admin guide.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import {
  applyManifests,
  chartDir,
  helm,
  installChart,
  installToolCrds,
  kubectl,
  parseManifests,
  renderChart,
  type KubeObject,
} from "./support.ts";

const CRDS = ["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"];
const monitoringOn = {
  monitoring: {
    serviceMonitor: { enabled: true, labels: { release: "kube-prometheus-stack" } },
    prometheusRule: { enabled: true, runbookUrl: "https://git.example.org/userland/deploy/README.md" },
  },
};

/** The setting that puts each component's admin listener (probes and /metrics) on a port. */
const ADMIN_PORT_SETTING: Record<string, string> = {
  // The operator serves no API: its one port is its admin listener.
  operator: "OPERATOR_HTTP_PORT",
  proxy: "PROXY_ADMIN_PORT",
  auth: "AUTH_ADMIN_PORT",
  "user-manager": "USER_MANAGER_ADMIN_PORT",
};

interface ServicePort {
  name: string;
  port: number;
  targetPort: string | number;
}
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  annotations: Record<string, string>;
}

/** GitHub's anchors for the guide's headings: lower case, punctuation dropped, spaces to dashes. */
function guideAnchors(): Set<string> {
  const guide = readFileSync(join(repoRoot, "deploy", "README.md"), "utf8");
  const anchors = new Set<string>();
  let inCode = false;
  for (const line of guide.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    const heading = !inCode && /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading)
      anchors.add(
        heading
          .toLowerCase()
          .replace(/[^\p{L}\p{N}\s_-]/gu, "")
          .replace(/\s/g, "-"),
      );
  }
  return anchors;
}

const monitoringObjects = (objects: KubeObject[]) =>
  objects.filter((o) => o.apiVersion.startsWith("monitoring.coreos.com/"));

test("monitoring objects are off by default", async () => {
  assert.deepEqual(monitoringObjects(parseManifests(await renderChart("userland", "ide"))), []);
});

test("the ServiceMonitors and PrometheusRule are accepted by the API server with the prometheus-operator CRDs", async (t) => {
  await installToolCrds(CRDS);
  const ns = await testNamespace(t, "monitoring");
  const objects = parseManifests(await renderChart("userland", ns, monitoringOn));
  const monitoring = monitoringObjects(objects);
  assert.deepEqual(
    monitoring.map((o) => `${o.kind} ${o.metadata.name}`).sort(),
    [
      "PrometheusRule userland",
      ...["auth", "operator", "proxy", "user-manager"].map((c) => `ServiceMonitor userland-${c}`),
    ].sort(),
  );
  const report = await applyManifests(ns, monitoring);
  assert.equal(report.trim().split("\n").length, monitoring.length, report);

  // The CRD's schema is enforced (so the apply above was checked): a wrong interval is refused.
  const [first] = monitoring.filter((o) => o.kind === "ServiceMonitor");
  assert.ok(first);
  const spec = first.spec as { endpoints: Record<string, unknown>[] };
  const broken = {
    ...first,
    metadata: { ...first.metadata, name: "broken" },
    spec: { ...spec, endpoints: [{ ...spec.endpoints[0], interval: "soon" }] },
  };
  const refused = await kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], JSON.stringify(broken));
  assert.notEqual(refused.code, 0, "an invalid interval is refused");
  assert.match(refused.stderr, /interval/);
});

test("each ServiceMonitor selects Services of its component with the port that serves /metrics", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", monitoringOn));
  const services = objects.filter((o) => o.kind === "Service");
  for (const monitor of objects.filter((o) => o.kind === "ServiceMonitor")) {
    assert.equal(
      monitor.metadata.labels?.release,
      "kube-prometheus-stack",
      "the labels Prometheus selects by",
    );
    const spec = monitor.spec as {
      selector: { matchLabels: Record<string, string> };
      namespaceSelector: { matchNames: string[] };
      endpoints: { port: string; path: string }[];
    };
    assert.deepEqual(spec.namespaceSelector.matchNames, ["ide"]);
    const selected = services.filter((s) =>
      Object.entries(spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
    );
    const scraped = selected.filter((s) =>
      (s.spec as { ports: ServicePort[] }).ports.some((p) => p.name === spec.endpoints[0]?.port),
    );
    // Exactly one Service is scraped: the student-facing Services have no metrics port.
    assert.equal(scraped.length, 1, `${monitor.metadata.name} scrapes one Service`);
    assert.equal(spec.endpoints[0]?.path, "/metrics");
    const component = monitor.metadata.labels?.["app.kubernetes.io/component"];
    const deployment = objects.find(
      (o) => o.kind === "Deployment" && o.metadata.name === `userland-${component}`,
    );
    const servicePort = (scraped[0]?.spec as { ports: ServicePort[] }).ports.find(
      (p) => p.name === spec.endpoints[0]?.port,
    );
    const container = (
      deployment?.spec as {
        template: {
          spec: {
            containers: {
              ports: { name: string; containerPort: number }[];
              env: { name: string; value?: string }[];
            }[];
          };
        };
      }
    ).template.spec.containers[0];
    // The port the Service sends to is the one the component's admin listener (lib/adminServer.ts,
    // the only server with /metrics) is told to listen on.
    const target = container?.ports.find((p) => p.name === servicePort?.targetPort);
    const adminSetting = ADMIN_PORT_SETTING[component ?? ""];
    assert.ok(adminSetting, `${component} is a known component`);
    const adminPort = container?.env.find((e) => e.name === adminSetting)?.value;
    assert.ok(target && adminPort, `${component}: the container has the port and ${adminSetting}`);
    assert.equal(target.containerPort, Number(adminPort), `${component}'s metrics port is ${adminSetting}`);
  }
});

test("every alert has a duration, a severity and a runbook link to a section of the admin guide", async () => {
  const objects = parseManifests(await renderChart("userland", "ide", monitoringOn));
  const rule = objects.find((o) => o.kind === "PrometheusRule");
  assert.ok(rule);
  const rules = (
    rule.spec as { groups: { rules: (Rule & { labels: Record<string, string> })[] }[] }
  ).groups.flatMap((g) => g.rules);
  assert.deepEqual(
    rules.map((r) => r.alert),
    [
      "UserlandOperatorNotLeading",
      "UserlandReconcileErrors",
      "UserlandOperatorQueueBacklog",
      "UserlandsStuckStarting",
      "UserlandStartsSlow",
      "UserlandProxyErrors",
      "UserlandLoginFailures",
      "UserlandProvisioningFailures",
      "UserlandTokenReviewsRefused",
      "UserlandComponentDown",
    ],
  );
  // The chart README's table has one runbook line per alert, in the rule's order.
  const chartReadme = readFileSync(join(chartDir, "README.md"), "utf8");
  assert.deepEqual(
    [...chartReadme.matchAll(/^\| `(Userland\w+)` \|/gm)].map((m) => m[1]),
    rules.map((r) => r.alert),
    "charts/userland/README.md lists every alert",
  );
  const anchors = guideAnchors();
  for (const r of rules) {
    assert.match(r.for ?? "", /^\d+m$/, `${r.alert} waits before firing`);
    assert.match(r.labels.severity ?? "", /^(warning|critical)$/, r.alert);
    assert.ok(r.annotations.summary && r.annotations.description, `${r.alert} says what broke`);
    const url = r.annotations.runbook_url ?? "";
    const [base, anchor = ""] = url.split("#");
    assert.equal(base, "https://git.example.org/userland/deploy/README.md", `${r.alert} links the guide`);
    assert.ok(anchors.has(anchor), `${r.alert}: deploy/README.md has a section #${anchor}`);
  }
  assert.ok(
    rules.every((r) => r.expr.includes('namespace="ide"')),
    "alerts watch this release's namespace",
  );
});

test("the whole chart with the Gateway API, dashboards and monitoring on is accepted by the API server", async (t) => {
  await installToolCrds([
    ...CRDS,
    "gateway.networking.k8s.io_gatewayclasses.yaml",
    "gateway.networking.k8s.io_gateways.yaml",
    "gateway.networking.k8s.io_httproutes.yaml",
  ]);
  await installCrds();
  const ns = await testNamespace(t, "all-on");
  const lint = await helm(["lint", "--strict", chartDir, "--set", "monitoring.dashboards.enabled=true"]);
  assert.equal(lint.code, 0, lint.stdout + lint.stderr);
  const objects = await installChart(t, "userland", ns, {
    ...monitoringOn,
    monitoring: { ...monitoringOn.monitoring, dashboards: { enabled: true } },
    ingress: { enabled: false },
    gateway: { enabled: true, parentRefs: [{ name: "userland" }] },
  });
  const kinds = new Set(objects.map((o) => o.kind));
  for (const kind of ["HTTPRoute", "ServiceMonitor", "PrometheusRule", "ConfigMap", "Deployment"])
    assert.ok(kinds.has(kind), `${kind} rendered and applied`);
  assert.ok(!kinds.has("Ingress"));
});
