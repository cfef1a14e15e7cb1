/**
 * Proxy benchmark, loopback only, about 2-3 minutes:
 *
 *   node bench/proxy.ts                 direct, configurable-http-proxy, userland proxy (sessions on),
 *                                       nginx + auth_request to the auth service (the common set-up)
 *   BENCH_SECONDS=1 node bench/proxy.ts shorter cells
 *   BENCH_BARE=0 node bench/proxy.ts    without the bare-library rows
 *   BENCH_NGINX=0 node bench/proxy.ts   without the nginx anchor (bench/nginx.ts)
 *   BENCH_CORES=1 node bench/proxy.ts   also minimal forwarding cores (node:http, undici stream()
 *                                       and dispatch()): the ceiling a Node proxy can reach here
 *   BENCH_HEAP_DEFAULTS=1 node bench/proxy.ts
 *                                       also the userland proxy without the chart's heap limits
 *
 * Every HTTP cell also shows the CPU time each server used per request (from /proc, measured part
 * only), which moves far less than requests/s when other work loads the machine.
 *
 * Besides the three targets the issue asks for, it runs the same tiny server around bare
 * http-proxy 1.18.1 and bare http-proxy-3: the measurement behind docs/decisions/0003-proxy-library.md.
 *
 * Every server runs in its own child process on 127.0.0.1 (the load generator is this process);
 * all of them share one upstream process. For each target: requests/s and p50/p99 latency with
 * 1, 10 and 100 keep-alive connections for a small and a 1 MiB response, WebSocket round-trip
 * latency and messages/s, and RSS and open file descriptors of each child after the run.
 *
 * The userland proxy runs createProxyServer with its real session verification, header rules,
 * activity recording, metrics and access log (to /dev/null), under the Node.js options the chart
 * gives it (proxy.nodeOptions: its heap limits); the Kubernetes side is a static view
 * of one Ready Userland (no API server needed; the informer is not on the request path anyway).
 */
