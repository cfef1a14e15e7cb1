/**
 * The lean kubeconfig reader (no cluster needed): what it reads from kubeconfig files and from the
 * in-cluster ServiceAccount, that token files are read again when rotated, and that any other
 * kubeconfig is handed to client-node.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { stringify } from "yaml";
import {
  inClusterConnection,
  leanConnectionFromFile,
  loadKubeConnection,
  type ConnectionOptions,
  type KubeConnection,
} from "../kubeConnection.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeconnection-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A kubeconfig whose current context is "here", with the given cluster and user entries. */
function kubeconfig(dir: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "here",
      contexts: [
        { name: "elsewhere", context: { cluster: "other", user: "other" } },
        { name: "here", context: { cluster: "c", user: "u" } },
      ],
      clusters: [
        { name: "other", cluster: { server: "https://other.example:6443" } },
        { name: "c", cluster },
      ],
      users: [
        { name: "other", user: { token: "not-this-one" } },
        { name: "u", user },
      ],
    }),
  );
  return path;
}

async function applied(connection: KubeConnection): Promise<ConnectionOptions> {
  const opts: ConnectionOptions = {};
  await connection.applyToHTTPSOptions(opts);
  return opts;
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

test("a kubeconfig with a token and CA data: the current context's server, CA and bearer token", async (t) => {
  const path = kubeconfig(
    tempDir(t),
    { server: "https://127.0.0.1:6443/", "certificate-authority-data": b64("CA PEM") },
    { token: "secret-token" },
  );
  const connection = leanConnectionFromFile(path);
  assert.ok(connection);
  assert.deepEqual(connection.getCurrentCluster(), { server: "https://127.0.0.1:6443" });
  const opts = await applied(connection);
  assert.equal(opts.ca?.toString(), "CA PEM");
  assert.equal(opts.headers?.Authorization, "Bearer secret-token");
  assert.equal(opts.rejectUnauthorized, undefined);
  assert.equal(opts.cert, undefined);
});

test("client certificates and the CA from files relative to the kubeconfig; insecure-skip-tls-verify and impersonation", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "ca.crt"), "CA FILE");
  writeFileSync(join(dir, "client.crt"), "CERT FILE");
  const path = kubeconfig(
    dir,
    { server: "https://k8s.example", "certificate-authority": "ca.crt", "insecure-skip-tls-verify": true },
    { "client-certificate": "client.crt", "client-key-data": b64("KEY DATA"), as: "someone" },
  );
  const opts = await applied(leanConnectionFromFile(path) as KubeConnection);
  assert.equal(opts.ca?.toString(), "CA FILE");
  assert.equal(opts.cert?.toString(), "CERT FILE");
  assert.equal(opts.key?.toString(), "KEY DATA");
  assert.equal(opts.rejectUnauthorized, false);
  assert.deepEqual(opts.headers, { "Impersonate-User": "someone" });
});

test("a token file is read again after a minute, when a rotated token may be in it", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "token"), "first\n");
  const path = kubeconfig(dir, { server: "https://k8s.example" }, { tokenFile: "token" });
  const connection = leanConnectionFromFile(path) as KubeConnection;
  assert.equal((await applied(connection)).headers?.Authorization, "Bearer first");
  writeFileSync(join(dir, "token"), "second\n");
  assert.equal((await applied(connection)).headers?.Authorization, "Bearer first", "not read again at once");

  writeFileSync(join(dir, "ca.crt"), "SA CA");
  writeFileSync(join(dir, "token"), "sa-token-1");
  let now = 0;
  const inCluster = inClusterConnection(
    { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
    dir,
    () => now,
  );
  assert.deepEqual(inCluster.getCurrentCluster(), { server: "https://[fd00::1]:443" });
  let opts = await applied(inCluster);
  assert.equal(opts.ca?.toString(), "SA CA");
  assert.equal(opts.headers?.Authorization, "Bearer sa-token-1");
  writeFileSync(join(dir, "token"), "sa-token-2");
  now = 59_000;
  assert.equal((await applied(inCluster)).headers?.Authorization, "Bearer sa-token-1");
  now = 61_000;
  opts = await applied(inCluster);
  assert.equal(opts.headers?.Authorization, "Bearer sa-token-2");
});

test("outside a pod without KUBECONFIG, the error says what is missing", () => {
  assert.throws(() => inClusterConnection({}), /KUBECONFIG is not set/);
});

test("a missing context or server is an error naming the file", (t) => {
  const dir = tempDir(t);
  const path = join(dir, "kubeconfig");
  writeFileSync(path, stringify({ "current-context": "nowhere", contexts: [] }));
  assert.throws(() => leanConnectionFromFile(path), /no context "nowhere"/);
  const noServer = kubeconfig(dir, {}, { token: "x" });
  assert.throws(() => leanConnectionFromFile(noServer), /cluster "c" has no server/);
});

test("a kubeconfig that needs more (an exec plugin) is read by client-node", async (t) => {
  const path = kubeconfig(
    tempDir(t),
    { server: "https://k8s.example" },
    { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "get-token" } },
  );
  assert.equal(leanConnectionFromFile(path), undefined);
  const connection = await loadKubeConnection(path);
  assert.equal(connection.constructor.name, "KubeConfig");
  assert.deepEqual(connection.getCurrentCluster()?.server, "https://k8s.example");
});

/** The client-node modules a process loads, seen by a module resolve hook. */
function clientNodeModulesLoaded(args: string[]): string[] {
  const hook = `import { registerHooks } from "node:module";
    registerHooks({ resolve(specifier, context, next) {
      const result = next(specifier, context);
      if (result.url.includes("@kubernetes/client-node")) process._rawDebug("LOADED " + result.url);
      return result;
    } });`;
  const run = spawnSync(
    process.execPath,
    ["--import", `data:text/javascript,${encodeURIComponent(hook)}`, ...args],
    { encoding: "utf8" },
  );
  assert.equal(run.status, 0, run.stderr);
  return run.stderr.split("\n").filter((line) => line.startsWith("LOADED "));
}

test("the operator's code does not load client-node (it would cost a third of its memory)", () => {
  // The hook sees client-node where it is loaded.
  assert.notDeepEqual(clientNodeModulesLoaded([join(repoRoot, "lib", "kube.ts")]), []);
  // `--help` loads every module main.ts imports, and exits before connecting anywhere.
  assert.deepEqual(clientNodeModulesLoaded([join(repoRoot, "operator", "main.ts"), "--help"]), []);
});

test("the proxy's and the user-manager's code do not load client-node either", () => {
  for (const main of ["services/proxy/main.ts", "services/user-manager/main.ts"])
    assert.deepEqual(clientNodeModulesLoaded([join(repoRoot, main), "--help"]), [], main);
});
