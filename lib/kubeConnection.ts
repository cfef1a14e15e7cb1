/**
 * Where the API server is and how to authenticate to it: all that KubeRest (and with it the
 * informers) needs from a kubeconfig.
 *
 * client-node's KubeConfig provides this too, but importing it loads client-node's generated API
 * (every model and API class): about 35 MiB of the operator's resident memory, and a third of its
 * live heap, for a process that only sends JSON (docs/decisions/0002-operator.md, "Resource use").
 * loadKubeConnection() reads the two cases a component meets, the in-cluster ServiceAccount and a
 * kubeconfig file with a token or client certificates, itself, and hands every other kubeconfig
 * (exec plugins, auth providers, basic auth, proxies) to client-node, loaded only then.
 */
import { readFileSync } from "node:fs";
import { isIPv6 } from "node:net";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";

/** TLS material and headers for one request (the fields of https.RequestOptions that matter here). */
export interface ConnectionOptions {
  headers?: Record<string, string>;
  ca?: Buffer | string;
  cert?: Buffer | string;
  key?: Buffer | string;
  rejectUnauthorized?: boolean;
}

/** What KubeRest needs; client-node's KubeConfig has the same two methods. */
export interface KubeConnection {
  getCurrentCluster(): { server: string } | null;
  /** Fills in TLS material and credentials; called per request, so rotated tokens are picked up. */
  applyToHTTPSOptions(opts: ConnectionOptions): Promise<void>;
}

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** How often a token file is read again: client-go's and client-node's interval (projected tokens rotate). */
const TOKEN_FILE_REREAD_MS = 60_000;

interface LeanSettings {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecure?: boolean;
  token?: string;
  tokenFile?: string;
  impersonate?: string;
}

/** A server, TLS files read once, and a bearer token (fixed, or from a file read again every minute). */
export class LeanKubeConnection implements KubeConnection {
  private readonly settings: LeanSettings;
  private fileToken: { value: string; readAt: number } | undefined;
  private readonly now: () => number;

  constructor(settings: LeanSettings, now = () => Date.now()) {
    this.settings = { ...settings, server: settings.server.replace(/\/$/, "") };
    this.now = now;
  }

  getCurrentCluster(): { server: string } {
    return { server: this.settings.server };
  }

  applyToHTTPSOptions(opts: ConnectionOptions): Promise<void> {
    const { ca, cert, key, insecure, impersonate } = this.settings;
    if (ca) opts.ca = ca;
    if (cert) opts.cert = cert;
    if (key) opts.key = key;
    if (insecure) opts.rejectUnauthorized = false;
    const token = this.token();
    if (token) opts.headers = { ...opts.headers, Authorization: `Bearer ${token}` };
    if (impersonate) opts.headers = { ...opts.headers, "Impersonate-User": impersonate };
    return Promise.resolve();
  }

  private token(): string | undefined {
    const { token, tokenFile } = this.settings;
    if (token || !tokenFile) return token;
    const now = this.now();
    if (!this.fileToken || now - this.fileToken.readAt > TOKEN_FILE_REREAD_MS)
      this.fileToken = { value: readFileSync(tokenFile, "utf8").trim(), readAt: now };
    return this.fileToken.value;
  }
}

/** The ServiceAccount a pod runs as (client-node's loadFromCluster; `dir` for tests). */
export function inClusterConnection(
  env: NodeJS.ProcessEnv = process.env,
  dir = SERVICE_ACCOUNT_DIR,
  now = () => Date.now(),
): LeanKubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error("KUBECONFIG is not set and this is not a pod (KUBERNETES_SERVICE_HOST is missing)");
  const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
  return new LeanKubeConnection(
    {
      server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      ca: readFileSync(`${dir}/ca.crt`),
      tokenFile: `${dir}/token`,
    },
    now,
  );
}

interface Named {
  name?: string;
  [field: string]: unknown;
}
interface KubeconfigCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  [other: string]: unknown;
}
interface KubeconfigUser {
  token?: string;
  tokenFile?: string;
  "token-file"?: string;
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  as?: string;
  [other: string]: unknown;
}
/** Cluster fields this reader understands; any other (proxy-url, tls-server-name, …) goes to client-node. */
const CLUSTER_FIELDS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "extensions",
]);
const USER_FIELDS = new Set([
  "token",
  "tokenFile",
  "token-file",
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "as",
  "extensions",
]);

/**
 * The current context of a kubeconfig file when it needs nothing beyond server, CA, insecure flag,
 * token (or token file), client certificate and impersonation; undefined otherwise. Relative file
 * paths are relative to the kubeconfig, as kubectl reads them.
 */
export function leanConnectionFromFile(path: string): LeanKubeConnection | undefined {
  const config = (parseYaml(readFileSync(path, "utf8")) ?? {}) as {
    "current-context"?: string;
    contexts?: Named[];
    clusters?: Named[];
    users?: Named[];
  };
  const pick = <T>(list: Named[] | undefined, name: string | undefined, field: string) =>
    list?.find((entry) => entry.name === name)?.[field] as T | undefined;
  const contextName = config["current-context"];
  const context = pick<{ cluster?: string; user?: string }>(config.contexts, contextName, "context");
  if (!context) throw new Error(`${path}: no context "${contextName ?? ""}"`);
  const cluster = pick<KubeconfigCluster>(config.clusters, context.cluster, "cluster");
  if (!cluster?.server) throw new Error(`${path}: cluster "${context.cluster ?? ""}" has no server`);
  const user = pick<KubeconfigUser>(config.users, context.user, "user") ?? {};
  if (
    Object.keys(cluster).some((field) => !CLUSTER_FIELDS.has(field)) ||
    Object.keys(user).some((field) => !USER_FIELDS.has(field))
  )
    return undefined;
  const base = dirname(path);
  const tokenFile = user.tokenFile ?? user["token-file"];
  const material = (file: string | undefined, data: string | undefined) =>
    file ? readFileSync(resolve(base, file)) : data ? Buffer.from(data, "base64") : undefined;
  return new LeanKubeConnection({
    server: cluster.server,
    ca: material(cluster["certificate-authority"], cluster["certificate-authority-data"]),
    insecure: cluster["insecure-skip-tls-verify"] === true,
    cert: material(user["client-certificate"], user["client-certificate-data"]),
    key: material(user["client-key"], user["client-key-data"]),
    token: user.token,
    tokenFile: tokenFile ? resolve(base, tokenFile) : undefined,
    impersonate: user.as,
  });
}

/**
 * The connection from KUBECONFIG (local runs and tests) or the in-cluster ServiceAccount
 * (production), without loading client-node unless the kubeconfig needs it (lib/kube.ts).
 */
export async function loadKubeConnection(kubeconfigPath = process.env.KUBECONFIG): Promise<KubeConnection> {
  if (!kubeconfigPath) return inClusterConnection();
  const lean = leanConnectionFromFile(kubeconfigPath);
  if (lean) return lean;
  const { loadKubeConfig } = await import("./kube.ts");
  return loadKubeConfig(kubeconfigPath);
}

/** The namespace this process works in: USERLAND_NAMESPACE, else the ServiceAccount's, else "default". */
export async function currentNamespace(): Promise<string> {
  if (process.env.USERLAND_NAMESPACE) return process.env.USERLAND_NAMESPACE;
  try {
    const { readFile } = await import("node:fs/promises");
    return (await readFile(`${SERVICE_ACCOUNT_DIR}/namespace`, "utf8")).trim();
  } catch {
    return "default";
  }
}