import { fork, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import {
  createServer,
  request as httpRequest,
  Agent,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { pipeline } from "node:stream";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { Pool } from "undici";
import { WebSocket, WebSocketServer } from "ws";
import { chartProxyNodeOptions } from "../cluster/harness/chartValues.ts";
import { heldPort } from "../cluster/ports.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { startNginxAnchor, type NginxAnchor } from "./nginx.ts";
import { percentile } from "./stats.ts";

const NGINX_NAME = "nginx + auth_request";

const here = fileURLToPath(import.meta.url);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5);
const HOST = "code.bench.test";
const SMALL = Buffer.from(JSON.stringify({ ok: true, text: "hello from the environment".repeat(3) }));
const BIG = Buffer.alloc(1024 * 1024, 120);

type Role = "upstream" | "userland" | "hp1" | "hp3" | "node-http" | "undici-stream" | "undici-dispatch";

// ---------------------------------------------------------------- child roles

async function runUpstream(): Promise<number> {
  const server = createServer((req, res) => {
    const body = req.url === "/big" ? BIG : SMALL;
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws) => ws.on("message", (data: Buffer) => ws.send(data)));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

async function runUserland(upstreamPort: number, publicJwks: string): Promise<number> {
  const { createSessionVerifier, parseVerificationKeys } = await import("../lib/session.ts");
  const { createProxyServer } = await import("../services/proxy/server.ts");
  const { requestSessions } = await import("../lib/requestSessions.ts");
  const { overrideResolver } = await import("../services/proxy/route/resolver.ts");
  const { createMetrics } = await import("../services/proxy/metrics.ts");
  const { trustedProxies } = await import("../services/proxy/forward/headers.ts");
  const { UserlandIndex } = await import("../services/proxy/route/userlandIndex.ts");
  const { createLogger } = await import("../lib/logger.ts");
  const { MAX_ENDED_SESSIONS, newSessionRecord, sessionEnded } = await import("../api/sessions.ts");
  const index = new UserlandIndex();
  // Ended sessions (api/sessions.ts) at their most: a full list and a sign-out-everywhere mark, so
  // every request pays the revocation check at its worst (issue 29 item 5).
  const soon = Math.floor(Date.now() / 1000) + 3600;
  const ended = Array.from({ length: MAX_ENDED_SESSIONS }, (_, i) => `ended-session-${i}:${soon}`).join(" ");
  const benchUserland = {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: {
      name: "bench",
      namespace: "bench",
      generation: 1,
    },
    spec: { user: "bench-user", templateName: "code" },
    status: { phase: "Ready", observedGeneration: 1, service: { name: "code-bench-svc", port: 80 } },
  } as const;
  const benchRecord = newSessionRecord("bench-user", {
    "userland.dev/sessions-valid-after": "2020-01-01T00:00:00Z",
    "userland.dev/ended-sessions": ended,
  });
  index.upsert(benchUserland);
  const activity = new Map<string, number>();
  const proxy = createProxyServer({
    config: {
      loginUrl: new URL("https://auth.bench.test/login"),
      hostTemplates: new Map([[HOST, "code"]]),
      baseDomain: undefined,
      visitDomain: undefined,
      origins: "shared",
      defaultTemplate: undefined,
      trustedProxies: trustedProxies([]),
      allowedOrigins: [],
      readyGraceMs: 0,
      upstreamTimeoutMs: 60_000,
      connectTimeoutMs: 5_000,
      websocketIdleTimeoutMs: 15 * 60_000,
      startOnAccess: false,
      accessLog: true,
      timeouts: { headersMs: 20_000, requestMs: 5 * 60_000 },
      // One benchmark user opens every connection: no per-student cap in the way.
      limits: { websocketsPerUser: 100_000, requestsPerUser: 100_000 },
      visitQuietMs: 300_000,
    },
    cluster: {
      namespace: "bench",
      findUserland: (u, t) => index.find(u, t),
      userlandsOf: (u) => (u === "bench-user" ? [benchUserland] : []),
      sessionEnded: (session) =>
        sessionEnded(session, session.user === "bench-user" ? benchRecord : undefined),
      getTemplate: () => undefined,
      synced: () => true,
    },
    sessions: requestSessions(createSessionVerifier(parseVerificationKeys(JSON.parse(publicJwks)))),
    resolver: overrideResolver(
      new Map([["bench/code-bench-svc", new URL(`http://127.0.0.1:${upstreamPort}`)]]),
    ),
    activity: { touch: (ns, name, now = Date.now()) => void activity.set(`${ns}/${name}`, now) },
    metrics: createMetrics(),
    log: createLogger("proxy"),
  });
  const { url } = await proxy.listen({ host: "127.0.0.1", port: 0, adminHost: "127.0.0.1", adminPort: 0 });
  return Number(new URL(url).port);
}

/** The same few lines around http-proxy 1.18.1 or http-proxy-3: the libraries alone. */
async function runBare(kind: "hp1" | "hp3", upstreamPort: number): Promise<number> {
  const target = `http://127.0.0.1:${upstreamPort}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 64 });
  type Bare = {
    web(req: unknown, res: unknown, opts: unknown, cb: (e: Error) => void): void;
    ws(req: unknown, socket: unknown, head: unknown, opts: unknown, cb: (e: Error) => void): void;
    on(event: "error", listener: (e: Error) => void): void;
  };
  let proxy: Bare;
  if (kind === "hp3") {
    const { ProxyServer } = await import("http-proxy-3");
    proxy = new ProxyServer({ agent }) as unknown as Bare;
  } else {
    // http-proxy 1.18.1 ships no types; a devDependency only for this comparison.
    const httpProxy1 = createRequire(import.meta.url)("http-proxy") as {
      createProxyServer(o: unknown): Bare;
    };
    proxy = httpProxy1.createProxyServer({ agent });
  }
  // Without a listener both libraries throw a socket reset after an upgrade (the bench's
  // terminate()) and the process exits.
  proxy.on("error", () => {});
  const server = createServer((req, res) => proxy.web(req, res, { target }, () => res.destroy()));
  server.on("upgrade", (req, socket, head) =>
    proxy.ws(req, socket, head, { target, agent: false }, () => socket.destroy()),
  );
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

/**
 * Forwarding cores written minimally, for the ceiling experiment in docs/decisions/0003: what a
 * Node proxy can do on this harness with node:http's client or undici's, beside http-proxy-3.
 */
async function runCore(
  kind: "node-http" | "undici-stream" | "undici-dispatch",
  upstreamPort: number,
): Promise<number> {
  const origin = `http://127.0.0.1:${upstreamPort}`;
  let handle: (req: IncomingMessage, res: ServerResponse) => void;
  if (kind === "node-http") {
    const agent = new Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 64, scheduling: "lifo" });
    handle = (req, res) => {
      const up = httpRequest(
        {
          host: "127.0.0.1",
          port: upstreamPort,
          method: req.method,
          path: req.url,
          headers: req.headers,
          agent,
        },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.rawHeaders);
          pipeline(upRes, res, () => {});
        },
      );
      up.on("error", () => res.destroy());
      pipeline(req, up, () => {});
    };
  } else {
    const { Pool } = await import("undici");
    const pool = new Pool(origin, { connections: 512, pipelining: 1, keepAliveTimeout: 30_000 });
    if (kind === "undici-stream") {
      handle = (req, res) => {
        pool
          .stream(
            {
              method: req.method as "GET",
              path: req.url ?? "/",
              headers: req.headers as Record<string, string>,
            },
            ({ statusCode, headers }) => {
              res.writeHead(statusCode, headers as Record<string, string>);
              return res;
            },
          )
          .catch(() => res.destroy());
      };
    } else {
      handle = (req, res) => {
        pool.dispatch(
          {
            method: req.method as "GET",
            path: req.url ?? "/",
            headers: req.headers as Record<string, string>,
          },
          {
            onRequestStart() {},
            onResponseStart(controller, statusCode, headers) {
              res.writeHead(statusCode, headers as Record<string, string>);
              res.on("drain", () => controller.resume());
            },
            onResponseData(controller, chunk: Buffer) {
              if (!res.write(chunk)) controller.pause();
            },
            onResponseEnd() {
              res.end();
            },
            onResponseError() {
              res.destroy();
            },
          },
        );
      };
    }
  }
  const server = createServer(handle);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

