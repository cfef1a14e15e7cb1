/** The real entry point: --help, configuration errors, start-up checks and graceful shutdown. */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { kubeconfigYaml } from "../../../cluster/controlPlane.ts";
import {
  eventually,
  serviceAccountToken,
  testCluster,
  testNamespace,
} from "../../../test/support/cluster.ts";
import { installCrds } from "../../../test/support/operator.ts";
import { ConfigError } from "../../../lib/config.ts";
import { loadUserManagerConfig, settings } from "../config.ts";
import { userManagerRest } from "./support.ts";
import { repoRoot } from "../../../cluster/repoRoot.ts";

const main = join(repoRoot, "services", "user-manager", "main.ts");

test("--help lists every setting", () => {
  const r = spawnSync(process.execPath, [main, "--help"], { encoding: "utf8", env: {}, timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  for (const s of Object.values(settings)) assert.match(r.stdout, new RegExp(`^  ${s.env} `, "m"), s.env);
  assert.match(r.stdout, /LOG_LEVEL/);
});

test("an invalid configuration names every variable to fix and exits 2", () => {
  const r = spawnSync(process.execPath, [main], {
    encoding: "utf8",
    timeout: 20_000,
    env: {
      USER_MANAGER_PORT: "http",
      USER_MANAGER_ROSTER_MAX_ROWS: "0",
      USER_MANAGER_TOKEN_CACHE_TTL: "soon",
    },
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /USER_MANAGER_PORT="http" is invalid: expected a whole number from 0 to 65535/);
  assert.match(r.stderr, /USER_MANAGER_ROSTER_MAX_ROWS="0" is invalid/);
  assert.match(r.stderr, /USER_MANAGER_TOKEN_CACHE_TTL="soon" is invalid/);
  const noKube = spawnSync(process.execPath, [main], {
    encoding: "utf8",
    env: { USER_MANAGER_PORT: "0" },
    timeout: 20_000,
  });
  assert.equal(noKube.status, 2);
  assert.match(noKube.stderr, /no Kubernetes credentials: set KUBECONFIG/);
});

test("the admin listener is 0.0.0.0:9090 unless set, and never the API's port", () => {
  const config = loadUserManagerConfig({});
  assert.deepEqual([config.adminHost, config.adminPort], ["0.0.0.0", 9090]);
  assert.throws(
    () => loadUserManagerConfig({ USER_MANAGER_PORT: "9090" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.join() === "USER_MANAGER_PORT and USER_MANAGER_ADMIN_PORT must differ",
  );
  // Reported with the console's problems: one pass to fix a deployment.
  assert.throws(
    () =>
      loadUserManagerConfig({
        USER_MANAGER_ADMIN_PORT: "8080",
        USER_MANAGER_LOGIN_URL: "https://a.example/login",
      }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.some((p) => p.includes("must differ")) &&
      e.problems.some((p) => p.includes("USER_MANAGER_SESSION_JWKS_URL")),
  );
  loadUserManagerConfig({ USER_MANAGER_PORT: "9090", USER_MANAGER_ADMIN_HOST: "127.0.0.1" });
});

interface Running {
  port: number;
  /** The admin listener's URL, from the start-up log line. */
  adminUrl: string | undefined;
  logs: () => string;
  exited: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
}

async function run(t: TestContext, ns: string, token: string): Promise<Running> {
  const { info } = await testCluster();
  const dir = mkdtempSync(join(tmpdir(), "user-manager-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    kubeconfigYaml(info.server, readFileSync(info.caFile), "user-manager", token, ns),
  );
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: kubeconfig,
      USERLAND_NAMESPACE: ns,
      USER_MANAGER_HOST: "127.0.0.1",
      USER_MANAGER_PORT: "0",
      USER_MANAGER_ADMIN_HOST: "127.0.0.1",
      USER_MANAGER_ADMIN_PORT: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  const port = await eventually("the service to listen", () => {
    if (child.exitCode !== null) throw new Error(`exited: ${output}`);
    const m = /"address":"http:\/\/127\.0\.0\.1:(\d+)".*user-manager listening/.exec(output);
    return m ? Number(m[1]) : undefined;
  });
  const adminUrl = /"adminUrl":"(http:\/\/127\.0\.0\.1:\d+)".*user-manager listening/.exec(output)?.[1];
  return { port, adminUrl, logs: () => output, exited, kill: (s) => child.kill(s) };
}

test("main.ts serves, /metrics only on its admin port, checks its own permissions and shuts down gracefully on SIGTERM", async (t) => {
  await installCrds();
  const ns = await testNamespace(t, "um");
  const { token } = await userManagerRest(t, ns);
  const svc = await run(t, ns, token);
  await eventually("the permission check", () =>
    svc.logs().includes("the ServiceAccount has every permission it needs"),
  );
  assert.doesNotMatch(svc.logs(), /lacks a permission/);
  const base = `http://127.0.0.1:${svc.port}`;
  assert.equal((await fetch(`${base}/readyz`)).status, 200);
  assert.equal((await fetch(`${base}/api/v1/userlands`)).status, 401);
  // The API's port is routed from the internet (/console, /api/v1): no counters there. Without
  // credentials every path but the public ones is a 401; a signed-in caller learns it is no page.
  const anonymous = await fetch(`${base}/metrics`);
  assert.equal(anonymous.status, 401);
  assert.doesNotMatch(await anonymous.text(), /userland_user_manager_/);
  const signedIn = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(signedIn.status, 404);
  assert.doesNotMatch(await signedIn.text(), /userland_user_manager_/);

  assert.ok(svc.adminUrl, `the admin URL is logged: ${svc.logs()}`);
  assert.notEqual(svc.adminUrl, base);
  const metrics = await fetch(`${svc.adminUrl}/metrics`);
  assert.equal(metrics.status, 200);
  const text = await metrics.text();
  assert.match(text, /userland_user_manager_kube_requests_total\{verb="GET",code="200"\}/);
  assert.match(text, /userland_user_manager_process_cpu_seconds_total/);
  assert.equal((await fetch(`${svc.adminUrl}/healthz`)).status, 200);

  svc.kill("SIGTERM");
  assert.equal(await svc.exited, 0);
  assert.match(svc.logs(), /shutting down/);
  assert.match(svc.logs(), /"msg":"stopped"/);
});

test("under a ServiceAccount without the rights it needs, main.ts says which and is not ready", async (t) => {
  await installCrds();
  const ns = await testNamespace(t, "um");
  const svc = await run(t, ns, await serviceAccountToken(ns, "powerless"));
  await eventually("the permission warnings", () => svc.logs().includes("localsubjectaccessreviews"));
  assert.match(
    svc.logs(),
    /lacks a permission it needs: create tokenreviews\.authentication\.k8s\.io \(cluster-wide\)/,
  );
  assert.match(
    svc.logs(),
    new RegExp(`lacks a permission it needs: delete userlands\\.userland\\.dev in namespace \\\\"${ns}\\\\"`),
  );
  const ready = await fetch(`http://127.0.0.1:${svc.port}/readyz`);
  assert.equal(ready.status, 503);
  assert.match(await ready.text(), /cannot list Userlands/);
  svc.kill("SIGTERM");
  assert.equal(await svc.exited, 0);
});
