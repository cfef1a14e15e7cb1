/** The operator against the real control plane: each test has its own namespace and operator. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { ANNOTATIONS, childNames } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { installCrds, startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  deploymentsPath,
  getDeployment,
  getPvc,
  getService,
  getUserland,
  patchTemplate,
  patchUserland,
  servicesPath,
  simpleTemplateSpec,
  userlandsPath,
  waitForPhase,
} from "../../test/support/resources.ts";
import { listEvents } from "../../test/support/events.ts";

test("a Userland gets its Deployment, Service and status; kubectl shows USER, TEMPLATE, PHASE, AGE", async (t) => {
  const ns = await testNamespace(t);
  const operator = await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec());
  await createUserland(ns, "alice", "Alice@uni.example", "code");
  const names = childNames("code", "alice");

  const ready = await waitForPhase(ns, "alice", "Ready");
  assert.deepEqual(ready.status?.service, { name: names.service, port: 80 });
  const readyCondition = ready.status?.conditions?.find((c) => c.type === "Ready");
  assert.equal(readyCondition?.status, "True");

  const deployment = await getDeployment(ns, names.deployment);
  assert.equal(deployment?.spec?.replicas, 1);
  assert.equal(deployment?.spec?.strategy?.type, "Recreate");
  const owner = deployment?.metadata?.ownerReferences?.[0];
  assert.equal(owner?.kind, "Userland");
  assert.equal(owner?.controller, true);
  assert.equal(owner?.uid, ready.metadata.uid);
  const container = deployment?.spec?.template.spec?.containers[0];
  assert.deepEqual(
    container?.env?.find((e) => e.name === "USERLAND_USER"),
    { name: "USERLAND_USER", value: "Alice@uni.example" },
  );
  assert.equal(deployment?.spec?.template.spec?.automountServiceAccountToken, false);

  const service = await getService(ns, names.service);
  assert.deepEqual(service?.spec?.selector, deployment?.spec?.selector?.matchLabels);
  assert.equal(service?.spec?.ports?.[0]?.port, 80);

  // A new Userland costs one Event naming both children, and its wait is recorded for its Template.
  const events = await eventually("the Created Event", async () => {
    const created = (await listEvents(ns, "alice")).filter((e) => e.reason === "Created");
    return created.length > 0 ? created : undefined;
  });
  assert.deepEqual(
    events.map((e) => e.message),
    [`Created Deployment ${names.deployment} and Service ${names.service}`],
  );
  // The spawn is recorded once the operator's status write has returned, and the gauge counts
  // from its cache, which sees the phase a moment after the API server: the test saw Ready first.
  await eventually("the spawn recorded and the userlands gauge to count alice as Ready", async () => {
    const metrics = await operator.metrics();
    return (
      /userland_operator_spawn_duration_seconds_count\{template="code"\} 1\n/.test(metrics) &&
      /userland_operator_userlands\{phase="Ready",template="code"\} 1\n/.test(metrics)
    );
  });

  // The printer columns, through the real kubectl.
  const { info } = await testCluster();
  const kubectl = join(info.binDir, "kubectl");
  const out = execFileSync(kubectl, ["--kubeconfig", info.kubeconfig, "-n", ns, "get", "userlands"], {
    encoding: "utf8",
  });
  const [header, row] = out.trim().split("\n");
  assert.match(header ?? "", /^NAME\s+USER\s+TEMPLATE\s+PHASE\s+AGE$/);
  assert.match(row ?? "", /^alice\s+Alice@uni\.example\s+code\s+Ready\s+\d+s$/);
  const short = execFileSync(
    kubectl,
    ["--kubeconfig", info.kubeconfig, "-n", ns, "get", "ul,tpl", "-o", "name"],
    { encoding: "utf8" },
  );
  assert.match(short, /userland\.userland\.dev\/alice/);
  assert.match(short, /template\.userland\.dev\/code/);
});

test("deleted and hand-edited children are restored", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1"));
  await createUserland(ns, "bob", "bob", "code");
  const names = childNames("code", "bob");
  await waitForPhase(ns, "bob", "Ready");
  const rest = await adminRest();

  const before = await getDeployment(ns, names.deployment);
  await rest.delete(deploymentsPath(ns, names.deployment));
  await eventually("the Deployment to be re-created", async () => {
    const d = await getDeployment(ns, names.deployment);
    return d && d.metadata?.uid !== before?.metadata?.uid ? d : undefined;
  });

  await rest.delete(servicesPath(ns, names.service));
  await eventually("the Service to be re-created", () => getService(ns, names.service));

  // Hand edits of managed fields: image, replicas, Service selector.
  await rest.patch(
    deploymentsPath(ns, names.deployment),
    {
      spec: {
        replicas: 3,
        template: { spec: { containers: [{ name: "ide", image: "evil.invalid/other:6" }] } },
      },
    },
    "strategic",
  );
  await rest.patch(servicesPath(ns, names.service), { spec: { selector: { app: "someone-else" } } }, "merge");
  await eventually("the hand edits to be reverted", async () => {
    const d = await getDeployment(ns, names.deployment);
    const s = await getService(ns, names.service);
    return (
      d?.spec?.replicas === 1 &&
      d.spec.template.spec?.containers[0]?.image === "registry.invalid/ide:1" &&
      s?.spec?.selector?.app === undefined &&
      s?.spec?.selector?.["userland.dev/instance"] === names.deployment
    );
  });
  await waitForPhase(ns, "bob", "Ready");
});

test("a Template change rolls out to every Userland that uses it", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1"));
  await createTemplate(ns, "other", simpleTemplateSpec("registry.invalid/other:1"));
  const users = ["u1", "u2", "u3"];
  for (const u of users) await createUserland(ns, u, u, "code");
  await createUserland(ns, "bystander", "bystander", "other");
  for (const u of users) await waitForPhase(ns, u, "Ready");

  await patchTemplate(ns, "code", {
    spec: {
      template: {
        spec: {
          containers: [
            { name: "ide", image: "registry.invalid/ide:2", ports: [{ containerPort: 8080, name: "http" }] },
          ],
        },
      },
    },
  });
  for (const u of users) {
    await eventually(`${u} to run image 2`, async () => {
      const d = await getDeployment(ns, childNames("code", u).deployment);
      return d?.spec?.template.spec?.containers[0]?.image === "registry.invalid/ide:2";
    });
    await waitForPhase(ns, u, "Ready");
  }
  const other = await getDeployment(ns, childNames("other", "bystander").deployment);
  assert.equal(
    other?.spec?.template.spec?.containers[0]?.image,
    "registry.invalid/other:1",
    "other Templates' users are untouched",
  );
  const template = await (
    await adminRest()
  ).get<{ status?: { userlands?: number } }>(`/apis/userland.dev/v1alpha1/namespaces/${ns}/templates/code`);
  assert.equal(template.status?.userlands, 3);
});

test("spec.templateName is immutable: a switch is refused and the environment is left as it was", async (t) => {
  // Moving a student to another Template is a new Userland: the patch that starts and stops must
  // not be able to pick what runs (issue 29; the CRD's transition rule).
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/ide:1"));
  await createTemplate(ns, "jupyter", simpleTemplateSpec("registry.invalid/jupyter:1"));
  await createUserland(ns, "carol", "carol", "code");
  await waitForPhase(ns, "carol", "Ready");
  await assert.rejects(patchUserland(ns, "carol", { spec: { templateName: "jupyter" } }), (error: Error) => {
    assert.match(error.message, /spec\.templateName is immutable/);
    return true;
  });
  assert.equal((await getUserland(ns, "carol")).spec.templateName, "code");
  assert.ok(await getDeployment(ns, childNames("code", "carol").deployment));
  assert.equal(await getDeployment(ns, childNames("jupyter", "carol").deployment), undefined);
});

test("enabled: false scales to zero and keeps the data; enabling starts it again", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(
    ns,
    "code",
    simpleTemplateSpec("registry.invalid/ide:1", {
      volumes: [
        {
          name: "home",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          reclaimPolicy: "Delete",
        },
      ],
    }),
  );
  await createUserland(ns, "dave", "dave", "code", false);
  const names = childNames("code", "dave");
  const stopped = await waitForPhase(ns, "dave", "Stopped");
  assert.match(stopped.status?.message ?? "", /data is kept/);
  const deployment = await getDeployment(ns, names.deployment);
  assert.equal(deployment?.spec?.replicas, 0);
  const pvc = await getPvc(ns, names.pvc("home"));
  assert.ok(pvc);

  await patchUserland(ns, "dave", { spec: { enabled: true } });
  await eventually(
    "replicas 1",
    async () => (await getDeployment(ns, names.deployment))?.spec?.replicas === 1,
  );
  await patchUserland(ns, "dave", { spec: { enabled: false } });
  await eventually(
    "replicas 0",
    async () => (await getDeployment(ns, names.deployment))?.spec?.replicas === 0,
  );
  await waitForPhase(ns, "dave", "Stopped");
  assert.equal(
    (await getPvc(ns, names.pvc("home")))?.metadata?.uid,
    pvc.metadata?.uid,
    "the same claim: no data lost",
  );
});

test("a missing Template is a status condition and an Event, then heals when the Template appears", async (t) => {
  const ns = await testNamespace(t);
  const operator = await startOperator(t, ns);
  await createUserland(ns, "erin", "erin", "nonexistent");
  const failed = await waitForPhase(ns, "erin", "Failed");
  const condition = failed.status?.conditions?.find((c) => c.type === "TemplateAvailable");
  assert.equal(condition?.status, "False");
  assert.equal(condition?.reason, "TemplateNotFound");
  assert.match(failed.status?.message ?? "", /Template "nonexistent" does not exist/);
  await eventually("a Warning Event", async () =>
    (await listEvents(ns, "erin")).some((e) => e.type === "Warning" && e.reason === "TemplateNotFound"),
  );

  // No hot loop: the operator waits for a change instead of retrying. Counted up to a marker it
  // must reach after anything erin would have queued: another Userland of a missing Template,
  // whose Failed status and Event it writes in turn. A retry loop shows in the retries, a loop
  // through erin's own status writes in the reconciles (erin's at most one, the marker's two).
  const counter = async (pattern: RegExp) => Number(pattern.exec(await operator.metrics())?.[1] ?? 0);
  const reconciles = () =>
    counter(/userland_operator_reconcile_total\{kind="Userland",result="success"\} (\d+)/);
  const retries = () => counter(/userland_operator_workqueue_retries_total (\d+)/);
  const [r1, q1] = [await reconciles(), await retries()];
  await createUserland(ns, "fay", "fay", "missing-too");
  await waitForPhase(ns, "fay", "Failed");
  await eventually("the marker's Warning Event", async () =>
    (await listEvents(ns, "fay")).some((e) => e.type === "Warning" && e.reason === "TemplateNotFound"),
  );
  assert.equal((await retries()) - q1, 0, "a missing Template is not retried with back-off");
  assert.ok((await reconciles()) - r1 <= 3, "no reconcile loop while the Template is missing");

  await eventually("the userlands gauge to count erin as Failed", async () =>
    /userland_operator_userlands\{phase="Failed",template="nonexistent"\} 1\n/.test(await operator.metrics()),
  );

  await createTemplate(ns, "nonexistent", simpleTemplateSpec());
  await waitForPhase(ns, "erin", "Ready");
  // Counted from the operator's cache, which sees the new phase a moment after the API server.
  await eventually("the userlands gauge to count erin as Ready", async () => {
    const metrics = await operator.metrics();
    return (
      /userland_operator_userlands\{phase="Ready",template="nonexistent"\} 1\n/.test(metrics) &&
      /userland_operator_userlands\{phase="Failed",template="nonexistent"\} 0\n/.test(metrics) &&
      // From Failed back to Starting when the Template appeared, then Ready: one spawn recorded
      // (once the status write returned: the cache's event can come first).
      /userland_operator_spawn_duration_seconds_count\{template="nonexistent"\} 1\n/.test(metrics)
    );
  });
});

test("an invalid pod template is reported on the Template and its Userlands, checked by a server-side dry run", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  // Passes the CRD schema (containers have names) but not the API server's Pod validation.
  const invalid = simpleTemplateSpec("registry.invalid/ide:1");
  (invalid.template.spec.containers[0] as { name: string }).name = "Not_A_DNS_Label";
  await createTemplate(ns, "broken", invalid);
  await createUserland(ns, "frank", "frank", "broken");
  const template = await eventually("the Template to be marked invalid", async () => {
    const tpl = await (
      await adminRest()
    ).get<{ status?: { conditions?: { type: string; status: string; message: string }[] } }>(
      `/apis/userland.dev/v1alpha1/namespaces/${ns}/templates/broken`,
    );
    return tpl.status?.conditions?.find((c) => c.type === "PodTemplateValid" && c.status === "False");
  });
  assert.match(template.message, /Not_A_DNS_Label/);
  // The Userland may be synced before the operator's Template cache has the Template (two watches):
  // TemplateNotFound first, then TemplateInvalid once the Template's own event re-queues it.
  await eventually("frank to be Failed because the Template is invalid", async () => {
    const u = await getUserland(ns, "frank");
    const reason = u.status?.conditions?.find((c) => c.type === "TemplateAvailable")?.reason;
    return u.status?.phase === "Failed" && reason === "TemplateInvalid";
  });
  assert.equal(
    await getDeployment(ns, childNames("broken", "frank").deployment),
    undefined,
    "nothing half-created",
  );

  await patchTemplate(ns, "broken", {
    spec: {
      template: {
        spec: {
          containers: [{ name: "ide", image: "registry.invalid/ide:1", ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  });
  await waitForPhase(ns, "frank", "Ready");
});

test("the CRDs reject bad objects with clear messages", async (t) => {
  const ns = await testNamespace(t);
  await installCrds();
  const rest = await adminRest();
  const userland = (spec: Record<string, unknown>, name = "x") => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name },
    spec,
  });
  const rejects = async (body: unknown, path: string, pattern: RegExp) => {
    await assert.rejects(rest.create(path, body), (error: Error & { code?: number }) => {
      assert.equal(error.code, 422, error.message);
      assert.match(error.message, pattern);
      return true;
    });
  };
  await rejects(userland({ templateName: "code" }), userlandsPath(ns), /spec\.user: Required value/);
  await rejects(userland({ user: "a\nb", templateName: "code" }), userlandsPath(ns), /spec\.user/);
  await rejects(userland({ user: " padded", templateName: "code" }), userlandsPath(ns), /spec\.user/);
  await rejects(userland({ user: "a", templateName: "Code" }), userlandsPath(ns), /spec\.templateName/);
  await rejects(
    userland({ user: "a", templateName: "code", enabled: "yes" }),
    userlandsPath(ns),
    /spec\.enabled/,
  );
  const template = (name: string, spec: unknown) => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name },
    spec,
  });
  await rejects(
    template("a-very-long-template-name-x", simpleTemplateSpec()),
    `/apis/userland.dev/v1alpha1/namespaces/${ns}/templates`,
    /at most 24 characters/,
  );
  await rejects(
    template("code", { template: { spec: { containers: [] } } }),
    `/apis/userland.dev/v1alpha1/namespaces/${ns}/templates`,
    /containers/,
  );
  await rejects(
    template("code", { template: { spec: {} } }),
    `/apis/userland.dev/v1alpha1/namespaces/${ns}/templates`,
    /containers: Required value/,
  );
  await rejects(
    template("code", { ...simpleTemplateSpec(), idleTimeout: "soon" }),
    `/apis/userland.dev/v1alpha1/namespaces/${ns}/templates`,
    /idleTimeout/,
  );

  // spec.user is immutable: an environment never changes hands.
  await rest.create(userlandsPath(ns), userland({ user: "grace", templateName: "code" }, "grace"));
  const created = await getUserland(ns, "grace");
  assert.equal(created.spec.enabled, true, "enabled defaults to true");
  await assert.rejects(patchUserland(ns, "grace", { spec: { user: "mallory" } }), /spec.user is immutable/);
});

test("deleting a Userland collects its Deployment, Service and Delete-policy volume, and keeps Retain volumes", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  await createTemplate(
    ns,
    "code",
    simpleTemplateSpec("registry.invalid/ide:1", {
      volumes: [
        {
          name: "home",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        },
        {
          name: "scratch",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          reclaimPolicy: "Delete",
        },
      ],
    }),
  );
  await createUserland(ns, "heidi", "heidi", "code");
  const names = childNames("code", "heidi");
  await eventually(
    "all children",
    async () =>
      (await getDeployment(ns, names.deployment)) &&
      (await getService(ns, names.service)) &&
      (await getPvc(ns, names.pvc("home"))) &&
      getPvc(ns, names.pvc("scratch")),
  );
  const home = await getPvc(ns, names.pvc("home"));
  assert.equal(home?.metadata?.ownerReferences, undefined, "Retain volumes have no owner");

  await (await adminRest()).delete(userlandsPath(ns, "heidi"));
  await eventually(
    "the garbage collector to remove the owned children",
    async () =>
      !(await getDeployment(ns, names.deployment)) &&
      !(await getService(ns, names.service)) &&
      !(await getPvc(ns, names.pvc("scratch"))),
  );
  assert.equal(
    (await getPvc(ns, names.pvc("home")))?.metadata?.uid,
    home?.metadata?.uid,
    "Retain keeps the data",
  );

  // The same user coming back gets the same data; a different user with that name does not.
  await createUserland(ns, "heidi", "heidi", "code");
  await eventually("the retained claim to be reused", async () => await getDeployment(ns, names.deployment));
  await (await adminRest()).delete(userlandsPath(ns, "heidi"));
  await eventually("heidi gone", async () => !(await getDeployment(ns, names.deployment)));
  await createUserland(ns, "heidi", "not-heidi", "code");
  const refused = await waitForPhase(ns, "heidi", "Failed");
  assert.match(refused.status?.message ?? "", /another user's data/);
  assert.equal(await getDeployment(ns, names.deployment), undefined);
});

test("an ESC (esc.k06.in/v1alpha2) Template works after changing only its apiVersion", async (t) => {
  const ns = await testNamespace(t);
  await startOperator(t, ns);
  const { parse } = await import("yaml");
  const esc = parse(`apiVersion: esc.k06.in/v1alpha2
kind: Template
metadata:
  name: vscode
spec:
  template:
    spec:
      containers:
      - image: codercom/code-server:3.8.0
        name: code-server
        args: ["--auth","none","project"]
        volumeMounts:
        - name: user-volume
          mountPath: /home/coder/project
  service:
    ports:
    - name: 80-80
      port: 80
      protocol: TCP
      targetPort: 8080
  volumes:
  - name: user-volume
    pvcSpec:
      accessModes:
        - ReadWriteOnce
      resources:
        requests:
          storage: 2Gi
      storageClassName: longhorn
`) as { apiVersion: string; metadata: { name: string } };
  esc.apiVersion = "userland.dev/v1alpha1";
  await (await adminRest()).create(`/apis/userland.dev/v1alpha1/namespaces/${ns}/templates`, esc);
  await createUserland(ns, "koba1t", "Koba1t", "vscode");
  const names = childNames("vscode", "koba1t");
  const deployment = await eventually("the ESC-named Deployment", () => getDeployment(ns, names.deployment));
  assert.equal(names.deployment, "vscode-koba1t");
  assert.equal(names.service, "vscode-koba1t-svc");
  assert.equal(names.pvc("user-volume"), "vscode-koba1t-pvc-user-volume");
  assert.deepEqual(deployment.spec?.template.spec?.volumes, [
    { name: "user-volume", persistentVolumeClaim: { claimName: "vscode-koba1t-pvc-user-volume" } },
  ]);
  assert.equal((await getPvc(ns, names.pvc("user-volume")))?.spec?.storageClassName, "longhorn");
  // Created beside the Deployment, not after it (operator/syncUserland.ts): it may land a moment later.
  await eventually("the ESC-named Service", () => getService(ns, names.service));
  // The claim never binds here (no "longhorn" provisioner), so the pod waits: Starting.
  const u: Userland = await waitForPhase(ns, "koba1t", "Starting");
  assert.equal(u.status?.service?.port, 80);
  assert.ok(deployment.metadata?.annotations?.[ANNOTATIONS.desiredHash]);
});