// ---------------------------------------------------------------- the load generator

interface Child {
  name: string;
  process: ChildProcess;
  port: number;
}

function startChild(
  name: string,
  role: Role,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<Child> {
  const child = fork(here, ["--role", role, ...args], {
    stdio: ["ignore", "ignore", "inherit", "ipc"],
    env: { ...process.env, ...env },
  });
  // An exit before the bench's own SIGTERM is reported, so a missing row has a reason.
  child.once("exit", (code, signal) => {
    if (signal !== "SIGTERM") console.error(`  ${name} exited (code ${code}, signal ${signal})`);
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number }) => resolve({ name, process: child, port: m.port }));
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

async function startChp(upstreamPort: number): Promise<Child> {
  // configurable-http-proxy takes no passed socket: ports held for this run (cluster/ports.ts).
  const port = (await heldPort()).port;
  const apiPort = (await heldPort()).port;
  const bin = join(repoRoot, "node_modules", "configurable-http-proxy", "bin", "configurable-http-proxy");
  const child = fork(
    bin,
    [
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--api-ip",
      "127.0.0.1",
      "--api-port",
      String(apiPort),
      "--default-target",
      `http://127.0.0.1:${upstreamPort}`,
      "--log-level",
      "error",
    ],
    {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      env: { ...process.env, CONFIGPROXY_AUTH_TOKEN: "bench-token" },
    },
  );
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = httpRequest(
        { host: "127.0.0.1", port, path: "/small" },
        (res) => (res.resume(), resolve(res.statusCode === 200)),
      );
      req.on("error", () => resolve(false));
      req.end();
    });
    if (ok) return { name: "configurable-http-proxy", process: child, port };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error("configurable-http-proxy did not start");
}

