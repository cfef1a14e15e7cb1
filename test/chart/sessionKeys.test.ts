/**
 * The chart's session keys: the auth service's Secret is made by the chart (helm's
 * genPrivateKey "ecdsa", read back with `lookup`, kept by helm), or the admin's own; only the auth
 * service mounts it, and the proxy fetches the public keys from the auth Service. The install,
 * upgrade, rotation and reinstall run helm against the real kube-apiserver.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parsePemSigningKeys } from "../../lib/session.ts";
import { testCluster, testNamespace } from "../support/cluster.ts";
import {
  chartDir,
  cleanUpClusterScoped,
  helm,
  isolatedValues,
  kubectl,
  ok,
  parseManifests,
  renderChart,
  type KubeObject,
} from "./support.ts";

interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: unknown;
}
interface Container {
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Deployment extends KubeObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: Container[]; volumes?: Volume[] };
    };
  };
}
interface Secret extends KubeObject {
  metadata: KubeObject["metadata"] & { annotations?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}
interface Service extends KubeObject {
  spec: { ports: { port: number }[] };
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface NetworkPolicy extends KubeObject {
  spec: {
    podSelector: LabelSelector;
    policyTypes: string[];
    ingress?: {
      from?: { podSelector?: LabelSelector; namespaceSelector?: LabelSelector }[];
      ports?: unknown;
    }[];
  };
}

const component = (objects: KubeObject[], name: string): Deployment => {
  const found = objects.find(
    (o): o is Deployment =>
      o.kind === "Deployment" && o.metadata.labels?.["app.kubernetes.io/component"] === name,
  );
  assert.ok(found, `the ${name} Deployment is rendered`);
  return found;
};
const envOf = (d: Deployment) =>
  Object.fromEntries((d.spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
const secrets = (objects: KubeObject[]) => objects.filter((o): o is Secret => o.kind === "Secret");
const pemOf = (secret: Secret) => Buffer.from(secret.data?.["keys.pem"] ?? "", "base64").toString();

/** The file the auth service reads, followed from its env var through the mount to the Secret. */
function authKeySource(objects: KubeObject[]): { secret: string; key: string } {
  const auth = component(objects, "auth");
  const file = envOf(auth).AUTH_SESSION_KEYS_FILE ?? "";
  const container = auth.spec.template.spec.containers[0];
  const mount = container?.volumeMounts?.find((m) => file.startsWith(`${m.mountPath}/`));
  assert.ok(mount, `AUTH_SESSION_KEYS_FILE=${file} is on a mounted volume`);
  const volume = auth.spec.template.spec.volumes?.find((v) => v.name === mount.name);
  const item = volume?.secret?.items?.find((i) => `${mount.mountPath}/${i.path}` === file);
  assert.ok(volume?.secret && item, `${file} comes from a Secret`);
  return { secret: volume.secret.secretName, key: item.key };
}

/** Equality-based and set-based label selection, as the API server evaluates it. */
function selects(selector: LabelSelector, labels: Record<string, string>): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    const value = labels[key];
    switch (operator) {
      case "In":
        return value !== undefined && values.includes(value);
      case "NotIn":
        return value === undefined || !values.includes(value);
      case "Exists":
        return value !== undefined;
      case "DoesNotExist":
        return value === undefined;
      default:
        throw new Error(`unknown selector operator ${operator}`);
    }
  });
  return byLabels && byExpressions;
}

