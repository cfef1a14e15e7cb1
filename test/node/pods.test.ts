/**
 * The real node runs real containers: a process serves HTTP, kubelet's probes decide readiness, a
 * Service's DNS name resolves from a pod through CoreDNS and reaches its endpoint through kube-proxy.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { NODE_POD_CIDR } from "../../cluster/addresses.ts";
import { k8s } from "../../lib/kube.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { listEvents } from "../support/events.ts";
import { exposeFromNode, inNode, onRealNode, realNode, waitForPodReady } from "../support/realNode.ts";

/** A busybox web server answering "hello from <pod>" on 8080. */
function webPod(name: string, image: string, readinessPath = "/"): V1Pod {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      ...onRealNode,
      containers: [
        {
          name: "web",
          image,
          imagePullPolicy: "Never",
          command: [
            "sh",
            "-c",
            'mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec busybox httpd -f -p 8080 -h /tmp/www',
          ],
          ports: [{ containerPort: 8080, name: "http" }],
          readinessProbe: { httpGet: { path: readinessPath, port: 8080 }, periodSeconds: 1 },
        },
      ],
    },
  };
}

const inRange = (ip: string, cidr: string) => {
  const [base, bits] = cidr.split("/");
  const toInt = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
  const mask = 2 ** 32 - 2 ** (32 - Number(bits));
  return (toInt(ip) & mask) >>> 0 === (toInt(base ?? "") & mask) >>> 0;
};

test("a pod runs a real process on the real node and becomes Ready through its own readiness probe", async (t) => {
  const node = await realNode();
  const ns = await testNamespace(t, "node-pod");
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  const started = Date.now();
  await core.createNamespacedPod({ namespace: ns, body: webPod("web", node.images.tools ?? "") });
  await core.createNamespacedPod({
    namespace: ns,
    body: webPod("never-ready", node.images.tools ?? "", "/missing"),
  });

  const pod = await waitForPodReady(ns, "web");
  t.diagnostic(`create → Ready: ${Date.now() - started} ms`);
  assert.equal(pod.spec?.nodeName, node.name);
  assert.match(pod.status?.containerStatuses?.[0]?.containerID ?? "", /^containerd:\/\/[0-9a-f]{64}$/);
  const ip = pod.status?.podIP ?? "";
  assert.ok(inRange(ip, NODE_POD_CIDR), `pod IP ${ip} is in the node's pod range ${NODE_POD_CIDR}`);

  // The process really serves: asked from inside the node's namespace, it answers with its name;
  // from this machine it is reachable only through a relay on 127.0.0.1.
  const answer = await inNode("curl", ["-sS", "--max-time", "5", `http://${ip}:8080/`]);
  assert.equal(answer.stdout.trim(), "hello from web", answer.stderr);
  const port = await exposeFromNode(t, `${ip}:8080`);
  const relayed = await fetch(`http://127.0.0.1:${port}/`);
  assert.equal((await relayed.text()).trim(), "hello from web");

  // The same server with a probe on a missing path runs but never becomes Ready.
  const unready = await eventually(
    "never-ready to be running",
    async () => {
      const p = await core.readNamespacedPod({ namespace: ns, name: "never-ready" });
      return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    60_000,
  );
  // The marker: the kubelet has run the probe and recorded its failure.
  await eventually(
    "the kubelet to record a failed readiness probe",
    async () =>
      (await listEvents(ns, "never-ready")).some(
        (e) => e.reason === "Unhealthy" && /Readiness probe failed/.test(e.message ?? ""),
      ),
    60_000,
  );
  const after = await core.readNamespacedPod({ namespace: ns, name: "never-ready" });
  assert.equal(
    after.status?.containerStatuses?.[0]?.ready,
    false,
    "a failing readiness probe keeps the pod unready",
  );
  assert.ok(unready.status?.podIP);
});

test("a Service's DNS name resolves from a pod and reaches its endpoint through kube-proxy", async (t) => {
  const node = await realNode();
  const ns = await testNamespace(t, "node-svc");
  const core = (await testCluster()).kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedPod({ namespace: ns, body: webPod("web", node.images.tools ?? "") });
  const service = await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: "web" },
      spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    },
  });
  await waitForPodReady(ns, "web");
  const host = `web.${ns}.svc.cluster.local`;
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: "client" },
      spec: {
        ...onRealNode,
        restartPolicy: "Never",
        containers: [
          {
            name: "client",
            image: node.images.tools ?? "",
            imagePullPolicy: "Never",
            // The kubelet copies the termination message into the pod's status: the test reads it
            // without the API server dialling the node.
            command: [
              "sh",
              "-c",
              `{ getent hosts ${host} && busybox wget -qO- http://${host}/; } > /dev/termination-log 2>&1`,
            ],
          },
        ],
      },
    },
  });
  const done = await eventually(
    "the client pod to finish",
    async () => {
      const p = await core.readNamespacedPod({ namespace: ns, name: "client" });
      return ["Succeeded", "Failed"].includes(p.status?.phase ?? "") ? p : undefined;
    },
    90_000,
  );
  const message = done.status?.containerStatuses?.[0]?.state?.terminated?.message ?? "";
  assert.equal(done.status?.phase, "Succeeded", message);
  const [resolved] = message.trim().split(/\s+/);
  assert.equal(resolved, service.spec?.clusterIP, `${host} resolves to the Service's cluster IP`);
  assert.match(message, /hello from web/);
});
