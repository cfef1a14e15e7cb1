/**
 * A real Kubernetes control plane on loopback for tests, benchmarks and the local platform:
 * etcd, kube-apiserver (RBAC on, audit log), kube-controller-manager, kube-scheduler and kwok
 * (simulated nodes, so pods are scheduled and become Ready without a container runtime).
 *
 * Nothing here dials anything but 127.0.0.1. The Service and pod ranges (addresses.ts) are never
 * routed, so an address handed out by the cluster cannot reach a real host even by mistake. A real
 * node (cluster/node) can join; it reaches this API server through a relay of its own.
 */
import { execFileSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { LeanKubeConnection } from "../lib/kubeConnection.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { KUBERNETES_SERVICE_IP, KWOK_POD_CIDR, NODE_IP, SERVICE_CIDR } from "./addresses.ts";
import { heldPort, type HeldPort } from "./ports.ts";
import { ProcessGroup, waitFor } from "./processes.ts";

export { diesWithParent } from "./processes.ts";

const here = dirname(fileURLToPath(import.meta.url));

const ADMIN_USER = "userland-test-admin";
/** Start-up checks poll: a request that hangs is given up quickly and asked again. */
const REQUEST_TIMEOUT_MS = 5000;
/** The real node's name (cluster/node), known here because its kubelet's identity is. */
export const REAL_NODE_NAME = "userland-node";

/** Builds (first time) or finds the cached control-plane binaries; returns their directory. */
export function ensureBinaries(): string {
  if (process.env.USERLAND_CONTROL_PLANE_BIN) return process.env.USERLAND_CONTROL_PLANE_BIN;
  const out = execFileSync("bash", [join(here, "build.sh")], { stdio: ["ignore", "pipe", "inherit"] });
  return out.toString().trim().split("\n").pop() ?? "";
}

export interface ControlPlaneOptions {
  /** Working directory for certificates, data and logs (created; removed by `stop({ keepFiles: false })`). */
  dir: string;
  /** Number of simulated kwok nodes. */
  nodes?: number;
  /** Extra kube-apiserver flags, e.g. to tune it for a benchmark. */
  apiServerFlags?: string[];
  log?: (line: string) => void;
}

export interface ControlPlaneInfo {
  server: string;
  caFile: string;
  adminToken: string;
  kubeconfig: string;
  auditLog: string;
  dir: string;
  /** The control-plane binaries, kubectl among them. */
  binDir: string;
  pids: number[];
}

export class ControlPlane {
  readonly dir: string;
  private readonly opts: ControlPlaneOptions;
  private readonly log: (line: string) => void;
  private bin = "";
  private readonly processes: ProcessGroup;
  private ports = { etcd: 0, etcdPeer: 0, apiserver: 0 };
  private heldPorts: HeldPort[] = [];
  private adminToken = "";
  private adminRest: KubeRest | undefined;
  private nodeTokens = { kubelet: "", kubeProxy: "", addons: "" };

  constructor(opts: ControlPlaneOptions) {
    this.opts = opts;
    this.dir = opts.dir;
    this.log = opts.log ?? ((line) => process.stderr.write(`[control-plane] ${line}\n`));
    this.processes = new ProcessGroup(join(this.dir, "logs"), this.log);
  }

  /** Where the control-plane binaries (and kubectl) are; known after start(). */
  get binDir(): string {
    return this.bin;
  }

  get server(): string {
    return `https://127.0.0.1:${this.ports.apiserver}`;
  }
  get kubeconfigPath(): string {
    return join(this.dir, "admin.kubeconfig");
  }
  get caFile(): string {
    return join(this.dir, "pki", "ca.crt");
  }
  get auditLogPath(): string {
    return join(this.dir, "audit.log");
  }

  info(): ControlPlaneInfo {
    return {
      server: this.server,
      caFile: this.caFile,
      adminToken: this.adminToken,
      kubeconfig: this.kubeconfigPath,
      auditLog: this.auditLogPath,
      dir: this.dir,
      binDir: this.bin,
      pids: this.processes.pids(),
    };
  }

  /** Tokens for a real node's components (cluster/node), valid once start() has run. */
  get realNodeTokens(): { kubelet: string; kubeProxy: string; addons: string } {
    return { ...this.nodeTokens };
  }

  async start(): Promise<ControlPlaneInfo> {
    const started = Date.now();
    this.bin = ensureBinaries();
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(join(this.dir, "logs"), { recursive: true });
    // Go programs cannot take a passed socket (cluster/ports.ts): their ports are held for our life.
    this.heldPorts = [await heldPort(), await heldPort(), await heldPort()];
    const [etcd, etcdPeer, apiserver] = this.heldPorts.map((held) => held.port) as [number, number, number];
    this.ports = { etcd, etcdPeer, apiserver };
    this.adminToken = randomBytes(24).toString("hex");
    this.writePki();
    this.adminRest = new KubeRest(
      new LeanKubeConnection({ server: this.server, ca: readFileSync(this.caFile), token: this.adminToken }),
      "userland-control-plane",
    );
    this.writeConfigFiles();

    this.startEtcd();
    await this.waitFor(
      "etcd",
      async () => (await fetch(`http://127.0.0.1:${this.ports.etcd}/health`)).status === 200,
      30_000,
    );
    await this.startApiServer();
    this.startComponent("kube-controller-manager", this.controllerManagerArgs());
    this.startComponent("kube-scheduler", this.schedulerArgs());
    this.startComponent("kwok", this.kwokArgs());
    await this.createNodes(this.opts.nodes ?? 2);
    await this.waitFor("kwok", () => this.nodesReady(this.opts.nodes ?? 2), 60_000);
    await this.waitForServiceAccount("default");
    this.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)}s at ${this.server}`);
    return this.info();
  }

  /** Starts kube-apiserver (again) on the same port and waits until it is ready. */
  async startApiServer(): Promise<void> {
    this.startComponent("kube-apiserver", this.apiServerArgs());
    await this.waitFor("kube-apiserver", () => this.succeeds("/readyz"), 60_000);
  }

  /** Stops kube-apiserver alone, as an outage; etcd and the controllers keep running. */
  async stopApiServer(): Promise<void> {
    await this.processes.stop("kube-apiserver");
  }

  async restartApiServer(): Promise<void> {
    await this.stopApiServer();
    await this.startApiServer();
  }

  async stop(opts: { keepFiles?: boolean } = {}): Promise<void> {
    await this.processes.stopAll([
      "kwok",
      "kube-scheduler",
      "kube-controller-manager",
      "kube-apiserver",
      "etcd",
    ]);
    await this.adminRest?.close();
    for (const held of this.heldPorts.splice(0)) held.release();
    if (!opts.keepFiles) rmSync(this.dir, { recursive: true, force: true });
  }

  // --- configuration ------------------------------------------------------------------------

  private writePki(): void {
    const pki = join(this.dir, "pki");
    mkdirSync(pki, { recursive: true });
    const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: pki, stdio: "pipe" });
    openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "30",
      "-subj",
      "/CN=userland-test-ca",
    );
    // The real node (cluster/node) and its pods reach this API server at the node's address and
    // at the `kubernetes` Service, and verify it like on any cluster.
    const names = [
      "IP:127.0.0.1",
      "IP:::1",
      "DNS:localhost",
      `IP:${NODE_IP}`,
      `IP:${KUBERNETES_SERVICE_IP}`,
      "DNS:kubernetes",
      "DNS:kubernetes.default",
      "DNS:kubernetes.default.svc",
      "DNS:kubernetes.default.svc.cluster.local",
    ];
    writeFileSync(join(pki, "san.ext"), `subjectAltName=${names.join(",")}\n`);
    openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "apiserver.key",
      "-out",
      "apiserver.csr",
      "-subj",
      "/CN=kube-apiserver",
    );
    openssl(
      "x509",
      "-req",
      "-in",
      "apiserver.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "apiserver.crt",
      "-days",
      "30",
      "-extfile",
      "san.ext",
    );
    // ServiceAccount token signing key (TokenRequest API issues real tokens signed with it).
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(join(pki, "sa.key"), privateKey.export({ type: "pkcs8", format: "pem" }));
    writeFileSync(join(pki, "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));
  }

  private writeConfigFiles(): void {
    // Static tokens for the control plane's own components; people and services in tests use
    // ServiceAccount tokens from the TokenRequest API instead.
    const kcmToken = randomBytes(24).toString("hex");
    const schedulerToken = randomBytes(24).toString("hex");
    const kwokToken = randomBytes(24).toString("hex");
    this.nodeTokens = {
      kubelet: randomBytes(24).toString("hex"),
      kubeProxy: randomBytes(24).toString("hex"),
      addons: randomBytes(24).toString("hex"),
    };
    writeFileSync(
      join(this.dir, "tokens.csv"),
      [
        `${this.adminToken},${ADMIN_USER},uid-admin,"system:masters"`,
        `${kcmToken},system:kube-controller-manager,uid-kcm`,
        `${schedulerToken},system:kube-scheduler,uid-scheduler`,
        `${kwokToken},kwok,uid-kwok,"system:masters"`,
        // The real node's components, should one be started (cluster/node): the kubelet and
        // kube-proxy with the identities their built-in roles are bound to, the node's add-ons
        // (NetworkPolicy enforcer, volume provisioner) as admins of this disposable cluster.
        `${this.nodeTokens.kubelet},system:node:${REAL_NODE_NAME},uid-kubelet,"system:nodes"`,
        `${this.nodeTokens.kubeProxy},system:kube-proxy,uid-kube-proxy`,
        `${this.nodeTokens.addons},userland-node-addons,uid-node-addons,"system:masters"`,
      ].join("\n") + "\n",
    );
    this.writeKubeconfig(this.kubeconfigPath, ADMIN_USER, this.adminToken);
    this.writeKubeconfig(join(this.dir, "kcm.kubeconfig"), "kcm", kcmToken);
    this.writeKubeconfig(join(this.dir, "scheduler.kubeconfig"), "scheduler", schedulerToken);
    this.writeKubeconfig(join(this.dir, "kwok.kubeconfig"), "kwok", kwokToken);
    writeFileSync(
      join(this.dir, "scheduler.yaml"),
      stringify({
        apiVersion: "kubescheduler.config.k8s.io/v1",
        kind: "KubeSchedulerConfiguration",
        clientConnection: { kubeconfig: join(this.dir, "scheduler.kubeconfig"), qps: 500, burst: 1000 },
        leaderElection: { leaderElect: false },
      }),
    );
    // Metadata for every request: tests count the writes each identity sent (zero in steady state).
    writeFileSync(
      join(this.dir, "audit-policy.yaml"),
      stringify({
        apiVersion: "audit.k8s.io/v1",
        kind: "Policy",
        omitStages: ["RequestReceived"],
        rules: [{ level: "Metadata" }],
      }),
    );
  }

  writeKubeconfig(path: string, user: string, token: string, namespace = "default"): void {
    writeFileSync(path, kubeconfigYaml(this.server, readFileSync(this.caFile), user, token, namespace), {
      mode: 0o600,
    });
  }

  private startEtcd(): void {
    const { etcd, etcdPeer } = this.ports;
    this.startComponent("etcd", [
      "--name=default",
      `--data-dir=${join(this.dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${etcd}`,
      `--advertise-client-urls=http://127.0.0.1:${etcd}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      // Test data is disposable: skipping fsync makes every write several times faster.
      "--unsafe-no-fsync=true",
      "--quota-backend-bytes=4294967296",
      "--log-level=warn",
    ]);
  }

  private apiServerArgs(): string[] {
    const pki = join(this.dir, "pki");
    return [
      `--etcd-servers=http://127.0.0.1:${this.ports.etcd}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--secure-port=${this.ports.apiserver}`,
      `--tls-cert-file=${join(pki, "apiserver.crt")}`,
      `--tls-private-key-file=${join(pki, "apiserver.key")}`,
      `--client-ca-file=${join(pki, "ca.crt")}`,
      `--token-auth-file=${join(this.dir, "tokens.csv")}`,
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${join(pki, "sa.pub")}`,
      `--service-account-signing-key-file=${join(pki, "sa.key")}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--allow-privileged=true",
      // The API server is on loopback; the default reconciler refuses to publish a loopback endpoint.
      "--endpoint-reconciler-type=none",
      "--profiling=false",
      `--audit-policy-file=${join(this.dir, "audit-policy.yaml")}`,
      `--audit-log-path=${this.auditLogPath}`,
      "--audit-log-format=json",
      "--audit-log-mode=batch",
      "--audit-log-batch-max-wait=1s",
      // Tests and benchmarks count requests in audit.log: never rotate it away (the default is 100 MB).
      "--audit-log-maxsize=100000",
      "--max-requests-inflight=1000",
      "--max-mutating-requests-inflight=500",
      // Without it, a stop while clients (the controllers, kwok, an operator) hold watches waits
      // for them until the harness's 10 s grace ends in SIGKILL; with it, the watches are ended
      // after 1 s and the API server exits (stopApiServer: 10.0 s -> 1.1 s).
      "--shutdown-watch-termination-grace-period=1s",
      ...(this.opts.apiServerFlags ?? []),
    ];
  }

  private controllerManagerArgs(): string[] {
    const kubeconfig = join(this.dir, "kcm.kubeconfig");
    return [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      "--secure-port=0",
      "--leader-elect=false",
      "--use-service-account-credentials=true",
      `--service-account-private-key-file=${join(this.dir, "pki", "sa.key")}`,
      `--root-ca-file=${this.caFile}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // Defaults (20 qps) would take many minutes for the thousands of ReplicaSets in benchmarks.
      "--kube-api-qps=500",
      "--kube-api-burst=1000",
      "--concurrent-deployment-syncs=20",
      "--concurrent-replicaset-syncs=20",
      "--concurrent-gc-syncs=40",
    ];
  }

  private schedulerArgs(): string[] {
    return [`--config=${join(this.dir, "scheduler.yaml")}`, "--bind-address=127.0.0.1", "--secure-port=0"];
  }

  private kwokArgs(): string[] {
    return [
      `--kubeconfig=${join(this.dir, "kwok.kubeconfig")}`,
      `--config=${join(this.bin, "kwok-stages.yaml")}`,
      "--node-lease-duration-seconds=40",
      "--manage-all-nodes=false",
      "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
      `--cidr=${KWOK_POD_CIDR}`,
      "--node-ip=198.19.255.254",
      "--server-address=",
    ];
  }

  private async createNodes(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const node = {
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name: `kwok-node-${i}`,
          annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
          labels: { "kubernetes.io/hostname": `kwok-node-${i}`, "kubernetes.io/os": "linux", type: "kwok" },
        },
        status: {
          allocatable: { cpu: "1000", memory: "4Ti", pods: "10000" },
          capacity: { cpu: "1000", memory: "4Ti", pods: "10000" },
        },
      };
      await this.rest.create("/api/v1/nodes", node);
    }
  }

  private async nodesReady(count: number): Promise<boolean> {
    const { items: nodes } = await this.rest.list<{
      status?: { conditions?: { type: string; status: string }[] };
    }>("/api/v1/nodes", { timeoutMs: REQUEST_TIMEOUT_MS });
    const ready = nodes.filter((n) =>
      n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
    return ready.length >= count;
  }

  private async waitForServiceAccount(name: string): Promise<void> {
    await this.waitFor(
      `ServiceAccount ${name}`,
      () => this.succeeds(`/api/v1/namespaces/default/serviceaccounts/${name}`),
      60_000,
    );
  }

  // --- processes ----------------------------------------------------------------------------

  private startComponent(name: string, args: string[]): void {
    this.processes.start(name, join(this.bin, name), args);
  }

  private async waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const component = what.split(" ")[0] ?? what;
    const watched = ["etcd", "kube-apiserver", "kwok"].includes(component);
    await waitFor(what, check, timeoutMs, {
      ...(watched ? { alive: () => this.processes.has(component) } : {}),
      logs: join(this.dir, "logs"),
    });
  }

  /** True once a GET of `path` answers 2xx; any other answer rejects, which waitFor counts as "not yet". */
  private async succeeds(path: string): Promise<boolean> {
    await this.rest.get(path, { timeoutMs: REQUEST_TIMEOUT_MS });
    return true;
  }

  /** The API server as the test admin (used before any component or client is set up); made by start(). */
  get rest(): KubeRest {
    if (!this.adminRest) throw new Error("the control plane has not been started");
    return this.adminRest;
  }
}

export function kubeconfigYaml(
  server: string,
  ca: Buffer,
  user: string,
  token: string,
  namespace = "default",
): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "userland-test", cluster: { server, "certificate-authority-data": ca.toString("base64") } },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: "userland-test", user, namespace } }],
    "current-context": user,
  });
}