test("default values: the chart makes an EC P-256 key for the auth service alone; the proxy fetches the public keys from the auth Service", async () => {
  const objects = parseManifests(await renderChart("userland", "ide"));
  const [secret, ...others] = secrets(objects);
  assert.ok(secret && others.length === 0, "one Secret is rendered");
  assert.equal(secret.metadata.name, "userland-session-keys");
  assert.equal(secret.metadata.namespace, "ide");
  assert.equal(secret.metadata.annotations?.["helm.sh/resource-policy"], "keep", "helm uninstall keeps it");
  assert.deepEqual(Object.keys(secret.data ?? {}), ["keys.pem"]);
  const pem = pemOf(secret);
  assert.match(pem, /^-----BEGIN EC PRIVATE KEY-----\n[\s\S]+\n-----END EC PRIVATE KEY-----\n?$/);
  const keys = await parsePemSigningKeys(pem, "the chart's keys.pem");
  assert.equal(keys.keys.length, 1);
  assert.equal(keys.keys[0]?.jwk.crv, "P-256");

  assert.deepEqual(authKeySource(objects), { secret: "userland-session-keys", key: "keys.pem" });
  for (const d of objects.filter((o): o is Deployment => o.kind === "Deployment")) {
    if (d.metadata.labels?.["app.kubernetes.io/component"] === "auth") continue;
    assert.doesNotMatch(JSON.stringify(d), /session-keys/, `${d.metadata.name} does not mount the keys`);
  }

  const proxy = component(objects, "proxy");
  const proxyEnv = envOf(proxy);
  assert.equal(
    proxyEnv.PROXY_SESSION_JWKS_URL,
    "http://userland-auth.ide.svc.cluster.local:80/.well-known/jwks.json",
  );
  assert.equal(proxyEnv.PROXY_SESSION_PUBLIC_KEYS_FILE, undefined);
  assert.deepEqual(
    (proxy.spec.template.spec.volumes ?? []).map((v) => v.name),
    ["tmp"],
    "the proxy mounts no key material",
  );

  // helm template cannot look up: every render is a new key (why GitOps must use existingSecret).
  const again = secrets(parseManifests(await renderChart("userland", "ide")))[0];
  assert.ok(again);
  assert.notEqual(pemOf(again), pem);
});

test("the proxy's key URL is the auth Service's name, namespace, cluster domain and port", async () => {
  const objects = parseManifests(
    await renderChart("lab", "course-42", { fullnameOverride: "ul", clusterDomain: "k8s.uni.example" }),
  );
  const service = objects.find(
    (o): o is Service =>
      o.kind === "Service" && o.metadata.labels?.["app.kubernetes.io/component"] === "auth",
  );
  assert.ok(service);
  assert.equal(
    envOf(component(objects, "proxy")).PROXY_SESSION_JWKS_URL,
    `http://${service.metadata.name}.course-42.svc.k8s.uni.example:${service.spec.ports[0]?.port}/.well-known/jwks.json`,
  );
  assert.equal(service.metadata.name, "ul-auth");
  assert.equal(secrets(objects)[0]?.metadata.name, "ul-session-keys");
  assert.deepEqual(authKeySource(objects), { secret: "ul-session-keys", key: "keys.pem" });
});

test("existingSecret: no Secret is rendered and the auth service mounts the named one", async () => {
  const objects = parseManifests(
    await renderChart("userland", "ide", {
      sessionKeys: { existingSecret: "my-keys", secretKey: "keys.json" },
    }),
  );
  assert.deepEqual(secrets(objects), []);
  assert.deepEqual(authKeySource(objects), { secret: "my-keys", key: "keys.json" });
  assert.equal(
    envOf(component(objects, "auth")).AUTH_SESSION_KEYS_FILE,
    "/etc/userland/session-keys/keys.json",
  );
  assert.match(envOf(component(objects, "proxy")).PROXY_SESSION_JWKS_URL ?? "", /^http:\/\/userland-auth\./);
});

