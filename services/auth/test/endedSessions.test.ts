/**
 * Sessions ended before they expire (issue 29 item 5) at the auth service's /forward-auth and
 * /whoami, against the real control plane: two replicas, each with its own informer of the session
 * records, running under the auth ServiceAccount's real token with only list and watch on
 * configmaps (the chart's rule). A session signed out on one browser, then "sign out everywhere" /
 * a teacher's sessions-valid-after, are refused by both replicas within seconds, like the proxy
 * refuses them.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { decodeJwt } from "jose";
import { GROUP } from "../../../api/v1alpha1/index.ts";
import { createLogger } from "../../../lib/logger.ts";
import { createSessionSigner, loadSigningKeys, publicJwks } from "../../../lib/session.ts";
import {
  eventually,
  serviceAccountToken,
  testCluster,
  testNamespace,
} from "../../../test/support/cluster.ts";
import { installCrds } from "../../../test/support/operator.ts";
import { adminRest, createUserland } from "../../../test/support/resources.ts";
import { endSessionsOf } from "../../user-manager/sessionRecordWriter.ts";
import { consoleConfig } from "../../user-manager/test/consoleSupport.ts";
import { startUserManager } from "../../user-manager/test/support.ts";
import { buildApp } from "../app.ts";
import { loadAuthConfig } from "../config.ts";
import { listen, newKeysFile, tempDir } from "./support/auth.ts";

/** How soon every replica must refuse an ended session (the proxy's test asks the same). */
const WITHIN_MS = 5_000;

/** The rule the chart gives the auth service for ended sessions: list and watch session records. */
const READ_RECORDS = { apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"] };

/** The auth ServiceAccount with the chart's right for ended sessions. */
async function authKubeConfig(namespace: string): Promise<k8s.KubeConfig> {
  const cluster = await testCluster();
  const rbac = cluster.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: "userland-auth" },
      rules: [READ_RECORDS],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: "userland-auth" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "userland-auth" },
      subjects: [{ kind: "ServiceAccount", name: "userland-auth", namespace }],
    },
  });
  return cluster.kubeConfigForToken(
    await serviceAccountToken(namespace, "userland-auth", cluster),
    namespace,
  );
}

async function startReplica(
  t: TestContext,
  keysFile: string,
  namespace: string,
  kc: k8s.KubeConfig,
  env: Record<string, string> = {},
) {
  const listener = await listen();
  const config = loadAuthConfig({
    AUTH_PUBLIC_URL: listener.url,
    AUTH_COOKIE_SECURE: "false",
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_GITHUB_CLIENT_ID: "client",
    AUTH_GITHUB_CLIENT_SECRET: "secret",
    AUTH_ENDED_SESSIONS: "true",
    ...env,
  });
  const app = await buildApp(config, {
    log: createLogger("auth-test", process.env.TEST_LOG_LEVEL ?? "silent"),
    kube: { kc, namespace },
  });
  await app.ready();
  listener.server.on("request", (req, res) => app.routing(req, res));
  t.after(async () => {
    await app.close();
    await listener.close();
  });
  return listener.url;
}

test("an ended session is refused by /forward-auth and /whoami on two auth replicas within seconds", async (t) => {
  await installCrds();
  const ns = await testNamespace(t, "auth-ended");
  const dir = await tempDir();
  t.after(() => dir.remove());
  const keysFile = (await newKeysFile(dir)).file;
  const signer = createSessionSigner(await loadSigningKeys(keysFile));
  const kc = await authKubeConfig(ns);
  const replicas = [await startReplica(t, keysFile, ns, kc), await startReplica(t, keysFile, ns, kc)];

  const ask = async (base: string, path: string, token: string) =>
    (await fetch(new URL(path, base), { headers: { cookie: `userland_session=${token}` } })).status;
  /** Both replicas answer `status` for `token` at both endpoints within WITHIN_MS; how long it took. */
  const everywhere = async (token: string, status: number, what: string) => {
    const since = Date.now();
    for (const [i, base] of replicas.entries())
      for (const path of ["forward-auth", "whoami"])
        await eventually(
          `replica ${i + 1}'s /${path} to answer ${status} for ${what}`,
          async () => (await ask(base, path, token)) === status,
          WITHIN_MS,
          50,
        );
    return Date.now() - since;
  };

  const lab = await signer.sign("mallory", 3600);
  const laptop = await signer.sign("mallory", 3600);
  await everywhere(lab, 200, "the lab computer's session (caches synced)");

  // Signed out on the lab computer: the mark the user-manager writes for the proxy's sign-out.
  const { sid, exp } = decodeJwt(lab) as { sid: string; exp: number };
  const endSessions = async (what: Parameters<typeof endSessionsOf>[3]) =>
    endSessionsOf(await adminRest(), ns, "mallory", what, () => Date.now());
  await endSessions({ sid, exp });
  console.log(
    `# the signed-out session was refused by both replicas after ${await everywhere(lab, 401, "the signed-out session")} ms`,
  );
  await everywhere(laptop, 200, "the laptop's session, not signed out");

  // A teacher ends every session issued until now: the stolen laptop.
  await endSessions({ all: true });
  console.log(
    `# sessions-valid-after: refused by both replicas after ${await everywhere(laptop, 401, "the laptop's session")} ms`,
  );
  // Another student's session is not touched.
  await everywhere(await signer.sign("alice", 3600), 200, "another student's session");
});

