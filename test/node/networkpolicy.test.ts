/**
 * The chart's NetworkPolicies, enforced for real by kube-network-policies on the real node. A
 * hostile process in one student's environment tries every neighbour: before the policies exist
 * each connection succeeds (so the probes can tell), after they exist each is refused, while the
 * proxy still reaches the environment and the environment still resolves names.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import {
  KUBERNETES_SERVICE_IP,
  METADATA_IP,
  NODE_API_SERVER_PORT,
  NODE_IP,
  POD_CIDR,
  SERVICE_CIDR,
} from "../../cluster/addresses.ts";
import { k8s } from "../../lib/kube.ts";
import { MANAGED_BY, LABELS } from "../../api/naming.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { execInContainer, onRealNode, realNode, waitForPodReady } from "../support/realNode.ts";
import { kubectl, ok, parseManifests, renderChart } from "../chart/support.ts";

const RELEASE = "ul";

/** A pod that answers HTTP on each of `ports` (busybox httpd), named as the chart names them. */
function listener(name: string, image: string, labels: Record<string, string>, ports: number[]): V1Pod {
  const portNames: Record<number, string> = { 8080: "http", 9090: "admin" };
  const servers = ports.map((p) => `busybox httpd -p ${p} -h /tmp/www`).join(" && ");
  return {
    metadata: { name, labels },
    spec: {
      ...onRealNode,
      containers: [
        {
          name: "main",
          image,
          imagePullPolicy: "Never",
          command: [
            "sh",
            "-c",
            `mkdir -p /tmp/www && echo ${name} > /tmp/www/index.html && ${servers} && exec sleep infinity`,
          ],
          ports: ports.map((containerPort) => ({
            containerPort,
            name: portNames[containerPort] ?? `p${containerPort}`,
          })),
          readinessProbe: { tcpSocket: { port: ports[0] ?? 8080 }, periodSeconds: 1 },
        },
      ],
    },
  };
}

const component = (name: string) => ({
  "app.kubernetes.io/name": "userland",
  "app.kubernetes.io/instance": RELEASE,
  "app.kubernetes.io/component": name,
});
const environment = (user: string) => ({ [LABELS.managedBy]: MANAGED_BY, app: `env-${user}` });

/** Does a TCP connection from inside `from` to host:port succeed within 3 s? */
async function connects(from: V1Pod, host: string, port: number): Promise<boolean> {
  const r = await execInContainer(from, ["nc", "-z", "-w", "3", host, String(port)]);
  return r.code === 0;
}

