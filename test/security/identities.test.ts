/**
 * Identities that collide after case folding, slugging or escaping. The whole chain is real: the
 * user-manager creates each Userland (name derived from the exact identity), the operator
 * reconciles it into a Deployment and a Service, and the proxy routes each identity's session to its
 * own loopback upstream. Every row checks the stored objects and child names, not just the API's
 * answer. Look-alikes that are not printable ASCII are refused everywhere rather than rewritten.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, userlandNameFor } from "../../api/naming.ts";
import {
  forgeToken,
  send,
  startProxy,
  startUpstream,
  testKeys,
  type Upstream,
} from "../../services/proxy/test/support.ts";
import { admin, startUserManager } from "../../services/user-manager/test/support.ts";
import { eventually } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import {
  adminRest,
  createTemplate,
  getDeployment,
  getPvc,
  getService,
  getUserland,
  simpleTemplateSpec,
  userlandsPath,
  waitForPhase,
} from "../support/resources.ts";

const LONG = "x".repeat(256);
const GROUPS: [string, string[]][] = [
  ["case folding", ["Alice", "alice", "ALICE"]],
  ["punctuation that slugs to the same name", ["a.b", "a-b", "a_b", "a b", "a/b", "a+b"]],
  ["escaping and prefixes", ["github:123", "github-123", "github%3A123"]],
  ["e-mail addresses", ["a.b@uni.ac.jp", "a-b@uni-ac-jp", "A.B@UNI.AC.JP"]],
  ["leading digits (name prefix u-)", ["123", "u-123", "u123"]],
  ["very long identities sharing their first 255 characters", [LONG, `${"x".repeat(255)}y`]],
];
const LOOK_ALIKES: [string, string][] = [
  ["\u0430lice", "Cyrillic а"],
  ["\uff41lice", "full-width a"],
  ["alice\u200b", "zero-width space"],
  ["al\u0131ce", "dotless ı"],
  ["alice ", "a trailing space"],
  [" alice", "a leading space"],
  ["x".repeat(257), "257 characters"],
];

interface Row {
  name: string;
  run: () => Promise<void>;
}

test("identities that collide after folding or escaping get separate environments", async (t) => {
  const h = await startUserManager(t, { templates: ["code"] });
  await startOperator(t, h.ns);
  const keys = await testKeys(t);
  const proxy = await startProxy(t, h.ns, keys, { PROXY_DEFAULT_TEMPLATE: "code" });

  // Create every identity through the API, then wait for the operator and wire the upstreams.
  const nameOf = new Map<string, string>();
  const upstreamOf = new Map<string, Upstream>();
  for (const [, users] of GROUPS) {
    for (const user of users) {
      const r = await h.call("POST", "/api/v1/userlands", {
        token: h.teacher,
        body: { user, templateName: "code" },
      });
      assert.equal(r.status, 201, `${user}: ${r.text}`);
      nameOf.set(user, String(r.json.name));
      upstreamOf.set(user, await startUpstream(t, user));
    }
  }
  for (const [user, name] of nameOf) {
    const service = (await waitForPhase(h.ns, name, "Ready")).status?.service;
    assert.ok(service);
    proxy.resolver.set(h.ns, service.name, upstreamOf.get(user)?.url ?? "");
  }

  const rows: Row[] = [];
  const row = (name: string, run: () => Promise<void>) => rows.push({ name, run });

  for (const [what, users] of GROUPS) {
    const label = users.map((u) => JSON.stringify(u.length > 20 ? `${u.slice(0, 6)}…(${u.length})` : u));
    row(`${what} (${label.join(", ")}): distinct Userlands, children and upstreams`, async () => {
      const names = users.map((u) => nameOf.get(u) ?? "");
      assert.equal(new Set(names).size, users.length, `distinct Userland names: ${names.join(", ")}`);
      const children = new Set<string>();
      for (const user of users) {
        const name = nameOf.get(user) ?? "";
        assert.equal(name, userlandNameFor(user, "code"), "the name is derived from the exact identity");
        assert.match(name, /^[a-z]([-a-z0-9]{0,29}[a-z0-9])?$/, "a DNS-1035 label of at most 31 characters");
        const userland = await getUserland(h.ns, name);
        assert.equal(userland.spec.user, user, "spec.user is the identity, byte for byte");
        const expected = childNames("code", name);
        const deployment = await getDeployment(h.ns, expected.deployment);
        const service = await getService(h.ns, expected.service);
        assert.ok(deployment && service, `children of ${name}`);
        for (const child of [deployment, service]) {
          const owner = child.metadata?.ownerReferences?.find((o) => o.controller);
          assert.equal(owner?.uid, userland.metadata.uid, `${child.metadata?.name} is owned by ${name} only`);
        }
        children.add(expected.deployment).add(expected.service);
        // The lookup by identity is exact.
        const found = await h.call("GET", `/api/v1/users/${encodeURIComponent(user)}/userland`, {
          token: h.teacher,
        });
        assert.equal(found.status, 200, found.text);
        assert.equal(found.json.name, name);
        // And each session reaches its own environment.
        const upstream = upstreamOf.get(user);
        const before = upstream?.seen.length ?? 0;
        const r = await send(proxy.port, {
          headers: { host: "code.example.test", cookie: await keys.cookie(user) },
        });
        assert.equal(r.status, 200, r.body);
        const body = r.json<{ upstream: string; xUser: string }>();
        assert.deepEqual([body.upstream, body.xUser], [user, user]);
        assert.equal(upstream?.seen.length, before + 1);
      }
      assert.equal(children.size, users.length * 2, "no Deployment or Service is shared");
    });
  }

  for (const [user, what] of LOOK_ALIKES) {
    row(`a look-alike identity with ${what} is refused, not folded into "alice"`, async () => {
      const before = (await admin.listUserlands(h.ns)).length;
      const r = await h.call("POST", "/api/v1/userlands", {
        token: h.teacher,
        body: { user, templateName: "code" },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.field, "user");
      const roster = await h.call("POST", "/api/v1/rosters/import", {
        token: h.teacher,
        body: { templateName: "code", users: [user] },
      });
      assert.equal(roster.status, 200);
      assert.equal((roster.json.invalid as unknown[]).length, 1);
      assert.equal((await admin.listUserlands(h.ns)).length, before, "nothing created");
      // The signer refuses it, and a token carrying it (even with the real key) is no session.
      await assert.rejects(keys.signer.sign(user, 60), /invalid identity/);
      const token = await forgeToken(keys.keys, { sub: user, exp: Math.floor(Date.now() / 1000) + 600 });
      const proxied = await send(proxy.port, {
        headers: {
          host: "code.example.test",
          cookie: `userland_session=${token}`,
          accept: "application/json",
        },
      });
      assert.equal(proxied.status, 401);
      // The API server refuses it as spec.user too.
      await assert.rejects(
        admin.createUserland(h.ns, "look-alike", user, "code"),
        (error: Error & { code?: number }) => error.code === 422 && /spec\.user/.test(error.message),
      );
    });
  }

  row(
    "a second Userland for an existing identity and Template is refused with 409 (one environment per user and Template)",
    async () => {
      const r = await h.call("POST", "/api/v1/userlands", {
        token: h.teacher,
        body: { user: "alice", templateName: "code" },
      });
      assert.equal(r.status, 409);
      assert.equal(
        (await admin.listUserlands(h.ns)).filter(
          (u) => u.spec.user === "alice" && u.spec.templateName === "code",
        ).length,
        1,
      );
    },
  );

  row("a Userland made to take over another user's retained volume is refused its data", async () => {
    await createTemplate(h.ns, "data", {
      ...simpleTemplateSpec("registry.invalid/data:1"),
      volumes: [
        {
          name: "home",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          reclaimPolicy: "Retain",
        },
      ],
    });
    // victim's environment has a volume; the Userland is deleted, the volume is kept.
    const name = "data-owner";
    const rest = await adminRest();
    await rest.create(userlandsPath(h.ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name },
      spec: { user: "victim", templateName: "data" },
    });
    const pvcName = childNames("data", name).pvc("home");
    await eventually("victim's volume", () => getPvc(h.ns, pvcName));
    const deploymentName = childNames("data", name).deployment;
    await eventually("victim's Deployment", () => getDeployment(h.ns, deploymentName));
    await rest.delete(userlandsPath(h.ns, name));
    await eventually("the Userland to be gone", async () => !(await admin.tryGetUserland(h.ns, name)));
    await eventually(
      "its Deployment to be collected",
      async () => !(await getDeployment(h.ns, deploymentName)),
    );
    assert.ok(await getPvc(h.ns, pvcName), "Retain keeps the volume");

    // Someone re-creates a Userland with the same name for mallory.
    await rest.create(userlandsPath(h.ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name },
      spec: { user: "mallory", templateName: "data" },
    });
    const failed = await waitForPhase(h.ns, name, "Failed");
    assert.match(failed.status?.message ?? "", /holds another user's data/);
    const deployment = await getDeployment(h.ns, deploymentName);
    const mounts = JSON.stringify(deployment?.spec?.template.spec?.volumes ?? []);
    assert.ok(!mounts.includes(pvcName), "mallory's pod never mounts victim's volume");
    const pvc = await getPvc(h.ns, pvcName);
    assert.ok(
      !(pvc?.metadata?.ownerReferences ?? []).some((o) => o.uid === failed.metadata.uid),
      "nor does mallory's Userland come to own it",
    );

    // Control: the same name for victim again gets the data back.
    await rest.delete(userlandsPath(h.ns, name));
    await eventually("mallory's Userland to be gone", async () => !(await admin.tryGetUserland(h.ns, name)));
    await rest.create(userlandsPath(h.ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Userland",
      metadata: { name },
      spec: { user: "victim", templateName: "data" },
    });
    await eventually("victim's Deployment to mount the kept volume", async () => {
      const d = await getDeployment(h.ns, deploymentName);
      return JSON.stringify(d?.spec?.template.spec?.volumes ?? []).includes(pvcName);
    });
  });

  for (const r of rows) await t.test(r.name, r.run);
});
