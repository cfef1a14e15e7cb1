/**
 * The user-manager with its console on, against the real control plane: sessions signed by a test
 * key (as the auth service signs them), teachers appointed by real RoleBindings to the prefixed
 * session user or group, and form posts as a browser sends them.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { pino } from "pino";
import { k8s } from "../../../lib/kube.ts";
import { KubeRest } from "../../../lib/kubeRest.ts";
import {
  SESSION_COOKIE,
  createSessionSigner,
  generateSigningKey,
  parseSigningKeys,
  publicJwks,
} from "../../../lib/session.ts";
import { eventually, testCluster } from "../../../test/support/cluster.ts";
import type { UserManagerConfig } from "../config.ts";
import { startUserManager, type Harness, type HarnessOptions } from "./support.ts";

export const CONSOLE_ORIGIN = "https://console.example.test";
export const LOGIN_URL = "https://auth.example.test/login";
export const USER_PREFIX = "userland:";
export const GROUP_PREFIX = "userland:group:";

export const TEACHER_RULES: k8s.V1PolicyRule[] = [
  {
    apiGroups: ["userland.dev"],
    resources: ["userlands"],
    verbs: ["get", "list", "create", "patch", "delete"],
  },
];

export interface ConsoleHarness extends Harness {
  /** Every JSON log line the service wrote. */
  logs: Record<string, unknown>[];
  /** A session cookie header for `user` with `groups`, as the auth service signs it. */
  cookie(user: string, groups?: string[]): Promise<string>;
  /** A Role of `rules` bound to the session user or group (prefixed here), in effect when it returns. */
  appoint(subject: { user: string } | { group: string }, rules?: k8s.V1PolicyRule[]): Promise<void>;
  /** A form POST from the console's own page (or from `origin`), signed in as `cookie`. */
  post(
    path: string,
    cookie: string,
    fields: Record<string, string | string[]>,
    origin?: string,
  ): Promise<Response>;
  /** A GET as a browser with `cookie`, redirects not followed. */
  page(path: string, cookie: string): Promise<{ status: number; text: string; location: string | null }>;
}

let roleCount = 0;

/** The console's session settings, verifying sessions signed by the keys in `keysFile`. */
export function consoleConfig(
  keysFile: string,
): Pick<UserManagerConfig, "sessionKeysFile" | "loginUrl" | "consoleUrl"> {
  return {
    sessionKeysFile: keysFile,
    loginUrl: new URL(LOGIN_URL),
    consoleUrl: new URL(`${CONSOLE_ORIGIN}/console/`),
  };
}

/**
 * The console's settings with a new session key (its public half in a file, as the chart mounts
 * it), and a session cookie header for `user` with `groups`, as the auth service signs it.
 */
export async function consoleSessions(t: TestContext): Promise<{
  config: Pick<UserManagerConfig, "sessionKeysFile" | "loginUrl" | "consoleUrl">;
  cookie: (user: string, groups?: string[]) => Promise<string>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "userland-console-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const keys = await parseSigningKeys({ keys: [await generateSigningKey()] });
  const keysFile = join(dir, "public.json");
  await writeFile(keysFile, JSON.stringify(publicJwks(keys)));
  const signer = createSessionSigner(keys);
  return {
    config: consoleConfig(keysFile),
    cookie: async (user, groups = []) => `${SESSION_COOKIE}=${await signer.sign(user, 600, groups)}`,
  };
}

export async function startConsole(t: TestContext, opts: HarnessOptions = {}): Promise<ConsoleHarness> {
  const sessions = await consoleSessions(t);

  const logs: Record<string, unknown>[] = [];
  const log = pino(
    { level: "info" },
    { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const h = await startUserManager(t, {
    log,
    ...opts,
    config: { ...sessions.config, ...opts.config },
  });
  const cluster = await testCluster();
  const rbac = cluster.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const admin = new KubeRest(cluster.kc);
  t.after(() => admin.close());

  const appoint: ConsoleHarness["appoint"] = async (subject, rules = TEACHER_RULES) => {
    const name = `console-teacher-${++roleCount}`;
    await rbac.createNamespacedRole({ namespace: h.ns, body: { metadata: { name }, rules } });
    const k8sSubject =
      "user" in subject
        ? { kind: "User", name: USER_PREFIX + subject.user, apiGroup: "rbac.authorization.k8s.io" }
        : { kind: "Group", name: GROUP_PREFIX + subject.group, apiGroup: "rbac.authorization.k8s.io" };
    await rbac.createNamespacedRoleBinding({
      namespace: h.ns,
      body: {
        metadata: { name },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
        subjects: [k8sSubject],
      },
    });
    const first = rules[0];
    if (!first) return;
    // "userlands", or a subresource such as "userlands/visit".
    const [resource = "userlands", subresource] = (first.resources?.[0] ?? "userlands").split("/");
    await eventually(`the Role for ${k8sSubject.name} to take effect`, async () => {
      const review = await admin.create<{ status?: { allowed?: boolean } }>(
        `/apis/authorization.k8s.io/v1/namespaces/${h.ns}/localsubjectaccessreviews`,
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: "LocalSubjectAccessReview",
          spec: {
            ...(k8sSubject.kind === "User"
              ? { user: k8sSubject.name }
              : { user: "someone", groups: [k8sSubject.name] }),
            resourceAttributes: {
              namespace: h.ns,
              group: "userland.dev",
              resource,
              ...(subresource ? { subresource } : {}),
              verb: first.verbs[0],
              name: first.resourceNames?.[0],
            },
          },
        },
      );
      return review.status?.allowed === true;
    });
  };

  return {
    ...h,
    logs,
    cookie: sessions.cookie,
    appoint,
    post: (path, cookie, fields, origin = CONSOLE_ORIGIN) => {
      const body = new URLSearchParams();
      for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) body.append(k, value);
      return fetch(h.base + path, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
        body,
      });
    },
    page: async (path, cookie) => {
      const r = await fetch(h.base + path, { redirect: "manual", headers: { cookie, accept: "text/html" } });
      return { status: r.status, text: await r.text(), location: r.headers.get("location") };
    },
  };
}

/** The value of a hidden input in a page, unescaped as a browser reads it. */
export function hiddenValue(page: string, name: string): string | undefined {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(page);
  return match?.[1]?.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)));
}