test("the chart's NetworkPolicies keep a student's environment away from everything but the proxy, for real", async (t) => {
  const node = await realNode();
  const image = node.images.tools ?? "";
  const ns = await testNamespace(t, "node-np");
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);

  const pods: V1Pod[] = [
    listener("student-a", image, environment("a"), [8080]),
    listener("student-b", image, environment("b"), [8080]),
    listener("proxy", image, component("proxy"), [8080, 9090]),
    listener("auth", image, component("auth"), [8080, 9090]),
    listener("user-manager", image, component("user-manager"), [8080, 9090]),
    listener("operator", image, component("operator"), [8080]),
  ];
  for (const body of pods) await core.createNamespacedPod({ namespace: ns, body });
  const serviceB = await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: "student-b" },
      spec: { selector: environment("b"), ports: [{ port: 80, targetPort: 8080 }] },
    },
  });
  const ready = Object.fromEntries(
    await Promise.all(
      pods.map(async (p) => [p.metadata?.name, await waitForPodReady(ns, p.metadata?.name ?? "")] as const),
    ),
  ) as Record<string, V1Pod>;
  const ip = (name: string) => ready[name]?.status?.podIP ?? "";
  const studentA = ready["student-a"];
  const proxy = ready.proxy;
  assert.ok(studentA && proxy);

  const forbidden: [string, string, number][] = [
    ["another student's environment", ip("student-b"), 8080],
    ["another student's Service", serviceB.spec?.clusterIP ?? "", 80],
    ["the proxy's admin port", ip("proxy"), 9090],
    ["the auth service", ip("auth"), 8080],
    ["the user-manager", ip("user-manager"), 8080],
    ["the operator's metrics", ip("operator"), 8080],
    ["the API server (kubernetes Service)", KUBERNETES_SERVICE_IP, 443],
    ["the API server (its address)", NODE_IP, NODE_API_SERVER_PORT],
    ["the cloud metadata endpoint", METADATA_IP, 80],
  ];

  // Without policies every target answers (once kube-proxy has the new Service): a refusal later
  // is the policies' doing.
  let unreachable: string[] = [];
  await eventually(
    "every target to answer before the policies are applied",
    async () => {
      const before = await Promise.all(forbidden.map(([, host, port]) => connects(studentA, host, port)));
      unreachable = forbidden.filter((_, i) => !before[i]).map(([what]) => what);
      return unreachable.length === 0;
    },
    30_000,
    500,
  ).catch(() => assert.deepEqual(unreachable, [], "reachable before the policies are applied"));

  const apply = async (networkPolicy: Record<string, unknown>) => {
    const rendered = parseManifests(
      await renderChart(RELEASE, ns, { networkPolicy: { enabled: true, ...networkPolicy } }),
    ).filter((o) => o.kind === "NetworkPolicy");
    assert.equal(rendered.length, 3, "the chart renders the environments' and the platform's policies");
    const list = { apiVersion: "v1", kind: "List", items: rendered };
    ok(await kubectl(["apply", "--namespace", ns, "-f", "-"], JSON.stringify(list)), "kubectl apply");
  };

  // First with the chart's own ranges, which are not this cluster's (issue 41 item 3: an admin who
  // left them): the platform's admin ports and the operator are kept away by selectors alone.
  const platformPorts: [string, string, number][] = [
    ["the proxy's admin port", ip("proxy"), 9090],
    ["the auth service's admin port", ip("auth"), 9090],
    ["the user-manager's admin port", ip("user-manager"), 9090],
    ["the operator's metrics", ip("operator"), 8080],
    ["another student's environment", ip("student-b"), 8080],
  ];
  await apply({});
  await eventually(
    "the policies with the chart's ranges to be enforced",
    async () => !(await connects(studentA, ip("student-b"), 8080)),
    30_000,
    500,
  );
  const wrongRanges = await Promise.all(
    platformPorts.map(([, host, port]) => connects(studentA, host, port)),
  );
  assert.deepEqual(
    platformPorts.filter((_, i) => wrongRanges[i]).map(([what]) => what),
    [],
    "with ranges that miss this cluster's, a student's environment reaches none of these",
  );

  // Then as an admin renders them with this cluster's ranges.
  await apply({ podCIDRs: [POD_CIDR], serviceCIDRs: [SERVICE_CIDR], extraDeniedCIDRs: [`${NODE_IP}/32`] });

  await eventually(
    "the policies to be enforced",
    async () => !(await connects(studentA, ip("student-b"), 8080)),
    30_000,
    500,
  );
  const after = await Promise.all(forbidden.map(([, host, port]) => connects(studentA, host, port)));
  assert.deepEqual(
    forbidden.filter((_, i) => after[i]).map(([what]) => what),
    [],
    "a student's environment reaches none of these",
  );

  // What must keep working: the proxy reaches the environment, the environment resolves names.
  assert.ok(await connects(proxy, ip("student-a"), 8080), "the proxy reaches the student's environment");
  const dns = await execInContainer(studentA, ["getent", "hosts", `student-b.${ns}.svc.cluster.local`]);
  assert.equal(dns.code, 0, `cluster DNS still answers: ${dns.stderr}`);
  assert.match(dns.stdout, new RegExp(serviceB.spec?.clusterIP?.replaceAll(".", "\\.") ?? "^$"));
});
