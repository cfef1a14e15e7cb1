/**
 * The user-manager in-process against the real control plane, under a ServiceAccount with exactly
 * the rights it documents (permissions.ts), plus callers with real ServiceAccount tokens:
 * a teacher (Userland CRUD), a student (no rights).
 */
import assert from "node:assert/strict";
import type { ReachPod } from "../archiveTransfer.ts";
import type { TestContext } from "node:test";
import { k8s } from "../../../lib/kube.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import { createLogger, type Logger } from "../../../lib/logger.ts";
import {
  eventually,
  serviceAccountToken,
  testCluster,
  testNamespace,
} from "../../../test/support/cluster.ts";
import { grantChartRights } from "../../../test/support/chartRights.ts";
import { installCrds } from "../../../test/support/operator.ts";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getUserland,
  patchUserland,
  simpleTemplateSpec,
  tryGet,
  userlandsPath,
} from "../../../test/support/resources.ts";
import { buildApp, type UserManagerApp } from "../app.ts";
import { defaultConfig, type UserManagerConfig } from "../config.ts";
import { createMetrics, type Metrics } from "../metrics.ts";
import { missingPermissions } from "../permissions.ts";

/**
 * The admin's reads and writes. KubeRest sends them again on 429: other test files (other
 * processes) re-apply the CRDs when they start, and a CRD's storage answers 429 for a moment after
 * each update.
 */
export const admin = {
  createUserland,
  getUserland,
  patchUserland,
  tryGetUserland: (ns: string, name: string) => tryGet<Userland>(userlandsPath(ns, name)),
  listUserlands: async (ns: string): Promise<Userland[]> =>
    (await (await adminRest()).list<Userland>(userlandsPath(ns))).items,
  patchStatus: async (ns: string, name: string, status: unknown) =>
    (await adminRest()).patch(`${userlandsPath(ns, name)}/status`, { status }),
};

export const USERLAND_VERBS = ["get", "list", "create", "patch", "delete"];

export interface Harness {
  ns: string;
  base: string;
  app: UserManagerApp;
  metrics: Metrics;
  /** The service's own client (its ServiceAccount). */
  rest: KubeRest;
  teacher: string;
  student: string;
  /** A token for a new ServiceAccount with a Role of these rules in the test namespace. */
  callerWith(name: string, rules: k8s.V1PolicyRule[]): Promise<string>;
  call(method: string, path: string, opts?: CallOptions): Promise<ApiResponse>;
  /** The app's /metrics page, as main.ts serves it on the admin port (never on `base`). */
  metricsText(): Promise<string>;
}

export interface CallOptions {
  token?: string | undefined;
  body?: unknown;
  /** Sent as is, with this content type. */
  raw?: { contentType: string; text: string };
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

const rbacApi = async () => (await testCluster()).kc.makeApiClient(k8s.RbacAuthorizationV1Api);

/** A Role of `rules` for the ServiceAccount `subject` (a caller of the service, not the service). */
async function role(ns: string, name: string, rules: k8s.V1PolicyRule[], subject: string): Promise<void> {
  const rbac = await rbacApi();
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ kind: "ServiceAccount", name: subject, namespace: ns }],
    },
  });
}

export interface HarnessOptions {
  config?: Partial<UserManagerConfig>;
  /** Templates to create with the admin client (default: "code" and "jupyter"). */
  templates?: string[];
  /** The service's logger (default: silent, or debug with SHOW_USER_MANAGER_LOGS). */
  log?: Logger;
  /** How the service dials archive and upload pods (the real node: through a relay). */
  reachTransferPod?: ReachPod;
}

