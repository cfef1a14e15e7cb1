/**
 * Idle memory of the proxy and the user-manager: each started as a process (its main.ts) against a
 * private control plane, ready, then left alone for 15 s; its RSS read from /proc. Three runs per
 * component, the median reported. `node bench/idleMemory.ts [TREE...]` measures this checkout, or
 * each source tree given (e.g. an older commit's, extracted with `git archive`), against one
 * control plane, so the numbers of two commits compare (docs/decisions/0002-operator.md).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ControlPlane } from "../cluster/controlPlane.ts";
import { installCustomResourceDefinitions } from "../cluster/customResourceDefinitions.ts";
import { generateSigningKey, loadSigningKeys, publicJwks } from "../lib/session.ts";
import { runBench } from "./run.ts";
import { repoRoot } from "../cluster/repoRoot.ts";

const IDLE_MS = 15_000;
const RUNS = 3;
const trees = process.argv.length > 2 ? process.argv.slice(2) : [repoRoot];
const dir = mkdtempSync(join(tmpdir(), "userland-idle-memory-"));
const controlPlane = new ControlPlane({ dir: join(dir, "control-plane") });

/** What each component needs to start and how it says it is listening and ready. */
function components(files: { publicKeys: string; upstreams: string }) {
  return [
    {
      name: "proxy",
      main: "services/proxy/main.ts",
      listening: "proxy listening",
      readyz: (log: string) => `${/"adminUrl":"(http:\/\/[^"]+)"/.exec(log)?.[1]}/readyz`,
      env: {
        PROXY_HOST: "127.0.0.1",
        PROXY_PORT: "0",
        PROXY_ADMIN_HOST: "127.0.0.1",
        PROXY_ADMIN_PORT: "0",
        PROXY_SESSION_PUBLIC_KEYS_FILE: files.publicKeys,
        PROXY_LOGIN_URL: "https://auth.example.test/login",
        PROXY_UPSTREAM_OVERRIDES_FILE: files.upstreams,
        PROXY_DEFAULT_TEMPLATE: "demo",
      },
    },
    {
      name: "user-manager",
      main: "services/user-manager/main.ts",
      listening: "user-manager listening",
      readyz: (log: string) => `${/"address":"(http:\/\/[^"]+)"/.exec(log)?.[1]}/readyz`,
      env: {
        USER_MANAGER_HOST: "127.0.0.1",
        USER_MANAGER_PORT: "0",
        USER_MANAGER_ADMIN_HOST: "127.0.0.1",
        USER_MANAGER_ADMIN_PORT: "0",
      },
    },
  ];
}

/** Starts `main` from `tree`, waits until it is ready and idle, and returns its RSS in MiB. */
async function idleRss(
  tree: string,
  component: ReturnType<typeof components>[number],
  kubeconfig: string,
): Promise<number> {
  const child = spawn(process.execPath, [join(tree, component.main)], {
    env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, USERLAND_NAMESPACE: "default", ...component.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr.on("data", (d: Buffer) => (log += d.toString()));
  try {
    const deadline = Date.now() + 60_000;
    const waitUntil = async (what: string, done: () => Promise<boolean> | boolean) => {
      while (!(await done())) {
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`${component.name}: ${what}:\n${log}`);
        await sleep(100);
      }
    };
    await waitUntil("not listening", () => log.includes(component.listening));
    const readyz = component.readyz(log);
    await waitUntil("not ready", async () => (await fetch(readyz).catch(() => undefined))?.status === 200);
    await sleep(IDLE_MS);
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
  } finally {
    child.kill("SIGKILL");
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once("exit", r));
  }
}

await runBench(
  "idle memory",
  async () => {
    await controlPlane.stop();
    rmSync(dir, { recursive: true, force: true });
  },
  async () => {
    const info = await controlPlane.start();
    await installCustomResourceDefinitions(controlPlane.rest);
    const files = { publicKeys: join(dir, "public.json"), upstreams: join(dir, "upstreams.json") };
    writeFileSync(join(dir, "private.json"), JSON.stringify({ keys: [await generateSigningKey()] }));
    writeFileSync(
      files.publicKeys,
      JSON.stringify(publicJwks(await loadSigningKeys(join(dir, "private.json")))),
    );
    writeFileSync(files.upstreams, "{}");
    console.log(`idle RSS (MiB) after ${IDLE_MS / 1000} s, median of ${RUNS} runs`);
    for (const tree of trees)
      for (const component of components(files)) {
        const samples: number[] = [];
        for (let run = 0; run < RUNS; run++) samples.push(await idleRss(tree, component, info.kubeconfig));
        samples.sort((a, b) => a - b);
        const median = samples[Math.floor(RUNS / 2)] ?? NaN;
        console.log(
          `${tree}\t${component.name}\t${median.toFixed(1)}\t(${samples.map((s) => s.toFixed(1)).join(", ")})`,
        );
      }
  },
);
