/**
 * Students in real IDEs, measured: `node bench/ide.ts [N]` (default 20; `npm run bench:ide`).
 *
 * Starts a private control plane with the real node and installs the platform with its chart: the
 * image built from the Dockerfile, the values deploy/README.md sets plus this machine's
 * (dev/nodePlatform.ts), deploy/'s Templates with locally built images. Then, per Template:
 *   - sign-in → the IDE's own first byte (not the proxy's starting page), for one student and for
 *     N students signing in at once. Each has a Userland a teacher created, stopped; the visit
 *     starts it (proxy.startOnAccess), as after a weekend or idle culling;
 *   - baseline: the same pod spec created as a bare Pod (no platform, emptyDir for volumes),
 *     create → Ready by its own probe, 1 and N at once: what the node alone costs;
 *   - each platform pod's memory (working set, from its cgroup): idle, and the peak in the rush.
 * Also printed: image build (or cache check) times and install → every component Ready.
 */
import { readdirSync, readFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { userlandNameFor } from "../api/naming.ts";
import type { Template } from "../api/v1alpha1/index.ts";
import { repoRoot } from "../cluster/repoRoot.ts";
import { buildPlatformImage, importImage, repositoryAndTag } from "../cluster/node/images.ts";
import { Relays } from "../cluster/node/relay.ts";
import {
  NODE_PLATFORM_DOMAIN,
  exposePlatform,
  guideValues,
  helmInstall,
  localTemplates,
  machineValues,
  startLoginProvider,
  waitForPlatformReady,
} from "../dev/nodePlatform.ts";
import { paths } from "../api/kubePaths.ts";
import { k8s } from "../lib/kube.ts";
import { KubeRest } from "../lib/kubeRest.ts";
import { timePodsReady } from "./pods.ts";
import { percentile } from "./stats.ts";
import { startRealCluster } from "../cluster/realCluster.ts";
import { StudentClient } from "./studentClient.ts";
import { runBench } from "./run.ts";

const count = Number(process.argv[2] ?? 20);
if (!Number.isInteger(count) || count < 1) {
  console.error("usage: node bench/ide.ts [number of students signing in at once, default 20]");
  process.exit(2);
}
const NAMESPACE = "ide";
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

const cluster = await startRealCluster(join(repoRoot, ".userland", "bench-ide"));
const { kc, node, binDir } = cluster;
const core = kc.makeApiClient(k8s.CoreV1Api);
const apps = kc.makeApiClient(k8s.AppsV1Api);
const rest = new KubeRest(kc);
const work = mkdtempSync(join(tmpdir(), "userland-bench-ide-"));
const relays = Relays.into(node.namespacePid);
const containerd = { ctr: join(binDir, "ctr"), socket: node.containerdSocket };

async function cleanup(): Promise<void> {
  await relays.close().catch(() => undefined);
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

const timings: [string, number][] = [];
async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await step();
  timings.push([what, Date.now() - started]);
  return result;
}

/** CPU requests of BENCH_CPU_REQUEST for every container and the Template's default. */
const BENCH_CPU_REQUEST = "20m";
function overcommitCpu(template: Template): void {
  const requests = template.spec.defaultResources?.requests;
  if (requests) requests.cpu = BENCH_CPU_REQUEST;
  for (const container of template.spec.template.spec?.containers ?? []) {
    if (container.resources?.requests) container.resources.requests.cpu = BENCH_CPU_REQUEST;
  }
}

/** The working set (usage minus inactive file cache, as kubelet counts it) of a pod's cgroup. */
function podMemory(uid: string): number | undefined {
  const base = "/sys/fs/cgroup/memory";
  for (const root of readdirSync(base).filter((d) => d.startsWith("userland-node-"))) {
    for (const qos of ["", "burstable", "besteffort"]) {
      const dir = join(base, root, "kubepods", qos, `pod${uid}`);
      if (!existsSync(dir)) continue;
      const usage = Number(readFileSync(join(dir, "memory.usage_in_bytes"), "utf8"));
      const inactive = /^total_inactive_file (\d+)$/m.exec(readFileSync(join(dir, "memory.stat"), "utf8"));
      return usage - Number(inactive?.[1] ?? 0);
    }
  }
  return undefined;
}

async function platformPods(): Promise<V1Pod[]> {
  return (
    await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: "app.kubernetes.io/name=userland" })
  ).items;
}

/** Records each platform pod's memory into `peaks` (by component) where it is higher. */
async function samplePlatformMemory(peaks: Map<string, number>): Promise<void> {
  // A failed listing (the API server busy in the rush) just skips one sample.
  const pods = await platformPods().catch(() => []);
  for (const pod of pods) {
    const component = pod.metadata?.labels?.["app.kubernetes.io/component"] ?? "?";
    const bytes = podMemory(pod.metadata?.uid ?? "");
    if (bytes !== undefined) peaks.set(component, Math.max(peaks.get(component) ?? 0, bytes));
  }
}

/** Samples every platform pod's memory into `peaks` every 500 ms until stopped. */
function sampleMemory(peaks: Map<string, number>): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await samplePlatformMemory(peaks);
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