test("the values schema refuses the removed public-key ConfigMap values and a bad Secret name", async () => {
  for (const set of [
    "sessionKeys.publicKeysConfigMap=userland-session-public-keys",
    "sessionKeys.publicKeysKey=keys.json",
    "sessionKeys.existingSecret=Not_A_Name",
    "sessionKeys.secretKey=../keys",
  ]) {
    const result = await helm(["template", "x", chartDir, "--set", set]);
    assert.notEqual(result.code, 0, `helm template accepted ${set}`);
    assert.match(result.stderr, /values don't meet the specifications of the schema/, set);
    assert.match(result.stderr, new RegExp(set.split("=")[0]?.split(".")[1] ?? ""), set);
  }
});

test("the platform's NetworkPolicy lets the proxy's pods reach the auth pods (the key fetch)", async () => {
  const objects = parseManifests(await renderChart("userland", "ide"));
  const authPod = component(objects, "auth").spec.template.metadata.labels;
  const proxyPod = component(objects, "proxy").spec.template.metadata.labels;
  const policies = objects.filter(
    (o): o is NetworkPolicy =>
      o.kind === "NetworkPolicy" &&
      (o as NetworkPolicy).spec.policyTypes.includes("Ingress") &&
      selects((o as NetworkPolicy).spec.podSelector, authPod),
  );
  assert.ok(
    policies.length > 0,
    "the auth pods are behind an ingress policy (else this test proves nothing)",
  );
  // Policies add up: one that admits them is enough.
  const admitting = policies.filter((policy) =>
    (policy.spec.ingress ?? []).some((rule) =>
      (rule.from ?? []).some(
        (peer) => peer.podSelector && !peer.namespaceSelector && selects(peer.podSelector, proxyPod),
      ),
    ),
  );
  assert.ok(admitting.length > 0, "a policy admits the proxy's pods from the same namespace");
  // And the students' environments stay out, as before.
  const environment = {
    "app.kubernetes.io/managed-by": "userland-operator",
    "userland.dev/template": "code",
  };
  for (const policy of policies) {
    const admitted = (policy.spec.ingress ?? []).some((rule) =>
      (rule.from ?? []).some(
        (peer) => peer.podSelector && !peer.namespaceSelector && selects(peer.podSelector, environment),
      ),
    );
    assert.ok(!admitted, `${policy.metadata.name} keeps the students' environments out`);
  }
});

test("helm install, upgrade, a rotation, uninstall and reinstall against the API server keep the keys", async (t) => {
  const { info } = await testCluster();
  const ns = await testNamespace(t, "chart-keys");
  const work = mkdtempSync(join(tmpdir(), "userland-keys-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const values = isolatedValues(ns);
  const valuesFile = join(work, "values.json");
  writeFileSync(valuesFile, JSON.stringify(values));
  cleanUpClusterScoped(t, parseManifests(await renderChart("userland", ns, values)));
  const release = (verb: "install" | "upgrade") =>
    helm([verb, "userland", chartDir, "--namespace", ns, "--values", valuesFile, "--skip-crds"], {
      kubeconfig: info.kubeconfig,
    }).then((r) => ok(r, `helm ${verb}`));
  const uninstall = () =>
    helm(["uninstall", "userland", "--namespace", ns, "--wait"], { kubeconfig: info.kubeconfig });
  t.after(() => uninstall());
  const stored = async () => {
    const secret = JSON.parse(
      ok(await kubectl(["-n", ns, "get", "secret", "userland-session-keys", "-o", "json"]), "get the Secret"),
    ) as Secret;
    return pemOf(secret);
  };

  await release("install");
  const installed = await stored();
  assert.equal((await parsePemSigningKeys(installed)).keys.length, 1, "a key was made at install");

  await release("upgrade");
  assert.equal(await stored(), installed, "helm upgrade keeps the key (lookup)");

  // Rotation as deploy/README.md has it: a new key first, with kubectl; the next upgrade keeps both.
  const newKey = generateKeyPairSync("ec", { namedCurve: "P-256" })
    .privateKey.export({ format: "pem", type: "sec1" })
    .toString();
  const rotatedFile = join(work, "keys.pem");
  writeFileSync(rotatedFile, newKey + installed);
  const manifest = ok(
    await kubectl([
      ...["-n", ns, "create", "secret", "generic", "userland-session-keys"],
      ...[`--from-file=keys.pem=${rotatedFile}`, "--dry-run=client", "-o", "yaml"],
    ]),
    "kubectl create --dry-run",
  );
  ok(await kubectl(["-n", ns, "apply", "-f", "-"], manifest), "kubectl apply the rotated Secret");
  await release("upgrade");
  const rotated = await stored();
  assert.equal(rotated, newKey + installed, "helm upgrade keeps the admin's rotation");
  const [first, second] = (await parsePemSigningKeys(rotated)).keys;
  assert.equal(
    second?.kid,
    (await parsePemSigningKeys(installed)).keys[0]?.kid,
    "the old key verifies still",
  );
  assert.equal(first?.kid, (await parsePemSigningKeys(newKey)).keys[0]?.kid, "the new key signs");

  // helm uninstall leaves the Secret (resource-policy: keep); a reinstall takes it over, same keys.
  ok(await uninstall(), "helm uninstall");
  assert.equal(await stored(), rotated, "the Secret outlives helm uninstall");
  await release("install");
  assert.equal(await stored(), rotated, "a reinstall keeps the keys");
});
