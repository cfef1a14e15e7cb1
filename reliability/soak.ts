/**
 * The proxy under load and faults ("soak"), reusable at any size: `test/reliability/soak.test.ts`
 * runs it at CI size on the shared test control plane, `scripts/soak.ts` (`npm run soak`) on a
 * private one with hundreds of users for minutes.
 *
 * Everything is real except the environments: the proxy is services/proxy/main.ts as a child
 * process (so its RSS and open file descriptors are read from /proc/<pid>), under a ServiceAccount
 * with only the proxy's rights; sessions are ES256 cookies signed with lib/session.ts keys; every
 * user has a real Userland reconciled by the real operator (a child process too) and is routed
 * through the proxy's informer. Each user's environment is a loopback upstream
 * (cluster/harness/proxyPartners.ts startUpstream) that answers with its owner's name, the path and
 * the X-User it received, and echoes WebSocket messages; the proxy reaches it only through the
 * resolver seam, PROXY_UPSTREAM_OVERRIDES_FILE. Nothing dials anything but 127.0.0.1.
 *
 * Load: per user, keep-alive HTTP clients (one connection each, that user's cookie; API-style
 * requests that get JSON pages, browser-style ones that get HTML pages, some POSTs, some slower
 * than the proxy's upstream timeout, and some with forged identity headers naming another user)
 * and long-lived WebSockets sending a message every so often. Faults, after a fault-free warm-up, at the same time: upstreams stop (every
 * connection dropped) and listen again on the same port; Userlands are stopped and started by
 * flipping `spec.enabled` with the operator running (so the proxy sees Stopped, then Starting,
 * then Ready as the operator and kwok move the Deployment).
 *
 * Checks (SoakReport.failures): no response, page or WebSocket message ever comes from or is
 * meant for another user; upstreams only ever see X-User = their owner and no client identity
 * header; every non-200 is an expected page (503 starting/stopped, 502 unreachable, 504 timeout)
 * and a 503 only for a user whose Userland was stopped; every user got through; the proxy's RSS
 * and fds stay flat after warm-up and the fds return to the baseline once clients close; its RSS
 * never passes `rssBoundMiB` and is at most `idleRssShare` x its start `idleSeconds` after the
 * clients closed (issue 32). The proxy runs with the chart's Node.js options (its heap limits).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { Agent, request, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WebSocket } from "ws";
import { childNames, userlandNameFor } from "../api/naming.ts";
import { type Userland, templatesPath, userlandsPath } from "../api/v1alpha1/index.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { escapeHtml } from "../lib/html.ts";
import {
  openWebSocket,
  proxyKubeConfig,
  startUpstream,
  testKeys,
  type CleanupScope,
  type Upstream,
} from "../cluster/harness/proxyPartners.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { listeningSocket, portOf, socketsFor } from "../cluster/ports.ts";
import type { ClusterAccess } from "../cluster/harness/connect.ts";
import {
  installCrdsOnce,
  operatorKubeconfig,
  spawnOperator,
  waitForLeadership,
  type OperatorProcess,
} from "../cluster/harness/operator.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import { chartProxyNodeOptions } from "../cluster/harness/chartValues.ts";

export const SOAK_TEMPLATE = "soak";
export const SOAK_HOST = "soak.example.test";
/** Identity headers a client might forge; the proxy must remove every one (services/proxy/forward/headers.ts). */
const SPOOF_HEADERS = ["x-user", "X_User", "x-forwarded-user", "x-auth-request-user", "remote-user"];
const SPOOF_KEYS_AT_UPSTREAM = ["x_user", "x-forwarded-user", "x-auth-request-user", "remote-user"];
/**
 * The proxy's RSS may never pass this in a soak of the default size (200 users; issue 32): it
 * measured at most about 210 MiB with the chart's heap limits (proxy.nodeOptions) and 370–480 MiB
 * without. The chart's memory limit for the proxy must stay above it (test/chart/chart.test.ts).
 */
export const PROXY_RSS_BOUND_MIB = 288;
/** How long after Ready a refused connection gets the starting page (PROXY_READY_GRACE, its default). */
const READY_GRACE_MS = 30_000;
/** What a forwarded request may take before the proxy answers 504 (PROXY_UPSTREAM_TIMEOUT). */
const UPSTREAM_TIMEOUT_MS = 3_000;