/** The service's client for a namespace: its ServiceAccount, granted and with the grants in effect. */
export async function userManagerRest(
  t: TestContext,
  ns: string,
): Promise<{ rest: KubeRest; token: string; closeFirst: (close: () => Promise<unknown>) => void }> {
  const cluster = await testCluster();
  const account = await grantChartRights("user-manager", ns, { scope: t, cluster });
  const token = await serviceAccountToken(ns, account, cluster);
  const rest = new KubeRest(cluster.kubeConfigForToken(token, ns), "userland-user-manager-test");
  // What uses the client closes first: a closing client waits for its requests, and an app's
  // watch ends only when the app closes (it held every test for a watch's idle timeout).
  const users: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const close of users) await close();
    await rest.close();
  });
  // RBAC reaches the authorizer through an informer: wait until every grant is in effect.
  await eventually(
    "the user-manager's RBAC to take effect",
    async () =>
      (await missingPermissions(rest, ns)).length + (await missingPermissions(rest, ns, "own")).length === 0,
  );
  return { rest, token, closeFirst: (close) => users.push(close) };
}

export async function startUserManager(t: TestContext, opts: HarnessOptions = {}): Promise<Harness> {
  await installCrds();
  const ns = await testNamespace(t, "um");
  for (const name of opts.templates ?? ["code", "jupyter"])
    await createTemplate(ns, name, simpleTemplateSpec(`registry.invalid/${name}:1`));
  const { rest, closeFirst } = await userManagerRest(t, ns);

  const metrics = createMetrics();
  const app = await buildApp({
    config: defaultConfig(opts.config),
    rest,
    namespace: ns,
    metrics,
    log: opts.log ?? createLogger("user-manager", process.env.SHOW_USER_MANAGER_LOGS ? "debug" : "silent"),
    ...(opts.reachTransferPod ? { reachTransferPod: opts.reachTransferPod } : {}),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  closeFirst(() => app.close());
  const address = app.server.address();
  assert.ok(address && typeof address === "object");
  const base = `http://127.0.0.1:${address.port}`;

  const call = async (method: string, path: string, o: CallOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined;
    if (o.raw) {
      headers["content-type"] = o.raw.contentType;
      body = o.raw.text;
    } else if (o.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(o.body);
    }
    const r = await fetch(base + path, { method, headers, body });
    const text = await r.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      // not JSON (a page, an empty 404)
    }
    return { status: r.status, headers: r.headers, text, json };
  };

  const callerWith = async (name: string, rules: k8s.V1PolicyRule[]): Promise<string> => {
    await role(ns, name, rules, name);
    const token = await serviceAccountToken(ns, name);
    // Wait until the grant is visible to the authorizer (a LocalSubjectAccessReview as the admin).
    const user = `system:serviceaccount:${ns}:${name}`;
    const first = rules[0];
    if (first) {
      const admin = new KubeRest((await testCluster()).kc);
      await eventually(`the Role of ${name} to take effect`, async () => {
        const review = await admin.create<{ status?: { allowed?: boolean } }>(
          `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
          {
            apiVersion: "authorization.k8s.io/v1",
            kind: "LocalSubjectAccessReview",
            spec: {
              user,
              groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`, "system:authenticated"],
              resourceAttributes: {
                namespace: ns,
                group: first.apiGroups?.[0],
                // "userlands", or a subresource such as "userlands/sessions".
                resource: first.resources?.[0]?.split("/")[0],
                subresource: first.resources?.[0]?.split("/")[1],
                verb: first.verbs[0],
                name: first.resourceNames?.[0],
              },
            },
          },
        );
        return review.status?.allowed === true;
      });
      await admin.close();
    }
    return token;
  };

  const teacher = await callerWith("teacher", [
    { apiGroups: ["userland.dev"], resources: ["userlands"], verbs: USERLAND_VERBS },
  ]);
  const student = await serviceAccountToken(ns, "student");
  const metricsText = () => metrics.registry.metrics();
  return { ns, base, app, metrics, rest, teacher, student, callerWith, call, metricsText };
}

/** The value of one sample of a Prometheus text exposition, 0 when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (wanted.every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(" ").pop());
  }
  return 0;
}
