import assert from "node:assert/strict";
import { test } from "node:test";
import { SERVICE_EXTERNAL_FIELDS, type Template, type Userland } from "../../api/v1alpha1/index.ts";
import { desiredChildren } from "../desired.ts";

const userland: Userland = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name: "alice", namespace: "class", uid: "u-1" },
  spec: { user: "alice", templateName: "code" },
};

const template = (service: Record<string, unknown>): Template => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name: "code", namespace: "class" },
  spec: {
    template: {
      spec: {
        containers: [{ name: "ide", image: "registry.invalid/ide:1", ports: [{ containerPort: 8080 }] }],
      },
    },
    service,
  },
});

// A Template stored before the CRD refused these fields (or written past it): the Service the
// operator creates must still be reachable only inside the cluster, through the proxy.
const exposed: [string, Record<string, unknown>][] = [
  [
    "a LoadBalancer with every external field",
    {
      type: "LoadBalancer",
      ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30080 }],
      externalIPs: ["203.0.113.7"],
      loadBalancerIP: "203.0.113.8",
      loadBalancerSourceRanges: ["0.0.0.0/0"],
      loadBalancerClass: "example.com/lb",
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 30999,
      allocateLoadBalancerNodePorts: true,
      sessionAffinity: "ClientIP",
    },
  ],
  ["a NodePort", { type: "NodePort", ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }] }],
  ["an ExternalName", { type: "ExternalName", externalName: "evil.example", ports: [{ port: 80 }] }],
  ["ClusterIP with externalIPs", { type: "ClusterIP", externalIPs: ["203.0.113.7"] }],
  ["externalIPs and no type", { externalIPs: ["203.0.113.7"] }],
];

for (const [what, service] of exposed) {
  test(`the desired Service is ClusterIP without external fields for a Template with ${what}`, () => {
    const spec = desiredChildren(userland, template(service)).service.spec ?? {};
    assert.equal(spec.type, "ClusterIP");
    for (const field of SERVICE_EXTERNAL_FIELDS) {
      assert.equal((spec as Record<string, unknown>)[field], undefined, field);
    }
    assert.ok(spec.ports && spec.ports.length > 0);
    for (const port of spec.ports) assert.equal(port.nodePort, undefined, "no node port");
    assert.deepEqual(Object.keys(spec.selector ?? {}).length, 1, "the operator's own selector");
  });
}

test("the desired Service keeps the Template's other Service fields and ports", () => {
  const spec =
    desiredChildren(
      userland,
      template({
        type: "LoadBalancer",
        sessionAffinity: "ClientIP",
        ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30080 }],
      }),
    ).service.spec ?? {};
  assert.equal(spec.sessionAffinity, "ClientIP");
  assert.deepEqual(spec.ports, [{ name: "http", port: 80, targetPort: 8080 }]);
});

test("a Template without a Service gets a ClusterIP Service from its container ports", () => {
  const t = template({});
  delete t.spec.service;
  const spec = desiredChildren(userland, t).service.spec ?? {};
  assert.equal(spec.type, "ClusterIP");
  assert.equal(spec.ports?.[0]?.port, 8080);
});