export interface SoakOptions {
  cluster: ClusterAccess;
  /** An existing namespace the soak may fill (Template, Userlands, ServiceAccounts, Roles). */
  namespace: string;
  users: number;
  /** Load duration including the warm-up. */
  seconds: number;
  /** Fault-free load at the start; RSS/fd "first" is sampled at its end. Default: min(20, seconds/5). */
  warmupSeconds?: number;
  /** Keep-alive HTTP clients (one connection each) per user. Default 1. */
  httpClientsPerUser?: number;
  /** Pause between one client's requests. Default 50 ms. */
  thinkMs?: number;
  /** Long-lived WebSockets per user. Default 1. */
  websocketsPerUser?: number;
  /** Pause between one WebSocket's messages. Default 1000 ms. */
  messageMs?: number;
  /** Mean pause between two upstream restarts (whole soak). Default: 10 s / users, at least 100 ms. */
  restartEveryMs?: number;
  /** Mean pause between two Userland stops (whole soak). Default: 30 s / users, at least 500 ms. */
  flipEveryMs?: number;
  /** At most this share of users is faulted (upstream down or Userland stopped) at once. Default 0.2. */
  maxFaultShare?: number;
  /** Share of requests that outlast the proxy's upstream timeout (→ 504 page). Default 0.002. */
  slowShare?: number;
  /** How far above the pre-load baseline the proxy's fds may stay once clients have closed. Default 16. */
  fdTolerance?: number;
  /** RSS may grow this much after warm-up (MiB, or `rssGrowthShare` of the first sample if larger). */
  rssGrowthMiB?: number;
  rssGrowthShare?: number;
  /**
   * How long after the clients have closed the proxy's memory is read again (V8 shrinks its heap
   * only some seconds after allocation stops). Default 60; 0: not waited (and not checked).
   */
  idleSeconds?: number;
  /** The proxy's RSS may never pass this (MiB) from its start to the idle read. Default: not checked. */
  rssBoundMiB?: number;
  /** The proxy's RSS after the idle spell may be at most this times its RSS at start. Default 1.5. */
  idleRssShare?: number;
  /**
   * Node.js options for the proxy's process, before its main.ts. Default: the chart's
   * (proxy.nodeOptions, its heap limits); [] for V8's defaults.
   */
  proxyNodeOptions?: string[];
  /** Also append everything the proxy prints to this file (e.g. with --trace-gc in proxyNodeOptions). */
  proxyOutputFile?: string;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

export interface ResourceSample {
  /** Seconds since the load started (negative: before). */
  t: number;
  rssMiB: number;
  fds: number;
  /** V8 heap in use (the proxy's /metrics), garbage included: tells heap growth from RSS that stays. */
  heapMiB?: number | undefined;
  /** The proxy ran a full (major) collection since the previous sample: heapMiB is about its live data. */
  afterMajorGc?: boolean;
  /** V8's heap spaces as reserved (MiB, e.g. new, old, code, large_object) and memory outside it. */
  spacesMiB?: Record<string, number> | undefined;
  externalMiB?: number | undefined;
  phase: "baseline" | "warmup" | "load" | "drain" | "idle";
}

export interface SoakReport {
  users: number;
  httpClients: number;
  websocketSlots: number;
  setupSeconds: number;
  loadSeconds: number;
  warmupSeconds: number;
  drainSeconds: number;
  http: {
    requests: number;
    perSecond: number;
    /** "200", "503 starting", "503 stopped", "502 unreachable", "504 timeout", other statuses as they came. */
    byStatus: Record<string, number>;
    /** Requests whose connection to the proxy failed (no status). */
    transportErrors: Record<string, number>;
    /** 502s for a user whose upstream was never stopped (keep-alive races; expected, reported). */
    faultless502: number;
    /** 504s on requests that were not meant to be slow (a loaded machine; expected, reported). */
    unplanned504: number;
    usersServed: number;
  };
  websocket: {
    sessions: number;
    /** Handshakes the proxy refused, by status and page. */
    refused: Record<string, number>;
    handshakeErrors: Record<string, number>;
    /** Sessions that ended from the far side (upstream restarts) rather than by the client. */
    droppedByServer: number;
    messagesSent: number;
    messagesEchoed: number;
    /** Messages in flight when their socket dropped. */
    unansweredAtClose: number;
    usersEchoed: number;
  };
  upstreams: { requestsSeen: number; upgradesSeen: number };
  /**
   * This process (clients and upstreams) on a busy machine: event-loop delay in ms. Upstream
   * timeouts on requests that were not meant to be slow (unplanned 504s) come with large values here.
   */
  harness: { loopDelayP99Ms: number; loopDelayMaxMs: number };
  faults: {
    upstreamRestarts: number;
    restartRetries: number;
    userlandStops: number;
    userlandStarts: number;
    flipErrors: number;
    /** The resolver overrides file rewritten (same map, new order) for the proxy to re-read under load. */
    overridesRewrites: number;
  };
  /** Responses, pages and messages that belonged to someone else (must be 0). */
  wrongUser: number;
  /** Statuses or bodies the proxy must never give here (must be 0). */
  unexpected: number;
  /** A response for another request of the same user, or an echo out of order (must be 0). */
  mismatched: number;
  /** Up to 20 examples of wrong-user / unexpected / mismatched, for the reader. */
  examples: string[];
  proxy: {
    pid: number;
    baseline: { rssMiB: number; fds: number; heapMiB?: number | undefined };
    afterWarmup: {
      first: ResourceSample;
      peak: { rssMiB: number; fds: number; heapMiB: number };
      last: ResourceSample;
      /** The lowest RSS in the last third of the load (what the RSS check compares). */
      lateFloorRssMiB: number;
      /** Heap in use just after the proxy's full collections (live data), oldest first. */
      heapAfterMajorGcMiB: number[];
    };
    afterClose: { fds: number; rssMiB: number; settleSeconds: number; websocketsOpen: number | undefined };
    /** After `idleSeconds` without clients: where the RSS is (undefined when not waited). */
    afterIdle?: IdleMemory | undefined;
    /**
     * The memory check: RSS at start (the baseline), its highest sample from then to the idle read,
     * after the idle spell, and what each may be (the bound; the idle share of the baseline).
     */
    memory: {
      beforeMiB: number;
      peakMiB: number;
      afterIdleMiB: number | undefined;
      boundMiB: number | undefined;
      afterIdleAllowedMiB: number | undefined;
    };
    samples: ResourceSample[];
    /** userland_proxy_* counters from the proxy's /metrics at the end. */
    metrics: string[];
    exitCode: number | null;
  };
  failures: string[];
}

interface SoakUser {
  index: number;
  /** The identity, exactly as the session says. */
  name: string;
  userland: string;
  service: string;
  cookie: string;
  upstream: Upstream;
  /** Every connection the upstream accepted (HTTP and upgraded), to drop them on a restart. */
  sockets: Set<Socket>;
  down: boolean;
  stopped: boolean;
  everDown: boolean;
  everStopped: boolean;
  /** When its Userland turned Ready (the Ready condition's time), once all were. */
  readyAt: number;
  served: number;
  echoed: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const between = (min: number, max: number) => min + Math.random() * (max - min);
/** Exponentially distributed pause with mean `ms` (faults arrive as a Poisson process). */
const exponential = (ms: number) => -Math.log(1 - Math.random()) * ms;
const errorCode = (error: unknown) =>
  (error as { code?: string }).code ?? (error as Error).message.slice(0, 60);

/**
 * Identities in the shapes the platform must keep apart: e-mail addresses, a provider's numeric
 * ids, and groups of four that collide after case folding or punctuation stripping
 * ("Student.3@Uni.example", "student.3@uni.example", "student-3@uni-example").
 */
export function soakIdentities(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const k = Math.floor(i / 4);
    return [
      `Student.${k}@Uni.example`,
      `student.${k}@uni.example`,
      `student-${k}@uni-example`,
      `github:${k}`,
    ][i % 4] as string;
  });
}

async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function sampleProcess(pid: number): Promise<{ rssMiB: number; fds: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
  const fds = (await readdir(`/proc/${pid}/fd`)).length;
  return { rssMiB: Math.round((kb / 1024) * 10) / 10, fds };
}

/**
 * GET on the proxy's admin port over a connection of its own that closes after the answer
 * (a pooled keep-alive connection would show up in the proxy's fd count).
 */
function adminGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${path} did not answer`)));
    req.on("error", reject);
    req.end();
  });
}

function heapMiB(metrics: string): number | undefined {
  return metricMiB(metrics, "nodejs_heap_size_used_bytes");
}

/** The proxy's memory by part once idle (MiB), from /proc and its own process metrics. */
export interface IdleMemory {
  seconds: number;
  rssMiB: number;
  /** V8's heap as reserved from the system, and the part of it in use (garbage included). */
  heapTotalMiB: number | undefined;
  heapUsedMiB: number | undefined;
  /** Memory held outside the V8 heap by JavaScript objects: Buffers, socket and TLS buffers. */
  externalMiB: number | undefined;
  /** What is left: code, stacks, libuv and the allocator's free but unreturned memory. */
  restMiB: number | undefined;
  /** V8's heap spaces as reserved (MiB). */
  spacesMiB?: Record<string, number> | undefined;
}

function metricMiB(metrics: string, name: string): number | undefined {
  const bytes = new RegExp(`^userland_proxy_${name} (\\S+)`, "m").exec(metrics)?.[1];
  return bytes === undefined ? undefined : Math.round((Number(bytes) / 1024 / 1024) * 10) / 10;
}

/** Each V8 heap space's reserved size (prom-client's nodejs_heap_space_size_total_bytes), MiB. */
function heapSpacesMiB(metrics: string): Record<string, number> | undefined {
  const spaces: Record<string, number> = {};
  for (const m of metrics.matchAll(
    /^userland_proxy_nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)/gm,
  ))
    spaces[m[1] as string] = Math.round((Number(m[2]) / 1024 / 1024) * 10) / 10;
  return Object.keys(spaces).length > 0 ? spaces : undefined;
}

function majorGcs(metrics: string): number {
  return Number(
    /^userland_proxy_nodejs_gc_duration_seconds_count\{kind="major"\} (\S+)/m.exec(metrics)?.[1] ?? 0,
  );
}

function count(map: Record<string, number>, key: string, by = 1): void {
  map[key] = (map[key] ?? 0) + by;
}

/** Runs one soak: sets everything up in `namespace`, loads, faults, checks, tears down. */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const { cluster, namespace } = options;
  const userCount = options.users;
  const warmupSeconds = options.warmupSeconds ?? Math.min(20, options.seconds / 5);
  const clientsPerUser = options.httpClientsPerUser ?? 1;
  const thinkMs = options.thinkMs ?? 50;
  const websocketsPerUser = options.websocketsPerUser ?? 1;
  const messageMs = options.messageMs ?? 1000;
  const restartEveryMs = options.restartEveryMs ?? Math.max(100, 10_000 / userCount);
  const flipEveryMs = options.flipEveryMs ?? Math.max(500, 30_000 / userCount);
  const maxFaulted = Math.max(1, Math.floor(userCount * (options.maxFaultShare ?? 0.2)));
  const slowShare = options.slowShare ?? 0.002;
  const fdTolerance = options.fdTolerance ?? 16;

  const cleanups: (() => unknown)[] = [];
  const scope: CleanupScope = { after: (fn) => void cleanups.push(fn) };
  const rest = new KubeRest(cluster.kc, "userland-soak");
  cleanups.push(() => rest.close());
  const setupStarted = Date.now();

  const report: SoakReport = {
    users: userCount,
    httpClients: userCount * clientsPerUser,
    websocketSlots: userCount * websocketsPerUser,
    setupSeconds: 0,
    loadSeconds: 0,
    warmupSeconds,
    drainSeconds: 0,
    http: {
      requests: 0,
      perSecond: 0,
      byStatus: {},
      transportErrors: {},
      faultless502: 0,
      unplanned504: 0,
      usersServed: 0,
    },
    websocket: {
      sessions: 0,
      refused: {},
      handshakeErrors: {},
      droppedByServer: 0,
      messagesSent: 0,
      messagesEchoed: 0,
      unansweredAtClose: 0,
      usersEchoed: 0,
    },
    upstreams: { requestsSeen: 0, upgradesSeen: 0 },
    harness: { loopDelayP99Ms: 0, loopDelayMaxMs: 0 },
    faults: {
      upstreamRestarts: 0,
      restartRetries: 0,
      userlandStops: 0,
      userlandStarts: 0,
      flipErrors: 0,
      overridesRewrites: 0,
    },
    wrongUser: 0,
    unexpected: 0,
    mismatched: 0,
    examples: [],
    proxy: {
      pid: 0,
      baseline: { rssMiB: 0, fds: 0 },
      afterWarmup: {
        first: { t: 0, rssMiB: 0, fds: 0, phase: "load" },
        peak: { rssMiB: 0, fds: 0, heapMiB: 0 },
        last: { t: 0, rssMiB: 0, fds: 0, phase: "load" },
        lateFloorRssMiB: 0,
        heapAfterMajorGcMiB: [],
      },
      afterClose: { fds: 0, rssMiB: 0, settleSeconds: 0, websocketsOpen: undefined },
      memory: {
        beforeMiB: 0,
        peakMiB: 0,
        afterIdleMiB: undefined,
        boundMiB: options.rssBoundMiB,
        afterIdleAllowedMiB: undefined,
      },
      samples: [],
      metrics: [],
      exitCode: null,
    },
    failures: [],
  };
  const example = (line: string) => {
    if (report.examples.length < 20) report.examples.push(line);
  };
  const wrongUser = (line: string) => (report.wrongUser++, example(`wrong user: ${line}`));
  const unexpected = (line: string) => (report.unexpected++, example(`unexpected: ${line}`));
  const mismatched = (line: string) => (report.mismatched++, example(`mismatched: ${line}`));

  let proxyChild: ChildProcess | undefined;
  let operator: OperatorProcess | undefined;
  const proxyOutput: string[] = [];
  try {
    // --- setup: CRDs, Template, operator, users with their upstreams and Userlands -------------
    await installCrdsOnce(cluster);
    await rest.create(templatesPath(namespace), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Template",
      metadata: { name: SOAK_TEMPLATE },
      spec: simpleTemplateSpec("registry.invalid/soak:1", { displayName: "Soak IDE" }),
    });
    const { path: operatorConfig, username } = await operatorKubeconfig(namespace, cluster);
    operator = await spawnOperator(operatorConfig, username, namespace, {
      env: { LOG_LEVEL: "warn", OPERATOR_FREEZE_CACHE: "false" },
    });
    await waitForLeadership(operator, 60_000);
    log(`operator leads; creating ${userCount} users`);

    const keys = await testKeys(scope);
    const users: SoakUser[] = [];
    const identities = soakIdentities(userCount);
    await pool(
      identities.map((name, index) => ({ name, index })),
      8,
      async ({ name, index }) => {
        const upstream = await startUpstream(scope, name);
        const sockets = new Set<Socket>();
        upstream.server.on("connection", (socket: Socket) => {
          sockets.add(socket);
          socket.once("close", () => sockets.delete(socket));
        });
        const userland = userlandNameFor(name, SOAK_TEMPLATE);
        users[index] = {
          index,
          name,
          userland,
          service: childNames(SOAK_TEMPLATE, userland).service,
          cookie: await keys.cookie(name, 24 * 3600),
          upstream,
          sockets,
          down: false,
          stopped: false,
          everDown: false,
          everStopped: false,
          readyAt: Number.NaN,
          served: 0,
          echoed: 0,
        };
        await rest.create(userlandsPath(namespace), {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Userland",
          metadata: { name: userland },
          spec: { user: name, templateName: SOAK_TEMPLATE },
        });
      },
    );
    if (new Set(users.map((u) => u.userland)).size !== users.length)
      throw new Error("two identities were given the same Userland name");

    const readyDeadline = Date.now() + 120_000 + userCount * 500;
    for (;;) {
      const list = await rest.list<Userland>(userlandsPath(namespace));
      const ready = list.items.filter(
        (u) =>
          u.status?.phase === "Ready" &&
          u.status.observedGeneration === u.metadata.generation &&
          u.status.service?.name === childNames(SOAK_TEMPLATE, u.metadata.name ?? "").service,
      ).length;
      if (ready === userCount) {
        for (const u of list.items) {
          const user = users.find((x) => x.userland === u.metadata.name);
          const condition = u.status?.conditions?.find((c) => c.type === "Ready");
          if (user) user.readyAt = Date.parse(condition?.lastTransitionTime ?? "");
        }
        break;
      }
      if (Date.now() > readyDeadline)
        throw new Error(
          `only ${ready} of ${userCount} Userlands became Ready:\n${operator.logs().slice(-2000)}`,
        );
      await sleep(1000);
    }
    log(`${userCount} Userlands Ready after ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);

    // --- the proxy, as a process, behind the resolver seam ------------------------------------
    const dir = await mkdtemp(join(tmpdir(), "userland-soak-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const overridesFile = join(dir, "upstreams.json");
    const writeOverrides = async (order: SoakUser[]) => {
      const map = Object.fromEntries(order.map((u) => [`${namespace}/${u.service}`, u.upstream.url]));
      await writeFile(`${overridesFile}.tmp`, JSON.stringify(map, null, 1));
      await rename(`${overridesFile}.tmp`, overridesFile);
    };
    await writeOverrides(users);
    const kubeconfig = join(dir, "proxy.kubeconfig");
    await writeFile(kubeconfig, (await proxyKubeConfig(namespace, cluster)).exportConfig(), { mode: 0o600 });
    // Bound here and passed down (cluster/ports.ts), so no port can be taken before the proxy listens.
    const sockets = { PROXY_PORT: await listeningSocket(), PROXY_ADMIN_PORT: await listeningSocket() };
    const port = portOf(sockets.PROXY_PORT);
    const adminPort = portOf(sockets.PROXY_ADMIN_PORT);
    const passed = socketsFor(sockets);
    const child = spawn(
      process.execPath,
      [
        ...(options.proxyNodeOptions ?? chartProxyNodeOptions()),
        join(repoRoot, "services", "proxy", "main.ts"),
      ],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          KUBECONFIG: kubeconfig,
          USERLAND_NAMESPACE: namespace,
          LOG_LEVEL: "warn",
          PROXY_SESSION_PUBLIC_KEYS_FILE: keys.publicFile,
          PROXY_LOGIN_URL: "https://auth.example.test/login",
          PROXY_HOST_TEMPLATES: `${SOAK_HOST}=${SOAK_TEMPLATE}`,
          PROXY_UPSTREAM_OVERRIDES_FILE: overridesFile,
          PROXY_UPSTREAM_TIMEOUT: `${UPSTREAM_TIMEOUT_MS}ms`,
          PROXY_READY_GRACE: `${READY_GRACE_MS}ms`,
          PROXY_ACTIVITY_FLUSH: "5s",
          PROXY_ACCESS_LOG: "false",
          ...passed.env,
        },
        stdio: ["ignore", "pipe", "pipe", ...passed.fds],
      },
    );
    passed.close();
    proxyChild = child;
    const keep = (chunk: Buffer) => {
      if (options.proxyOutputFile) appendFileSync(options.proxyOutputFile, chunk);
      proxyOutput.push(chunk.toString());
      if (proxyOutput.length > 200) proxyOutput.shift();
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const pid = child.pid ?? 0;
    report.proxy.pid = pid;
    const readyBy = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the proxy exited:\n${proxyOutput.join("")}`);
      const ok = await adminGet(adminPort, "/readyz").then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > readyBy) throw new Error(`the proxy did not become ready:\n${proxyOutput.join("")}`);
      await sleep(200);
    }
    await sleep(500);
    const baseline = {
      ...(await sampleProcess(pid)),
      heapMiB: heapMiB((await adminGet(adminPort, "/metrics")).body),
    };
    report.proxy.baseline = baseline;
    report.setupSeconds = (Date.now() - setupStarted) / 1000;
    log(`proxy ${pid} ready: ${baseline.rssMiB} MiB RSS, ${baseline.fds} fds; load for ${options.seconds} s`);

    // --- load, faults and sampling -------------------------------------------------------------
    const loopDelay = monitorEventLoopDelay({ resolution: 20 });
    loopDelay.enable();
    const loadStarted = Date.now();
    const since = () => (Date.now() - loadStarted) / 1000;
    let phase: ResourceSample["phase"] = "warmup";
    let stopping = false;
    const samples = report.proxy.samples;
    samples.push({ t: -0.5, ...baseline, phase: "baseline" });
    let majors = -1;
    const sampler = setInterval(() => {
      const t = Math.round(since() * 10) / 10;
      const at = phase;
      sampleProcess(pid)
        .then(async (s) => {
          const metrics = await adminGet(adminPort, "/metrics").catch(() => undefined);
          const sample: ResourceSample = {
            t,
            ...s,
            heapMiB: metrics && heapMiB(metrics.body),
            spacesMiB: metrics && heapSpacesMiB(metrics.body),
            externalMiB: metrics && metricMiB(metrics.body, "nodejs_external_memory_bytes"),
            phase: at,
          };
          const now = metrics ? majorGcs(metrics.body) : majors;
          if (majors >= 0 && now > majors) sample.afterMajorGc = true;
          majors = Math.max(majors, now);
          samples.push(sample);
        })
        .catch(() => undefined);
    }, 1000);

    /** The upstreams' own view: only their owner's X-User, exactly once, and no forged identity. */
    const scanUpstreams = () => {
      for (const u of users) {
        for (const seen of u.upstream.seen) {
          if (seen.method === "UPGRADE") report.upstreams.upgradesSeen++;
          else report.upstreams.requestsSeen++;
          const xUsers = seen.rawHeaders.filter(
            (_, i) => i % 2 === 0 && seen.rawHeaders[i]?.toLowerCase() === "x-user",
          );
          if (seen.headers["x-user"] !== u.name || xUsers.length !== 1)
            wrongUser(
              `upstream of ${u.name} received X-User ${JSON.stringify(seen.headers["x-user"])} (${xUsers.length} headers) for ${seen.method} ${seen.url}`,
            );
          const forged = SPOOF_KEYS_AT_UPSTREAM.filter((k) => k in seen.headers);
          if (forged.length > 0)
            wrongUser(`upstream of ${u.name} received client identity headers ${forged.join(", ")}`);
          if (/userland_session=/.test(String(seen.headers.cookie ?? "")))
            wrongUser(`upstream of ${u.name} received the session cookie`);
        }
        u.upstream.seen.length = 0;
      }
    };
    const scanner = setInterval(scanUpstreams, 1000);

    const other = (u: SoakUser) =>
      users[(u.index + 1 + Math.floor(Math.random() * (userCount - 1))) % userCount] as SoakUser;
    const spoof = (u: SoakUser): Record<string, string> => {
      if (userCount < 2 || Math.random() >= 0.3) return {};
      const header = SPOOF_HEADERS[Math.floor(Math.random() * SPOOF_HEADERS.length)] as string;
      return { [header]: other(u).name };
    };

    /**
     * Checks a page the proxy sent instead of the environment: JSON for API clients, HTML for
     * browsers (whose starting/stopped pages say who is signed in: it must be this user).
     */
    const checkPage = (
      u: SoakUser,
      status: number,
      body: string,
      slow: boolean,
      what: string,
      sentAt: number,
      browser = false,
    ): string => {
      let state: unknown;
      if (browser) {
        state = /environment is starting</.test(body)
          ? "starting"
          : /environment is stopped</.test(body)
            ? "stopped"
            : /environment is not answering</.test(body)
              ? "unreachable"
              : /environment is taking too long to answer</.test(body)
                ? "timeout"
                : undefined;
        const signedIn = /Signed in as ([^<]*)\.<\/p>/.exec(body)?.[1];
        if ((state === "starting" || state === "stopped") && signedIn !== escapeHtml(u.name)) {
          wrongUser(`${what} for ${u.name}: a "${state}" page signed in as ${String(signedIn)}`);
          return `${status} ${state} (html)`;
        }
      } else {
        try {
          state = (JSON.parse(body) as { state?: unknown }).state;
        } catch {
          state = undefined;
        }
      }
      const key = `${status} ${String(state)}`;
      const expected =
        (status === 503 && (state === "starting" || state === "stopped")) ||
        (status === 502 && state === "unreachable") ||
        (status === 504 && state === "timeout");
      if (!expected) unexpected(`${what} for ${u.name}: ${status} ${body.slice(0, 160)}`);
      // The proxy's ready grace (PROXY_READY_GRACE): just after Ready, an upstream that refuses for
      // longer than the retries gets the starting page by design, stopped or not. The proxy decides
      // when the request arrives and then retries for about 5 s, so the grace is counted from when
      // the request was sent, not from its answer (a request sent near the grace's end and
      // answered after it was counted as unexpected: a fresh clone's soak, 2026-11-27). The
      // second of slack covers lastTransitionTime's whole seconds.
      else if (
        status === 503 &&
        !u.everStopped &&
        !(state === "starting" && sentAt - u.readyAt < READY_GRACE_MS + 1000)
      )
        unexpected(
          `${what} for ${u.name}: "${String(state)}" page, but this user's Userland was never stopped`,
        );
      else if (status === 502 && !u.everDown) report.http.faultless502++;
      else if (status === 504 && !slow) report.http.unplanned504++;
      return key;
    };

    // HTTP: keep-alive clients, one connection each, one user each.
    const agents: Agent[] = [];
    const httpClient = async (u: SoakUser, id: string) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      await sleep(Math.random() * 1000);
      for (let seq = 1; !stopping; seq++) {
        const slow = Math.random() < slowShare;
        const path = slow
          ? `/slow?ms=${UPSTREAM_TIMEOUT_MS + 1000}&c=${id}&n=${seq}`
          : `/c/${id}/${seq}?x=${seq}`;
        const post = !slow && Math.random() < 0.2;
        const browser = !post && Math.random() < 0.2;
        const sentAt = Date.now();
        const result = await new Promise<
          { status: number; body: string; setCookie: string[] } | { error: string }
        >((resolve) => {
          const req = request(
            {
              host: "127.0.0.1",
              port,
              path,
              method: post ? "POST" : "GET",
              agent,
              headers: {
                host: SOAK_HOST,
                cookie: `app=${id}; ${u.cookie}`,
                accept: browser ? "text/html,application/xhtml+xml" : "application/json",
                ...(post ? { "content-type": "text/plain" } : {}),
                ...spoof(u),
              },
            },
            (res: IncomingMessage) => {
              const chunks: Buffer[] = [];
              res.on("data", (c: Buffer) => chunks.push(c));
              res.on("end", () =>
                resolve({
                  status: res.statusCode ?? 0,
                  body: Buffer.concat(chunks).toString("utf8"),
                  setCookie: res.headers["set-cookie"] ?? [],
                }),
              );
              res.on("error", (error) => resolve({ error: errorCode(error) }));
            },
          );
          req.setTimeout(UPSTREAM_TIMEOUT_MS * 4, () =>
            req.destroy(Object.assign(new Error("client timeout"), { code: "CLIENT_TIMEOUT" })),
          );
          req.on("error", (error) => resolve({ error: errorCode(error) }));
          req.end(post ? `body of ${id}/${seq}` : undefined);
        });
        report.http.requests++;
        if ("error" in result) {
          count(report.http.transportErrors, result.error);
        } else if (result.status === 200) {
          count(report.http.byStatus, "200");
          let body: { upstream?: unknown; xUser?: unknown; url?: unknown; method?: unknown };
          try {
            body = JSON.parse(result.body) as typeof body;
          } catch {
            body = {};
          }
          if (body.upstream !== u.name || body.xUser !== u.name)
            wrongUser(
              `${u.name} got a response from the upstream of ${String(body.upstream)} with X-User ${String(body.xUser)} (${path})`,
            );
          else if (body.url !== path || body.method !== (post ? "POST" : "GET"))
            mismatched(
              `${u.name} asked for ${post ? "POST" : "GET"} ${path}, got the answer to ${String(body.method)} ${String(body.url)}`,
            );
          else u.served++;
          if (result.setCookie.some((c) => c.startsWith("userland_session=")))
            unexpected(`an environment's Set-Cookie for the session cookie reached ${u.name}`);
        } else {
          count(
            report.http.byStatus,
            checkPage(u, result.status, result.body, slow, `HTTP ${path}`, sentAt, browser),
          );
        }
        await sleep(thinkMs * between(0.5, 1.5));
      }
    };

    // WebSockets: long-lived, reconnecting when dropped; each echo must be this socket's next message.
    const openSockets = new Set<WebSocket>();
    const websocketSlot = async (u: SoakUser, slot: string) => {
      await sleep(Math.random() * 2000);
      let seq = 0;
      while (!stopping) {
        let opened: Awaited<ReturnType<typeof openWebSocket>>;
        const sentAt = Date.now();
        try {
          opened = await openWebSocket(port, {
            host: SOAK_HOST,
            cookie: u.cookie,
            origin: `https://${SOAK_HOST}`,
            path: `/ws/${slot}`,
            headers: spoof(u),
          });
        } catch (error) {
          count(report.websocket.handshakeErrors, errorCode(error));
          await sleep(between(200, 800));
          continue;
        }
        if ("status" in opened) {
          count(
            report.websocket.refused,
            checkPage(u, opened.status, opened.body, false, `WebSocket /ws/${slot}`, sentAt),
          );
          await sleep(between(300, 1000));
          continue;
        }
        const ws = opened.ws;
        report.websocket.sessions++;
        openSockets.add(ws);
        const pending: string[] = [];
        let closedByUs = false;
        const timer = setInterval(
          () => {
            if (stopping) {
              closedByUs = true;
              ws.close(1000);
              return;
            }
            if (ws.readyState !== ws.OPEN) return;
            const message = `${slot}#${++seq}`;
            pending.push(message);
            report.websocket.messagesSent++;
            ws.send(message);
          },
          messageMs * between(0.8, 1.2),
        );
        ws.on("message", (data: Buffer) => {
          let echo: { upstream?: unknown; xUser?: unknown; echo?: unknown };
          try {
            echo = JSON.parse(data.toString()) as typeof echo;
          } catch {
            echo = {};
          }
          const expected = pending.shift();
          if (echo.upstream !== u.name || echo.xUser !== u.name)
            wrongUser(
              `${u.name}'s WebSocket ${slot} got a message from the upstream of ${String(echo.upstream)} with X-User ${String(echo.xUser)}`,
            );
          else if (echo.echo !== expected)
            mismatched(
              `${u.name}'s WebSocket ${slot} expected the echo of ${String(expected)}, got ${String(echo.echo)}`,
            );
          else {
            report.websocket.messagesEchoed++;
            u.echoed++;
          }
        });
        ws.on("error", () => undefined);
        await new Promise<void>((resolve) => ws.once("close", () => resolve()));
        clearInterval(timer);
        openSockets.delete(ws);
        report.websocket.unansweredAtClose += pending.length;
        if (!closedByUs && !stopping) report.websocket.droppedByServer++;
        if (!stopping) await sleep(between(100, 500));
      }
    };

    // Faults.
    const faulted = () => users.filter((u) => u.down || u.stopped).length;
    const faultJobs = new Set<Promise<void>>();
    const track = (job: Promise<void>) => {
      faultJobs.add(job);
      void job.finally(() => faultJobs.delete(job));
    };
    const stopUpstream = (u: SoakUser) =>
      new Promise<void>((resolve) => {
        u.upstream.server.close(() => resolve());
        for (const socket of u.sockets) socket.destroy();
      });
    const listenAgain = async (u: SoakUser) => {
      for (let attempt = 0; ; attempt++) {
        const error = await new Promise<Error | undefined>((resolve) => {
          const onError = (e: Error) => resolve(e);
          u.upstream.server.once("error", onError);
          u.upstream.server.listen(u.upstream.port, "127.0.0.1", () => {
            u.upstream.server.off("error", onError);
            resolve(undefined);
          });
        });
        if (!error) return;
        // The port may be held for a moment as the local end of one of our own client connections.
        report.faults.restartRetries++;
        if (attempt > 100)
          throw new Error(
            `upstream of ${u.name} cannot listen on ${u.upstream.port} again: ${error.message}`,
          );
        await sleep(100);
      }
    };
    const restarter = async () => {
      while (!stopping) {
        await sleep(exponential(restartEveryMs));
        const candidates = users.filter((u) => !u.down);
        if (stopping || phase !== "load" || faulted() >= maxFaulted || candidates.length === 0) continue;
        const u = candidates[Math.floor(Math.random() * candidates.length)] as SoakUser;
        u.down = true;
        u.everDown = true;
        track(
          (async () => {
            await stopUpstream(u);
            await sleep(between(200, 2000));
            await listenAgain(u);
            report.faults.upstreamRestarts++;
            u.down = false;
          })(),
        );
      }
    };
    const flipper = async () => {
      while (!stopping) {
        await sleep(exponential(flipEveryMs));
        const candidates = users.filter((u) => !u.stopped);
        if (stopping || phase !== "load" || faulted() >= maxFaulted || candidates.length === 0) continue;
        const u = candidates[Math.floor(Math.random() * candidates.length)] as SoakUser;
        u.stopped = true;
        u.everStopped = true;
        track(
          (async () => {
            const enabled = async (value: boolean) => {
              for (let attempt = 0; ; attempt++) {
                try {
                  await rest.patch(userlandsPath(namespace, u.userland), { spec: { enabled: value } });
                  return;
                } catch (error) {
                  report.faults.flipErrors++;
                  if (attempt >= 5) throw error;
                  await sleep(500);
                }
              }
            };
            await enabled(false);
            report.faults.userlandStops++;
            await sleep(between(1000, 5000));
            await enabled(true);
            report.faults.userlandStarts++;
            u.stopped = false;
          })(),
        );
      }
    };

    const clientJobs = [
      ...users.flatMap((u) =>
        Array.from({ length: clientsPerUser }, (_, k) => httpClient(u, `${u.index}-${k}`)),
      ),
      ...users.flatMap((u) =>
        Array.from({ length: websocketsPerUser }, (_, k) => websocketSlot(u, `${u.index}-${k}`)),
      ),
    ];
    // The proxy re-reads the overrides file when it changes; rewriting it (atomically, as
    // dev/platform.ts does) must never leave a Service without its address (outcome "unresolved").
    const rewriter = async () => {
      while (!stopping) {
        await sleep(between(2000, 4000));
        if (stopping || phase !== "load") continue;
        const shuffled = [...users].sort(() => Math.random() - 0.5);
        await writeOverrides(shuffled);
        report.faults.overridesRewrites++;
      }
    };
    const faultLoops = [restarter(), flipper(), rewriter()];
    const progress = setInterval(
      () =>
        log(
          `t=${since().toFixed(0)}s ${phase}: ${report.http.requests} requests, ${openSockets.size} WebSockets, ` +
            `${faulted()} faulted, wrong-user ${report.wrongUser}, unexpected ${report.unexpected}, ` +
            `proxy ${samples.at(-1)?.rssMiB ?? "?"} MiB / ${samples.at(-1)?.fds ?? "?"} fds`,
        ),
      10_000,
    );

    await sleep(warmupSeconds * 1000);
    phase = "load";
    await sleep(Math.max(0, options.seconds - warmupSeconds) * 1000);
    // Samples land when /proc and /metrics have answered, not always in order.
    const loadSamples = samples
      .filter((x) => x.phase !== "baseline" && x.t >= warmupSeconds - 1.5)
      .sort((a, b) => a.t - b.t);

    // --- drain: faults heal, clients close, the proxy lets go of everything -------------------
    loopDelay.disable();
    report.harness = {
      loopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e6),
      loopDelayMaxMs: Math.round(loopDelay.max / 1e6),
    };
    stopping = true;
    phase = "drain";
    const drainStarted = Date.now();
    report.loadSeconds = since();
    clearInterval(progress);
    await Promise.all(faultLoops);
    await Promise.all([...faultJobs]);
    for (const ws of openSockets) ws.close(1000);
    const clientsDone = Promise.all(clientJobs);
    const forced = setTimeout(() => {
      for (const ws of openSockets) ws.terminate();
    }, 5000);
    await clientsDone;
    const clientsClosedAt = Date.now();
    clearTimeout(forced);
    for (const agent of agents) agent.destroy();
    scanUpstreams();

    const settleBy = Date.now() + 45_000;
    let after = await sampleProcess(pid);
    while (after.fds > baseline.fds + fdTolerance && Date.now() < settleBy) {
      await sleep(500);
      after = await sampleProcess(pid);
    }
    const settleSeconds = (Date.now() - drainStarted) / 1000;
    clearInterval(sampler);
    clearInterval(scanner);
    samples.sort((a, b) => a.t - b.t);
    const metricsText = await adminGet(adminPort, "/metrics").then(
      (r) => r.body,
      () => "",
    );
    const open = /^userland_proxy_websockets_open (\d+)/m.exec(metricsText)?.[1];
    report.proxy.metrics = metricsText
      .split("\n")
      .filter((l) =>
        /^userland_proxy_(requests_total|route_outcomes_total|upstream_errors_total|websockets_open|activity_patches_total)/.test(
          l,
        ),
      );
    report.proxy.afterClose = {
      ...after,
      settleSeconds: Math.round(settleSeconds * 10) / 10,
      websocketsOpen: open === undefined ? undefined : Number(open),
    };
    report.drainSeconds = settleSeconds;
    const idleSeconds = options.idleSeconds ?? 60;
    if (idleSeconds > 0) {
      const readAt = clientsClosedAt + idleSeconds * 1000;
      log(`clients closed; the proxy's memory is read again ${idleSeconds} s after they closed`);
      // Every 5 s on the way (from /proc only: /metrics would be traffic).
      while (readAt - Date.now() > 5000) {
        await sleep(5000);
        samples.push({ t: Math.round(since() * 10) / 10, ...(await sampleProcess(pid)), phase: "idle" });
      }
      await sleep(Math.max(0, readAt - Date.now()));
      const idle = await sampleProcess(pid);
      const text = await adminGet(adminPort, "/metrics").then(
        (r) => r.body,
        () => "",
      );
      const heapTotalMiB = metricMiB(text, "nodejs_heap_size_total_bytes");
      const externalMiB = metricMiB(text, "nodejs_external_memory_bytes");
      report.proxy.afterIdle = {
        seconds: idleSeconds,
        rssMiB: idle.rssMiB,
        heapTotalMiB,
        heapUsedMiB: heapMiB(text),
        externalMiB,
        spacesMiB: heapSpacesMiB(text),
        restMiB:
          heapTotalMiB === undefined || externalMiB === undefined
            ? undefined
            : Math.round((idle.rssMiB - heapTotalMiB - externalMiB) * 10) / 10,
      };
    }
    const afterWarmup = loadSamples.length > 0 ? loadSamples : samples;
    report.proxy.afterWarmup = {
      first: afterWarmup[0] as ResourceSample,
      peak: {
        rssMiB: Math.max(...afterWarmup.map((s) => s.rssMiB)),
        fds: Math.max(...afterWarmup.map((s) => s.fds)),
        heapMiB: Math.max(...afterWarmup.map((s) => s.heapMiB ?? 0)),
      },
      last: afterWarmup.at(-1) as ResourceSample,
      lateFloorRssMiB: 0,
      heapAfterMajorGcMiB: afterWarmup.flatMap((x) =>
        x.afterMajorGc && x.heapMiB !== undefined ? [x.heapMiB] : [],
      ),
    };
    report.http.perSecond = Math.round(report.http.requests / report.loadSeconds);
    report.http.usersServed = users.filter((u) => u.served > 0).length;
    report.websocket.usersEchoed = users.filter((u) => u.echoed > 0).length;
    // (A function: TypeScript would keep the narrowing from the readiness loop across the awaits.)
    const exitCodeOf = (c: ChildProcess) => c.exitCode;
    report.proxy.exitCode = exitCodeOf(child);

    // --- verdict -------------------------------------------------------------------------------
    const fail = (line: string) => report.failures.push(line);
    if (report.proxy.exitCode !== null)
      fail(`the proxy exited during the soak (code ${report.proxy.exitCode})`);
    if (report.wrongUser > 0) fail(`${report.wrongUser} responses/pages/messages crossed users`);
    if (report.unexpected > 0) fail(`${report.unexpected} unexpected statuses or bodies`);
    if (report.mismatched > 0) fail(`${report.mismatched} responses or echoes did not match their request`);
    const transport = Object.values(report.http.transportErrors).reduce((a, b) => a + b, 0);
    if (transport > Math.max(5, report.http.requests * 0.005))
      fail(`${transport} HTTP requests failed without a status (more than 0.5%)`);
    if (report.http.usersServed < userCount)
      fail(`only ${report.http.usersServed} of ${userCount} users ever reached their environment`);
    if (websocketsPerUser > 0 && report.websocket.usersEchoed < userCount)
      fail(`only ${report.websocket.usersEchoed} of ${userCount} users got a WebSocket echo`);
    if ((report.http.byStatus["200"] ?? 0) < report.http.requests * 0.5)
      fail(
        `fewer than half of the requests reached an environment (${report.http.byStatus["200"] ?? 0} of ${report.http.requests})`,
      );
    if (report.faults.upstreamRestarts === 0 || report.faults.userlandStops === 0)
      fail("no faults were injected (the soak is too short for its fault rates)");
    const unresolved = [
      ...metricsText.matchAll(
        /^userland_proxy_route_outcomes_total\{[^}]*outcome="unresolved"[^}]*\} (\d+)/gm,
      ),
    ].reduce((sum, m) => sum + Number(m[1]), 0);
    if (unresolved > 0)
      fail(`the proxy found no address for a Ready Userland ${unresolved} times (overrides file re-reads)`);
    const { first, peak } = report.proxy.afterWarmup;
    // V8 grows its heap lazily and gives it back only at a major collection, so RSS is a sawtooth
    // (a 300 s run went 289 → 427 → 226 MiB). A leak raises the floor: compare the lowest sample
    // of the last third of the load with the first one after warm-up.
    const rssAllowance = Math.max(options.rssGrowthMiB ?? 64, first.rssMiB * (options.rssGrowthShare ?? 0.5));
    const lastThird = afterWarmup.slice(Math.floor((afterWarmup.length * 2) / 3));
    const rssFloor = Math.min(...lastThird.map((s) => s.rssMiB));
    report.proxy.afterWarmup.lateFloorRssMiB = rssFloor;
    if (rssFloor - first.rssMiB > rssAllowance)
      fail(
        `the proxy's RSS did not come back below ${rssFloor} MiB in the last third of the load, ` +
          `${(rssFloor - first.rssMiB).toFixed(0)} MiB above the first sample after warm-up (allowed ${rssAllowance.toFixed(0)} MiB)`,
      );
    // The sharper leak test: live data after full collections (a run may be too short to have two).
    const live = report.proxy.afterWarmup.heapAfterMajorGcMiB;
    const liveFirst = live[0];
    const liveLast = live.at(-1);
    const heapAllowance = Math.max(32, (liveFirst ?? 0) * 0.5);
    if (
      live.length >= 2 &&
      liveFirst !== undefined &&
      liveLast !== undefined &&
      liveLast - liveFirst > heapAllowance
    )
      fail(
        `the proxy's heap after full collections grew from ${liveFirst} to ${liveLast} MiB during the load ` +
          `(allowed ${heapAllowance.toFixed(0)} MiB)`,
      );
    // Each client connection may hold one socket to the proxy and, through it, one to an upstream.
    const connections = report.httpClients + report.websocketSlots;
    const fdCeiling = baseline.fds + 3 * connections + 64;
    if (peak.fds > fdCeiling)
      fail(
        `the proxy held ${peak.fds} fds at peak, more than ${fdCeiling} for ${connections} client connections`,
      );
    if (after.fds > baseline.fds + fdTolerance)
      fail(
        `the proxy still holds ${after.fds} fds ${settleSeconds.toFixed(0)} s after the clients closed (baseline ${baseline.fds})`,
      );
    if (report.proxy.afterClose.websocketsOpen !== undefined && report.proxy.afterClose.websocketsOpen !== 0)
      fail(`the proxy still counts ${report.proxy.afterClose.websocketsOpen} open WebSockets`);
    // Memory (issue 32): a bound the chart's limit respects, and back near the start once idle.
    const memory = report.proxy.memory;
    memory.beforeMiB = baseline.rssMiB;
    memory.peakMiB = Math.max(...samples.map((x) => x.rssMiB), report.proxy.afterIdle?.rssMiB ?? 0);
    memory.afterIdleMiB = report.proxy.afterIdle?.rssMiB;
    if (memory.boundMiB !== undefined && memory.peakMiB > memory.boundMiB)
      fail(`the proxy's RSS reached ${memory.peakMiB} MiB, above its bound of ${memory.boundMiB} MiB`);
    if (memory.afterIdleMiB !== undefined) {
      const share = options.idleRssShare ?? 1.5;
      memory.afterIdleAllowedMiB = Math.round(baseline.rssMiB * share * 10) / 10;
      if (memory.afterIdleMiB > memory.afterIdleAllowedMiB)
        fail(
          `the proxy's RSS ${idleSeconds} s after the clients closed is ${memory.afterIdleMiB} MiB, ` +
            `${(memory.afterIdleMiB / baseline.rssMiB).toFixed(2)}x its ${baseline.rssMiB} MiB at start (allowed ${share}x: ${memory.afterIdleAllowedMiB} MiB)`,
        );
    }
    return report;
  } catch (error) {
    if (proxyOutput.length > 0)
      (error as Error).message += `\nproxy output:\n${proxyOutput.join("").slice(-3000)}`;
    throw error;
  } finally {
    if (proxyChild && proxyChild.exitCode === null) {
      const exited = new Promise((r) => proxyChild?.once("exit", r));
      proxyChild.kill("SIGTERM");
      const timer = setTimeout(() => proxyChild?.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await operator?.stop("SIGTERM");
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }
}

/** The memory check in one line: RSS before, peak and after idle, each against what it may be. */
function memoryLine(m: SoakReport["proxy"]["memory"], idleSeconds: number | undefined): string {
  const peak = `peak ${m.peakMiB}${m.boundMiB === undefined ? "" : ` (bound ${m.boundMiB})`}`;
  const idle =
    m.afterIdleMiB === undefined || idleSeconds === undefined
      ? "not read after idle"
      : `after ${idleSeconds} s idle ${m.afterIdleMiB} (${(m.afterIdleMiB / m.beforeMiB).toFixed(2)}x; allowed ${m.afterIdleAllowedMiB})`;
  return `proxy RSS MiB: before ${m.beforeMiB} / ${peak} / ${idle}`;
}

/** The report as a reader wants it. */
export function formatSoakReport(r: SoakReport): string {
  const lines: string[] = [];
  const sorted = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k}: ${v}`)
      .join(", ") || "none";
  const { first, peak, last } = r.proxy.afterWarmup;
  lines.push(
    `soak: ${r.users} users, ${r.httpClients} keep-alive HTTP clients, ${r.websocketSlots} WebSockets`,
    `  setup ${r.setupSeconds.toFixed(1)} s, load ${r.loadSeconds.toFixed(1)} s (warm-up ${r.warmupSeconds} s), drain ${r.drainSeconds.toFixed(1)} s`,
    `HTTP: ${r.http.requests} requests (${r.http.perSecond}/s), ${r.http.usersServed}/${r.users} users served`,
    `  by status: ${sorted(r.http.byStatus)}`,
    `  transport errors: ${sorted(r.http.transportErrors)}; 502 without an upstream fault: ${r.http.faultless502}; 504 not planned: ${r.http.unplanned504}`,
    `WebSocket: ${r.websocket.sessions} sessions, ${r.websocket.messagesSent} messages sent, ${r.websocket.messagesEchoed} echoed, ` +
      `${r.websocket.unansweredAtClose} in flight when dropped; ${r.websocket.droppedByServer} dropped by upstream restarts; ${r.websocket.usersEchoed}/${r.users} users echoed`,
    `  handshakes refused: ${sorted(r.websocket.refused)}; handshake errors: ${sorted(r.websocket.handshakeErrors)}`,
    `upstreams saw ${r.upstreams.requestsSeen} requests and ${r.upstreams.upgradesSeen} upgrades; ` +
      `this process's event-loop delay p99 ${r.harness.loopDelayP99Ms} ms, max ${r.harness.loopDelayMaxMs} ms`,
    `faults: ${r.faults.upstreamRestarts} upstream restarts (${r.faults.restartRetries} listen retries), ` +
      `${r.faults.userlandStops} Userland stops / ${r.faults.userlandStarts} starts (${r.faults.flipErrors} patch retries), ` +
      `${r.faults.overridesRewrites} overrides file rewrites`,
    `wrong-user: ${r.wrongUser}   unexpected: ${r.unexpected}   mismatched: ${r.mismatched}`,
    memoryLine(r.proxy.memory, r.proxy.afterIdle?.seconds),
    `proxy pid ${r.proxy.pid}: baseline ${r.proxy.baseline.rssMiB} MiB RSS, ` +
      `${r.proxy.baseline.heapMiB ?? "?"} MiB heap used, ${r.proxy.baseline.fds} fds`,
    `  after warm-up: RSS first ${first.rssMiB} / peak ${peak.rssMiB} / last ${last.rssMiB} MiB ` +
      `(lowest in the last third ${r.proxy.afterWarmup.lateFloorRssMiB}); ` +
      `heap used first ${first.heapMiB ?? "?"} / peak ${peak.heapMiB} / last ${last.heapMiB ?? "?"} MiB ` +
      `(after each full GC: ${r.proxy.afterWarmup.heapAfterMajorGcMiB.join(", ") || "none during the load"}); ` +
      `fds first ${first.fds} / peak ${peak.fds} / last ${last.fds}`,
    `  after clients closed: ${r.proxy.afterClose.fds} fds, ${r.proxy.afterClose.rssMiB} MiB RSS ` +
      `(${r.proxy.afterClose.settleSeconds} s after drain began), websockets_open ${r.proxy.afterClose.websocketsOpen ?? "?"}`,
    ...(r.proxy.afterIdle
      ? [
          `  after ${r.proxy.afterIdle.seconds} s idle: ${r.proxy.afterIdle.rssMiB} MiB RSS ` +
            `(${(r.proxy.afterIdle.rssMiB / r.proxy.baseline.rssMiB).toFixed(2)}x the baseline): ` +
            `V8 heap ${r.proxy.afterIdle.heapTotalMiB ?? "?"} MiB reserved, ${r.proxy.afterIdle.heapUsedMiB ?? "?"} in use; ` +
            `external ${r.proxy.afterIdle.externalMiB ?? "?"} MiB; the rest ${r.proxy.afterIdle.restMiB ?? "?"} MiB ` +
            `(code, stacks, the allocator's free memory); spaces ${JSON.stringify(r.proxy.afterIdle.spacesMiB ?? {})}`,
        ]
      : []),
    `  samples (t s: RSS MiB/heap MiB/fds): ${r.proxy.samples
      .filter((_, i, all) => all.length <= 40 || i % Math.ceil(all.length / 40) === 0 || i === all.length - 1)
      .map((s) => `${s.t}:${s.rssMiB}/${s.heapMiB ?? "?"}/${s.fds}`)
      .join(" ")}`,
  );
  if (r.proxy.metrics.length > 0) lines.push("proxy metrics:", ...r.proxy.metrics.map((l) => `  ${l}`));
  if (r.examples.length > 0) lines.push("examples:", ...r.examples.map((l) => `  ${l}`));
  lines.push(r.failures.length === 0 ? "PASS" : `FAIL:\n${r.failures.map((f) => `  - ${f}`).join("\n")}`);
  return lines.join("\n");
}