await runBench("bench/ide.ts", cleanup, async () => {
  // The platform, installed.
  const image = await timed("platform image: build (or cache check)", () => buildPlatformImage());
  await timed("platform image: import into containerd", () =>
    importImage(containerd.ctr, containerd.socket, image),
  );
  // The Templates ask for 250m CPU per student (100m + 50m for MariaDB + phpMyAdmin): on 2 cores
  // only about 6 fit, and the rest would wait for a node. Overcommitted as an admin of a small
  // machine would, so that every student of the rush runs and what is measured is the platform.
  const templates = await timed("IDE images: build (or cache check) and import", () =>
    localTemplates(containerd, overcommitCpu),
  );
  const idp = await startLoginProvider(relays, {
    redirectUris: [`http://auth.${NODE_PLATFORM_DOMAIN}/callback/oidc`],
  });
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await core.createNamespacedSecret({
    namespace: NAMESPACE,
    body: { metadata: { name: "userland-oidc" }, stringData: { "client-secret": idp.clientSecret } },
  });
  await timed("helm install → every component Ready", async () => {
    await helmInstall({
      binDir,
      kubeconfig: cluster.controlPlane.kubeconfigPath,
      dir: join(work, "helm"),
      namespace: NAMESPACE,
      values: [guideValues(idp, "userland-oidc"), machineValues(), { image: repositoryAndTag(image) }],
    });
    await waitForPlatformReady(apps, NAMESPACE);
  });
  for (const template of templates) {
    await rest.create(paths.namespaced("userland.dev", "v1alpha1", "templates", NAMESPACE), {
      ...template,
      metadata: { name: template.metadata.name },
    });
  }
  const hosts = await exposePlatform(relays, core, NAMESPACE);
  const idle = new Map<string, number>();
  await samplePlatformMemory(idle);

  /** Requests that failed while students waited for their IDE (asked again, as the starting page does). */
  const retried: string[] = [];

  /** `n` students of `template` sign in at once; each one's sign-in → IDE first byte in ms. */
  async function rush(template: string, n: number, round: string): Promise<number[]> {
    const users = Array.from({ length: n }, (_, i) => `${round}-${template}-${i}`.slice(0, 40));
    await Promise.all(
      users.map((user) =>
        rest.create(paths.namespaced("userland.dev", "v1alpha1", "userlands", NAMESPACE), {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Userland",
          metadata: { name: userlandNameFor(user, template) },
          spec: { user, templateName: template, enabled: false },
        }),
      ),
    );
    const url = new URL(`http://${template}.${hosts.domain}/`);
    const times = await Promise.all(
      users.map(async (user) => {
        const student = new StudentClient((u) => hosts.portFor(u));
        const started = performance.now();
        await student.signIn(url, user);
        const answer = await student.untilEnvironmentAnswers(url, 15 * 60_000);
        retried.push(...student.networkErrors);
        return answer.firstByteAt - started;
      }),
    );
    // Gone again, so that the next Template's rush has the node to itself.
    await Promise.all(
      users.map((user) =>
        rest.delete(
          paths.namespaced(
            "userland.dev",
            "v1alpha1",
            "userlands",
            NAMESPACE,
            userlandNameFor(user, template),
          ),
        ),
      ),
    );
    for (;;) {
      const left = (
        await core.listNamespacedPod({
          namespace: NAMESPACE,
          labelSelector: "app.kubernetes.io/managed-by=userland-operator",
        })
      ).items;
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    return times.sort((a, b) => a - b);
  }

  /** `n` bare Pods of the Template's pod spec at once (emptyDir for its volumes): create → Ready, in ms. */
  function barePods(template: Template, n: number): Promise<number[]> {
    const spec = structuredClone(template.spec.template.spec);
    if (!spec) throw new Error(`${template.metadata.name}: no pod spec`);
    spec.volumes = (template.spec.volumes ?? []).map((v) => ({ name: v.name, emptyDir: {} }));
    return timePodsReady(core, spec, { namespace: `bare-${template.metadata.name}-${n}`, n });
  }

  const rows: string[] = [];
  const peaks = new Map<string, number>();
  for (const template of templates) {
    const name = template.metadata.name ?? "";
    console.error(`[bench] ${name}: 1 student`);
    const one = await rush(name, 1, "one");
    console.error(`[bench] ${name}: ${count} students at once`);
    const sampler = sampleMemory(peaks);
    const many = await rush(name, count, "many").finally(() => sampler.stop());
    const bareOne = await barePods(template, 1);
    const bareMany = await barePods(template, count);
    const row = (label: string, students: number[], bare: number[]) =>
      `| ${name} | ${label} | ${s(percentile(students, 50))} | ${s(percentile(students, 95))} | ${s(percentile(bare, 50))} | ${s(percentile(bare, 95))} |`;
    rows.push(row("1 student", one, bareOne), row(`${count} at once`, many, bareMany));
    console.error(`[bench] ${name}: done`);
  }

  console.log(`\nStudents in real IDEs on the real node (this machine, 2 cores)\n`);
  console.log(
    `CPU requests of every IDE container set to ${BENCH_CPU_REQUEST}, so that ${count} fit on 2 cores`,
  );
  console.log(`real node start-up: ${s(cluster.nodeStartMs)}`);
  for (const [what, ms] of timings) console.log(`${what}: ${s(ms)}`);
  console.log(
    "\n| Template | students | sign-in → IDE p50 | p95 | baseline: bare pod create → Ready p50 | p95 |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: |");
  for (const row of rows) console.log(row);
  console.log("\n| platform pod (each) | idle | peak during the rushes |");
  console.log("| --- | ---: | ---: |");
  for (const [component, bytes] of idle)
    console.log(`| ${component} | ${mib(bytes)} | ${mib(peaks.get(component) ?? 0)} |`);
  console.log(`\nfailed requests while waiting for an IDE, asked again: ${retried.length}`);
  for (const line of [...new Set(retried)].slice(0, 5)) console.log(`  ${line}`);
  console.log(
    "\nsign-in → IDE: from the first request of the sign-in (proxy → auth → provider's form → callback) to the first byte of the IDE's own answer;" +
      " the baseline has no platform, no sign-in and no volume claim.",
  );
  await idp.close();
});
