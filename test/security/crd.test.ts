/**
 * Malformed Template and Userland objects sent straight to the real API server (as cluster admin,
 * so only the CRDs' own schema and CEL rules stand in the way), with the real operator running
 * throughout. Each row states the refusal and its message; objects the schema cannot refuse (a
 * Userland name that is a valid subdomain but no valid Service name, a pod template only the pod
 * validation refuses, child-name collisions) become a Failed status with a reason. Afterwards the
 * operator is still running, still leading, and still reconciles a good Userland.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import type { V1Service } from "@kubernetes/client-node";
import type { Template, Userland } from "../../api/v1alpha1/index.ts";
import { KubeError } from "../../lib/kubeRest.ts";
import { eventually, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getDeployment,
  getUserland,
  patchTemplate,
  patchUserland,
  servicesPath,
  simpleTemplateSpec,
  templatesPath,
  userlandsPath,
  waitForPhase,
} from "../support/resources.ts";

interface Row {
  name: string;
  run: () => Promise<void>;
}

const userland = (name: string, spec: unknown, extra: Record<string, unknown> = {}) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name },
  spec,
  ...extra,
});
const template = (name: string, spec: unknown) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name },
  spec,
});
const ok = { user: "someone", templateName: "code" };
const container = { name: "ide", image: "registry.invalid/ide:1", ports: [{ containerPort: 8080 }] };
const pod = { spec: { containers: [container] } };
const volume = (name: string) => ({
  name,
  pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
});

test("malformed CRD objects are refused with clear messages; the operator keeps running", async (t) => {
  const ns = await testNamespace(t, "sec-crd");
  const operator = await startOperator(t, ns);
  const rest = await adminRest();
  await createTemplate(ns, "code", simpleTemplateSpec());

  const rows: Row[] = [];
  const row = (name: string, run: () => Promise<void>) => rows.push({ name, run });

  /** The create is refused with `code` and a message matching `pattern`; nothing is stored. */
  async function refused(path: string, body: unknown, code: number, pattern: RegExp, query = {}) {
    const name = (body as { metadata?: { name?: string } }).metadata?.name ?? "";
    await assert.rejects(rest.create(path, body, query), (error: Error) => {
      assert.ok(error instanceof KubeError, String(error));
      assert.equal(error.code, code, error.message.slice(0, 500));
      assert.match(error.message, pattern);
      return true;
    });
    if (name && name.length < 254 && /^[a-z0-9.-]+$/.test(name)) {
      await assert.rejects(
        rest.get(`${path}/${name}`),
        (e: Error) => e instanceof KubeError && e.code === 404,
      );
    }
  }

  // --- Userlands ------------------------------------------------------------------------------------
  const badUserlands: [string, unknown, number, RegExp][] = [
    ["an upper-case name", userland("Alice", ok), 422, /metadata\.name: Invalid value: "Alice"/],
    ["a name starting with '-'", userland("-a", ok), 422, /metadata\.name/],
    ["a 254-character name", userland("a".repeat(254), ok), 422, /metadata\.name/],
    ["no spec", userland("no-spec", undefined), 422, /spec: Required value/],
    ["no spec.user", userland("no-user", { templateName: "code" }), 422, /spec\.user: Required value/],
    ["no spec.templateName", userland("no-tpl", { user: "x" }), 422, /spec\.templateName: Required value/],
    [
      "spec.user as a number",
      userland("num-user", { user: 42, templateName: "code" }),
      422,
      /spec\.user: Invalid value/,
    ],
    [
      "spec.user as an object",
      userland("obj-user", { user: { name: "x" }, templateName: "code" }),
      422,
      /spec\.user/,
    ],
    [
      "spec.user with a line break",
      userland("nl-user", { user: "a\nX-User: b", templateName: "code" }),
      422,
      /spec\.user/,
    ],
    [
      "spec.user with a leading space",
      userland("sp-user", { user: " a", templateName: "code" }),
      422,
      /spec\.user/,
    ],
    [
      "spec.user of 257 characters",
      userland("long-user", { user: "x".repeat(257), templateName: "code" }),
      422,
      /spec\.user: Too long/,
    ],
    ["an empty spec.user", userland("empty-user", { user: "", templateName: "code" }), 422, /spec\.user/],
    [
      "a non-ASCII spec.user",
      userland("uni-user", { user: "\u0430lice", templateName: "code" }),
      422,
      /spec\.user/,
    ],
    [
      "spec.templateName in upper case",
      userland("up-tpl", { user: "x", templateName: "Code" }),
      422,
      /spec\.templateName/,
    ],
    [
      "spec.templateName of 25 characters",
      userland("long-tpl", { user: "x", templateName: "a".repeat(25) }),
      422,
      /spec\.templateName/,
    ],
    ["spec.enabled as a string", userland("str-enabled", { ...ok, enabled: "yes" }), 422, /spec\.enabled/],
    ["spec as a list", userland("list-spec", [ok]), 422, /spec/],
    [
      "an unknown field with fieldValidation=Strict",
      userland("strict", { ...ok, namespace: "kube-system" }),
      400,
      /unknown field "spec\.namespace"/,
    ],
  ];
  for (const [what, body, code, pattern] of badUserlands) {
    const strict = what.includes("Strict") ? { fieldValidation: "Strict" } : {};
    row(`Userland with ${what}: ${code}`, () => refused(userlandsPath(ns), body, code, pattern, strict));
  }
  row("Userland with an unknown field (default validation): accepted, the field is dropped", async () => {
    const created = await rest.create<Userland>(
      userlandsPath(ns),
      userland("unknown-field", { ...ok, user: "unknown-field", image: "evil:latest" }),
    );
    assert.equal((created.spec as Record<string, unknown>).image, undefined, "never stored");
  });
  row(
    "Userland created with a forged status pointing at another Service: the status is dropped",
    async () => {
      const created = await rest.create<Userland>(
        userlandsPath(ns),
        userland(
          "forged-status",
          { ...ok, user: "forger" },
          {
            status: { phase: "Ready", service: { name: "code-victim-svc", port: 80 } },
          },
        ),
      );
      assert.equal(created.status?.service, undefined, "status is a subresource: not settable on create");
      const ready = await waitForPhase(ns, "forged-status", "Ready");
      assert.equal(ready.status?.service?.name, childNames("code", "forged-status").service);
    },
  );
  row("changing spec.user of an existing Userland: 422 (an environment never changes hands)", async () => {
    await createUserland(ns, "owned", "owner", "code");
    await assert.rejects(patchUserland(ns, "owned", { spec: { user: "mallory" } }), (e: Error) => {
      assert.ok(e instanceof KubeError && e.code === 422, e.message);
      assert.match(e.message, /spec\.user is immutable/);
      return true;
    });
    assert.equal((await getUserland(ns, "owned")).spec.user, "owner");
  });
  row("a 3.5 MiB Userland (annotations): refused (413), nothing stored", async () => {
    await refused(
      userlandsPath(ns),
      {
        ...userland("huge", ok),
        metadata: { name: "huge", annotations: { pad: "p".repeat(3.5 * 1024 * 1024) } },
      },
      413,
      /too large/i,
    );
  });
  row("a Userland with 300 KiB of annotations: 422 (metadata limit 256 KiB)", async () => {
    await refused(
      userlandsPath(ns),
      { ...userland("fat", ok), metadata: { name: "fat", annotations: { pad: "p".repeat(300 * 1024) } } },
      422,
      /metadata\.annotations: Too long/,
    );
  });
  row(
    "a Userland named a.b (a valid object name, but no valid Service name): 422 naming the rule",
    async () => {
      await refused(
        userlandsPath(ns),
        userland("a.b", ok),
        422,
        /Userland names are lowercase letters, digits and '-' \(no dots\)/,
      );
    },
  );
  row("child names that collide across Templates: the second Userland is Failed, never adopts", async () => {
    // Template "code" + Userland "x-y" and Template "code-x" + Userland "y" both name "code-x-y".
    await createTemplate(ns, "code-x", simpleTemplateSpec());
    await createUserland(ns, "x-y", "first", "code");
    const first = await waitForPhase(ns, "x-y", "Ready");
    await createUserland(ns, "y", "second", "code-x");
    const second = await waitForPhase(ns, "y", "Failed");
    assert.match(second.status?.message ?? "", /already exists and does not belong to this Userland/);
    const deployment = await getDeployment(ns, "code-x-y");
    assert.equal(
      deployment?.metadata?.ownerReferences?.find((o) => o.controller)?.uid,
      first.metadata.uid,
      "the Deployment stays the first Userland's",
    );
    assert.equal(deployment?.spec?.template.spec?.containers[0]?.image, "registry.invalid/ide:1");
  });

  // --- Templates ------------------------------------------------------------------------------------
  const badTemplates: [string, unknown, number, RegExp][] = [
    [
      "an upper-case name",
      template("Code", simpleTemplateSpec()),
      422,
      /metadata\.name|at most 24 characters/,
    ],
    ["a 25-character name", template("a".repeat(25), simpleTemplateSpec()), 422, /at most 24 characters/],
    ["a dotted name", template("co.de", simpleTemplateSpec()), 422, /lowercase letters, digits and '-'/],
    ["no spec.template", template("no-pod", { displayName: "x" }), 422, /spec\.template: Required value/],
    [
      "no containers",
      template("no-containers", { template: { spec: {} } }),
      422,
      /containers: Required value/,
    ],
    [
      "an empty container list",
      template("empty-containers", { template: { spec: { containers: [] } } }),
      422,
      /containers/,
    ],
    [
      "containers as a string",
      template("str-containers", { template: { spec: { containers: "ide" } } }),
      422,
      /containers/,
    ],
    [
      "a container without a name",
      template("nameless", { template: { spec: { containers: [{ image: "x" }] } } }),
      422,
      /name: Required value/,
    ],
    [
      "a Service port of 70000",
      template("bad-port", { template: pod, service: { ports: [{ port: 70000 }] } }),
      422,
      /port/,
    ],
    [
      "a Service port as text",
      template("text-port", { template: pod, service: { ports: [{ port: "http" }] } }),
      422,
      /port/,
    ],
    [
      "two volumes with one name",
      template("dup-volumes", { template: pod, volumes: [volume("home"), volume("home")] }),
      422,
      /Duplicate value/,
    ],
    [
      "17 volumes",
      template("many-volumes", {
        template: pod,
        volumes: Array.from({ length: 17 }, (_, i) => volume(`v${i}`)),
      }),
      422,
      /must have at most 16 items|Too many/,
    ],
    [
      "a volume name with a slash",
      template("slash-volume", { template: pod, volumes: [volume("../etc")] }),
      422,
      /volumes\[0\]\.name/,
    ],
    [
      "an idleTimeout of 'soon'",
      template("soon", { template: pod, idleTimeout: "soon" }),
      422,
      /idleTimeout/,
    ],
    [
      "a 2,001-character description",
      template("long-desc", { template: pod, description: "d".repeat(2001) }),
      422,
      /description: Too long/,
    ],
    [
      "a reclaimPolicy of Recycle",
      template("recycle", { template: pod, volumes: [{ ...volume("home"), reclaimPolicy: "Recycle" }] }),
      422,
      /reclaimPolicy/,
    ],
  ];
  // A Service students could reach without the proxy (and its sign-in): refused, field by field.
  const svcPorts = [{ name: "http", port: 80, targetPort: 8080 }];
  const exposed = (field: string) =>
    new RegExp(
      `spec\\.service\\.${field}: .*students reach environments only through the proxy: remove spec\\.service\\.${field}`,
    );
  const exposedServices: [string, Record<string, unknown>, string][] = [
    ["type NodePort", { type: "NodePort" }, "type"],
    ["type LoadBalancer", { type: "LoadBalancer" }, "type"],
    ["type ExternalName", { type: "ExternalName", externalName: "evil.example" }, "type"],
    ["externalIPs", { externalIPs: ["203.0.113.7"] }, "externalIPs"],
    ["ClusterIP and externalIPs", { type: "ClusterIP", externalIPs: ["203.0.113.7"] }, "externalIPs"],
    ["loadBalancerIP", { loadBalancerIP: "203.0.113.8" }, "loadBalancerIP"],
    ["loadBalancerSourceRanges", { loadBalancerSourceRanges: ["0.0.0.0/0"] }, "loadBalancerSourceRanges"],
    ["externalName", { externalName: "evil.example" }, "externalName"],
    ["externalTrafficPolicy", { externalTrafficPolicy: "Local" }, "externalTrafficPolicy"],
  ];
  for (const [what, fields, field] of exposedServices) {
    badTemplates.push([
      `a Service with ${what}`,
      template(`svc-${field.toLowerCase().slice(0, 16)}-${badTemplates.length}`, {
        template: pod,
        service: { ...fields, ports: svcPorts },
      }),
      422,
      exposed(field),
    ]);
  }
  for (const [what, body, code, pattern] of badTemplates) {
    row(`Template with ${what}: ${code}`, () => refused(templatesPath(ns), body, code, pattern));
  }
  row("a Service of type ClusterIP, or with no type: accepted", async () => {
    for (const [name, service] of [
      ["svc-clusterip", { type: "ClusterIP", ports: svcPorts }],
      ["svc-no-type", { ports: svcPorts, sessionAffinity: "ClientIP" }],
    ] as const) {
      await rest.create(templatesPath(ns), template(name, { template: pod, service }));
    }
  });
  row("updating a Template's Service to NodePort, LoadBalancer or externalIPs: 422, unchanged", async () => {
    await createTemplate(ns, "svc-update", { template: pod, service: { ports: svcPorts } });
    for (const [service, field] of [
      [{ type: "NodePort" }, "type"],
      [{ type: "LoadBalancer" }, "type"],
      [{ externalIPs: ["203.0.113.7"] }, "externalIPs"],
      [{ loadBalancerIP: "203.0.113.8" }, "loadBalancerIP"],
    ] as const) {
      await assert.rejects(patchTemplate(ns, "svc-update", { spec: { service } }), (e: Error) => {
        assert.ok(e instanceof KubeError && e.code === 422, e.message);
        assert.match(e.message, exposed(field));
        return true;
      });
    }
    const stored = (await rest.get<Template>(templatesPath(ns, "svc-update"))).spec.service ?? {};
    assert.deepEqual(stored, { ports: svcPorts }, "nothing stored");
    await createUserland(ns, "svc-user", "svc-user", "svc-update");
    await waitForPhase(ns, "svc-user", "Ready");
  });
  row(
    'a 1.6 MiB Template (over etcd\'s object limit): refused by the API server (500 "request is too large"), nothing stored',
    async () => {
      const big = { ...container, env: [{ name: "PAD", value: "p".repeat(1.6 * 1024 * 1024) }] };
      const body = template("too-big", { template: { spec: { containers: [big] } } });
      await assert.rejects(rest.create(templatesPath(ns), body), (e: Error) => {
        assert.ok(e instanceof KubeError, String(e));
        // kube-apiserver passes etcd's refusal on as a 500 ("etcdserver: request is too large").
        assert.ok(e.code === 413 || e.code === 500, `${e.code} ${e.message.slice(0, 300)}`);
        assert.match(e.message, /request is too large|too large/i);
        return true;
      });
      await assert.rejects(
        rest.get(templatesPath(ns, "too-big")),
        (e: Error) => e instanceof KubeError && e.code === 404,
      );
    },
  );
  row(
    "a pod template only pod validation refuses: PodTemplateValid=False, its Userlands Failed",
    async () => {
      await createTemplate(ns, "bad-pod", {
        template: { spec: { containers: [{ ...container, name: "Bad_Name" }] } },
      });
      await createUserland(ns, "uses-bad-pod", "victim-of-admin", "bad-pod");
      const failed = await waitForPhase(ns, "uses-bad-pod", "Failed");
      assert.match(failed.status?.message ?? "", /Template "bad-pod" is invalid/);
      assert.equal(await getDeployment(ns, childNames("bad-pod", "uses-bad-pod").deployment), undefined);
    },
  );
  row("a Userland for a Template that does not exist: a status condition, no children", async () => {
    await createUserland(ns, "orphan", "orphan", "nosuch");
    const u = await eventually("a TemplateAvailable condition", async () => {
      const got = await getUserland(ns, "orphan");
      return got.status?.conditions?.some((c) => c.type === "TemplateAvailable" && c.status === "False")
        ? got
        : undefined;
    });
    assert.notEqual(u.status?.phase, "Ready");
    assert.equal(await getDeployment(ns, childNames("nosuch", "orphan").deployment), undefined);
  });

  for (const r of rows) await t.test(r.name, r.run);

  await t.test(
    "afterwards: the operator is still running, leading, and reconciles a good Userland",
    async () => {
      assert.equal(operator.child.exitCode, null, operator.logs().slice(-2000));
      const ready = await operator.readyz();
      assert.ok(ready?.leader && ready.synced, JSON.stringify(ready));
      await createUserland(ns, "still-works", "still-works", "code");
      await waitForPhase(ns, "still-works", "Ready");
      const services = await rest.list<V1Service>(servicesPath(ns));
      assert.ok(services.items.length > 0);
      for (const s of services.items) {
        assert.equal(s.spec?.type, "ClusterIP", `${s.metadata?.name} is only reachable in the cluster`);
        assert.equal(s.spec?.externalIPs, undefined, `${s.metadata?.name} has no external IPs`);
        assert.ok(
          s.spec?.ports?.every((p) => p.nodePort === undefined),
          `${s.metadata?.name}: no node port`,
        );
      }
      assert.doesNotMatch(operator.logs(), /uncaught|unhandled|FATAL/i);
    },
  );
});