interface Cell {
  rps: number;
  /** Requests answered in the measured part of the cell (the warm-up excluded). */
  requests: number;
  /** CPU time (user + system) of the serving processes per measured request: ms. */
  cpuPerRequest: number;
  p50: number;
  p99: number;
  errors: number;
}

async function httpCell(
  port: number,
  path: string,
  connections: number,
  headers: Record<string, string>,
  cpu: () => number,
): Promise<Cell> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const latencies: number[] = [];
  let errors = 0;
  const run = async (until: number, record: boolean) => {
    const worker = async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          const { statusCode, body } = await pool.request({ method: "GET", path, headers });
          for await (const _ of body) void _;
          if (statusCode !== 200) errors++;
        } catch {
          errors++;
        }
        if (record) latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
  };
  await run(performance.now() + 300, false);
  const cpuBefore = cpu();
  const start = performance.now();
  await run(start + SECONDS * 1000, true);
  const elapsed = (performance.now() - start) / 1000;
  const cpuUsed = cpu() - cpuBefore;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    requests: latencies.length,
    cpuPerRequest: cpuUsed / latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
  };
}

async function openWs(port: number, headers: Record<string, string>): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers, origin: `http://${HOST}` });
  await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
  return ws;
}

async function wsCell(
  port: number,
  headers: Record<string, string>,
  cpu: () => number,
): Promise<{ rttP50: number; rttP99: number; msgsPerSec: number; cpuPer1000: number }> {
  const payload = Buffer.alloc(64, 97);
  const one = await openWs(port, headers);
  const rtts: number[] = [];
  const rttUntil = performance.now() + Math.min(2000, SECONDS * 1000);
  while (performance.now() < rttUntil) {
    const t0 = performance.now();
    await new Promise((resolve) => (one.once("message", resolve), one.send(payload)));
    rtts.push(performance.now() - t0);
  }
  one.close();
  rtts.sort((a, b) => a - b);
  const sockets = await Promise.all(Array.from({ length: 20 }, () => openWs(port, headers)));
  let count = 0;
  const cpuBefore = cpu();
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          ws.on("message", () => {
            count++;
            if (performance.now() < until) ws.send(payload);
            else resolve();
          });
          // 8 messages in flight per socket.
          for (let i = 0; i < 8; i++) ws.send(payload);
        }),
    ),
  );
  const cpuUsed = cpu() - cpuBefore;
  for (const ws of sockets) ws.terminate();
  return {
    rttP50: percentile(rtts, 50),
    rttP99: percentile(rtts, 99),
    msgsPerSec: count / SECONDS,
    cpuPer1000: (cpuUsed / count) * 1000,
  };
}

/** CPU time (user + system) `pids` have used so far, in ms (/proc's clock ticks are 10 ms). */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    if (!pid || !existsSync(`/proc/${pid}/stat`)) return NaN;
    // The fields after the command name, which is in parentheses and may contain spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