test("a session signed out at the auth service's own /logout is refused by /forward-auth and /whoami on two auth replicas within seconds; the user's other session still works", async (t) => {
  const dir = await tempDir();
  t.after(() => dir.remove());
  const keysFile = (await newKeysFile(dir)).file;
  const keys = await loadSigningKeys(keysFile);
  const signer = createSessionSigner(keys);
  // The user-manager verifies the relayed session with the auth service's public keys (the chart's
  // USER_MANAGER_SESSION_JWKS_URL), as for the console.
  const um = await startUserManager(t, {
    templates: [],
    config: consoleConfig(await dir.file("public.json", JSON.stringify(publicJwks(keys)))),
  });
  await createUserland(um.ns, "mallory-code", "mallory", "code");
  // The auth ServiceAccount with the chart's two rights: read records, and the one the user-manager
  // checks before it ends a session whose token the auth service sends. No patch.
  const token = await um.callerWith("userland-auth", [
    READ_RECORDS,
    { apiGroups: [GROUP], resources: ["userlands/sessions"], verbs: ["delete"] },
  ]);
  const kc = (await testCluster()).kubeConfigForToken(token, um.ns);
  const env = {
    AUTH_SIGN_OUT_URL: um.base,
    AUTH_SIGN_OUT_TOKEN_FILE: await dir.file("user-manager-token", token),
  };
  const replicas = [
    await startReplica(t, keysFile, um.ns, kc, env),
    await startReplica(t, keysFile, um.ns, kc, env),
  ];
  const ask = async (base: string, path: string, session: string) =>
    (await fetch(new URL(path, base), { headers: { cookie: `userland_session=${session}` } })).status;
  const everywhere = async (session: string, status: number, what: string) => {
    const since = Date.now();
    for (const [i, base] of replicas.entries())
      for (const path of ["forward-auth", "whoami"])
        await eventually(
          `replica ${i + 1}'s /${path} to answer ${status} for ${what}`,
          async () => (await ask(base, path, session)) === status,
          WITHIN_MS,
          50,
        );
    return Date.now() - since;
  };

  const lab = await signer.sign("mallory", 3600);
  const laptop = await signer.sign("mallory", 3600);
  await everywhere(lab, 200, "the lab computer's session (caches synced)");

  // The lab computer signs out at the auth service itself (no proxy on the way); someone copied
  // its cookie before.
  const signingOut = Date.now();
  const logout = await fetch(new URL("logout", replicas[0]), {
    method: "POST",
    headers: { cookie: `userland_session=${lab}` },
    redirect: "manual",
  });
  assert.equal(logout.status, 303, "signed out everywhere: on to the next page, no warning");
  assert.match(logout.headers.get("set-cookie") ?? "", /userland_session=;/);
  const answered = Date.now() - signingOut;
  const refused = await everywhere(lab, 401, "the copied cookie of the signed-out session");
  console.log(
    `# /logout answered after ${answered} ms; the copied cookie was refused by both replicas ${refused} ms later`,
  );
  await everywhere(laptop, 200, "the laptop's session, not signed out");
  await everywhere(await signer.sign("alice", 3600), 200, "another student's session");
});