/** RSS and open file descriptors of `pids` together. */
function processStats(pids: number[]): { rssMiB: number; fds: number } {
  let rssMiB = 0;
  let fds = 0;
  for (const pid of pids) {
    // A process that has exited shows as "-" instead of ending the bench before its tables.
    if (!pid || !existsSync(`/proc/${pid}/status`)) return { rssMiB: NaN, fds: NaN };
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    rssMiB += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
    fds += readdirSync(`/proc/${pid}/fd`).length;
  }
  return { rssMiB, fds };
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const ratio = (a: number, b: number) =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : "-";

async function main(): Promise<void> {
  const started = performance.now();
  const { generateSigningKey, parseSigningKeys, publicJwks, createSessionSigner } =
    await import("../lib/session.ts");
  const privateJwks = { keys: [await generateSigningKey("bench")] };
  const keys = await parseSigningKeys(privateJwks);
  const token = await createSessionSigner(keys).sign("bench-user", 3600);

  const upstream = await startChild("upstream", "upstream");
  const children: Child[] = [upstream];
  const targets: {
    name: string;
    port: number;
    /** The processes that serve it (default: its child, or the upstream for direct). */
    pids?: () => number[];
    child?: Child;
    headers: Record<string, string>;
    /** Forwards WebSockets (the minimal forwarding cores do not). */
    ws?: boolean;
  }[] = [{ name: "direct", port: upstream.port, headers: {} }];
  const cookie = `userland_session=${token}`;
  let nginx: NginxAnchor | undefined;
  try {
    const chp = await startChp(upstream.port);
    children.push(chp);
    targets.push({ name: "configurable-http-proxy", port: chp.port, child: chp, headers: {} });
    // With the heap limits the chart gives the proxy (proxy.nodeOptions); BENCH_HEAP_DEFAULTS=1
    // adds the same proxy under V8's defaults, to see what the limits cost in one run.
    const heaps: [string, string[]][] = [["userland proxy", chartProxyNodeOptions()]];
    if (process.env.BENCH_HEAP_DEFAULTS === "1") heaps.push(["userland proxy, V8 heap defaults", []]);
    for (const [name, nodeOptions] of heaps) {
      const userland = await startChild(name, "userland", [String(upstream.port)], {
        BENCH_JWKS: JSON.stringify(publicJwks(keys)),
        NODE_OPTIONS: [process.env.NODE_OPTIONS, ...nodeOptions].filter(Boolean).join(" "),
      });
      children.push(userland);
      targets.push({ name, port: userland.port, child: userland, headers: { host: HOST, cookie } });
    }
    if (process.env.BENCH_NGINX !== "0") {
      nginx = await startNginxAnchor(upstream.port, privateJwks, "bench-user", cookie);
      targets.push({ name: NGINX_NAME, port: nginx.port, pids: nginx.pids, headers: { cookie } });
    }
    const bare: [string, Role][] = [];
    if (process.env.BENCH_BARE !== "0")
      bare.push(["http-proxy 1.18.1 (bare)", "hp1"], ["http-proxy-3 (bare)", "hp3"]);
    if (process.env.BENCH_CORES === "1")
      bare.push(
        ["node:http core (bare)", "node-http"],
        ["undici stream core (bare)", "undici-stream"],
        ["undici dispatch core (bare)", "undici-dispatch"],
      );
    for (const [name, role] of bare) {
      const child = await startChild(name, role, [String(upstream.port)]);
      children.push(child);
      targets.push({ name, port: child.port, child, headers: {}, ws: role === "hp1" || role === "hp3" });
    }
    const pidsOf = (target: (typeof targets)[number]) =>
      target.pids?.() ?? [(target.child ?? upstream).process.pid ?? 0];
    const before = new Map(targets.map((t) => [t.name, processStats(pidsOf(t))]));

    const sizes = [
      ["small", "/small"],
      ["1 MiB", "/big"],
    ] as const;
    const results = new Map<string, Cell>();
    for (const [size, path] of sizes) {
      for (const connections of [1, 10, 100]) {
        for (const target of targets) {
          const cell = await httpCell(target.port, path, connections, target.headers, () =>
            cpuMs(pidsOf(target)),
          );
          results.set(`${target.name}|${size}|${connections}`, cell);
          process.stderr.write(
            `  ${target.name} ${size} c=${connections}: ${fmt(cell.rps)} req/s p50 ${fmt(cell.p50, 2)} ms p99 ${fmt(cell.p99, 2)} ms cpu ${fmt(cell.cpuPerRequest, 3)} ms/req${cell.errors ? ` errors ${cell.errors}` : ""}\n`,
          );
        }
      }
    }
    const ws = new Map<string, Awaited<ReturnType<typeof wsCell>>>();
    for (const target of targets) {
      if (target.ws === false) continue;
      ws.set(target.name, await wsCell(target.port, target.headers, () => cpuMs(pidsOf(target))));
      process.stderr.write(`  ${target.name} websocket done\n`);
    }
    await new Promise((r) => setTimeout(r, 1500));

    const chpName = "configurable-http-proxy";
    console.log(
      `\nProxy benchmark: loopback, ${SECONDS} s per cell, Node ${process.version}, ${(await import("node:os")).cpus().length} CPUs (load generator, proxy and upstream share them)\n`,
    );
    console.log(
      "| target | size | conns | req/s | p50 ms | p99 ms | CPU ms/req | req/s vs direct | req/s vs CHP | p99 vs CHP |",
    );
    console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const [size] of sizes) {
      for (const connections of [1, 10, 100]) {
        const direct = results.get(`direct|${size}|${connections}`);
        const chp = results.get(`${chpName}|${size}|${connections}`);
        for (const target of targets) {
          const c = results.get(`${target.name}|${size}|${connections}`);
          if (!c) continue;
          console.log(
            `| ${target.name} | ${size} | ${connections} | ${fmt(c.rps)} | ${fmt(c.p50, 2)} | ${fmt(c.p99, 2)} | ${fmt(c.cpuPerRequest, 3)} | ${ratio(c.rps, direct?.rps ?? NaN)} | ${ratio(c.rps, chp?.rps ?? NaN)} | ${ratio(c.p99, chp?.p99 ?? NaN)} |` +
              (c.errors ? ` errors: ${c.errors}` : ""),
          );
        }
      }
    }
    console.log(
      "\n| target | WS RTT p50 ms | WS RTT p99 ms | WS msgs/s (20 sockets × 8 in flight) | msgs/s vs direct | msgs/s vs CHP | CPU ms per 1000 msgs | RSS before → after (MiB) | fds before → after |",
    );
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const target of targets) {
      const w = ws.get(target.name);
      const after = processStats(pidsOf(target));
      const b = before.get(target.name);
      console.log(
        `| ${target.name} | ${fmt(w?.rttP50 ?? NaN, 3)} | ${fmt(w?.rttP99 ?? NaN, 3)} | ${fmt(w?.msgsPerSec ?? NaN)} | ${ratio(w?.msgsPerSec ?? NaN, ws.get("direct")?.msgsPerSec ?? NaN)} | ${ratio(w?.msgsPerSec ?? NaN, ws.get(chpName)?.msgsPerSec ?? NaN)} | ${fmt(w?.cpuPer1000 ?? NaN, 1)} | ${fmt(b?.rssMiB ?? NaN, 1)} → ${fmt(after.rssMiB, 1)} | ${b?.fds ?? "-"} → ${fmt(after.fds)} |`,
      );
    }
    console.log(
      `\n(direct's RSS and fds are the upstream's; ${NGINX_NAME}'s are nginx's master and worker and the auth service's together.) Total time ${fmt((performance.now() - started) / 1000)} s.`,
    );
  } finally {
    nginx?.stop();
    for (const child of children) child.process.kill();
  }
}

// Last, so every declaration above is initialised before it runs.
if (process.argv[2] === "--role") {
  const role = process.argv[3] as Role;
  const upstreamPort = Number(process.argv[4] ?? 0);
  const port =
    role === "upstream"
      ? await runUpstream()
      : role === "userland"
        ? await runUserland(upstreamPort, process.env.BENCH_JWKS ?? "")
        : role === "hp1" || role === "hp3"
          ? await runBare(role, upstreamPort)
          : await runCore(role, upstreamPort);
  process.send?.({ port });
  process.on("disconnect", () => process.exit(0));
} else {
  await main();
}
