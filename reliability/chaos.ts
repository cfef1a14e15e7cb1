/**
 * Convergence of the operator under faults ("chaos"), on a private kwok control plane.
 *
 * The engine sets up Templates (one without volumes, one with a Retain claim, one with a Delete
 * claim) and N Userlands over them, runs two operator replicas (leader election through a Lease)
 * and waits until everything has converged. Then, for a bounded time, it injects random faults:
 *   - object faults, several per second: delete or hand-edit an owned Deployment, Service or PVC,
 *     flip spec.enabled, switch spec.templateName, roll out a new image in a Template;
 *   - process faults, one at a time: restart the leader (SIGTERM, respawn), kill the leader
 *     (SIGKILL while the standby runs, respawn), restart kube-apiserver.
 * Afterwards it waits (bounded) until every Userland has exactly its desired children again,
 * compared the way the operator compares them (operator/desired.ts and operator/compare.ts), no
 * Deployment or Service remains that no current Userland wants, and no claim was deleted by the
 * operator (the API server's audit log counts its DELETE requests on persistentvolumeclaims).
 *
 * Used by `npm run chaos` (scripts/chaos.ts, 1,000 Userlands) and test/reliability/chaos.test.ts.
 */
import { createReadStream, rmSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import pLimit from "p-limit";
import type {
  V1Deployment,
  V1ObjectMeta,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import { ANNOTATIONS, childNames, LABELS } from "../api/naming.ts";
import {
  type Template,
  type TemplateSpec,
  type Userland,
  templatesPath,
  userlandsPath,
} from "../api/v1alpha1/index.ts";
import { paths } from "../api/kubePaths.ts";
import { statusCode, KubeRest } from "../lib/kubeRest.ts";
import { isSubset } from "../operator/compare.ts";
import { controllerRef, desiredChildren } from "../operator/desired.ts";
import { currentPod, schedulerReasons } from "../operator/startDiagnosis.ts";
import type { ControlPlane } from "../cluster/controlPlane.ts";
import type { ClusterAccess } from "../cluster/harness/connect.ts";
import { operatorKubeconfig, spawnOperator, type OperatorProcess } from "../cluster/harness/operator.ts";
import { simpleTemplateSpec } from "../cluster/harness/simpleTemplate.ts";
import { resources } from "../operator/resources.ts";
import { WRITE_VERBS, type AuditEvent } from "../cluster/harness/auditLog.ts";

export const OBJECT_FAULTS = [
  "deleteDeployment",
  "deleteService",
  "deletePvc",
  "editDeployment",
  "editService",
  "editPvc",
  "flipEnabled",
  "switchTemplate",
  "templateRollout",
] as const;
export const PROCESS_FAULTS = ["restartOperator", "killLeader", "restartApiServer"] as const;
export type ObjectFault = (typeof OBJECT_FAULTS)[number];
export type ProcessFault = (typeof PROCESS_FAULTS)[number];
export type FaultKind = ObjectFault | ProcessFault;

/** Relative frequency of each object fault. */
const WEIGHTS: Record<ObjectFault, number> = {
  deleteDeployment: 2,
  deleteService: 2,
  deletePvc: 1,
  editDeployment: 3,
  editService: 2,
  editPvc: 1.5,
  flipEnabled: 2,
  switchTemplate: 2,
  templateRollout: 0.15,
};

const USER_AGENT = "userland-chaos";
const EDITED_LABEL = "chaos.userland.dev/edited";
const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";

export interface ChaosOptions {
  controlPlane: ControlPlane;
  /** Admin access to the same control plane. */
  cluster: ClusterAccess;
  /** An existing namespace that holds nothing else. */
  namespace: string;
  userlands: number;
  /** How long faults are injected. */
  faultSeconds: number;
  /** Bound for convergence, after the set-up and after the faults. */
  convergeSeconds: number;
  /** Object faults started per second (default 3). */
  faultsPerSecond?: number;
  /**
   * Seconds between process faults (default 20), the first after half of it; they cycle through
   * `processFaults`, each round in random order.
   */
  processFaultEvery?: number;
  /** Which process faults to inject (default all). */
  processFaults?: readonly ProcessFault[];
  /** Seed of the random choices, for reproducing a run (default random). */
  seed?: number;
  /** After convergence, how long to watch that the operator sends no writes (default 5 s). */
  quietSeconds?: number;
  /** Extra operator environment, e.g. LOG_LEVEL or OPERATOR_WORKERS. */
  operatorEnv?: Record<string, string>;
  log?: (line: string) => void;
}

export interface FaultCount {
  /** The fault happened (the API server accepted the write, or the process was restarted). */
  injected: number;
  /** The target did not exist at that moment (e.g. deleted a moment earlier). */
  missed: number;
  /** The request failed (typically while kube-apiserver was down). */
  failed: number;
  /** Injected faults by variant, e.g. editDeployment: replicas, image, labels. */
  variants: Record<string, number>;
  /** Process faults: seconds from the fault until a replica led again with synced caches. */
  recoverySeconds: number[];
}

export interface Mismatch {
  userland: string;
  problem: string;
}

export interface Inspection {
  userlands: number;
  mismatches: Mismatch[];
  orphans: string[];
  /** Claims of previous Templates, kept on purpose (switching templates never deletes data). */
  keptPvcs: number;
}

export interface AuditSummary {
  /** Write requests by the operator's ServiceAccount during the run (Lease renewals excluded). */
  operatorWrites: number;
  operatorWritesByResource: Record<string, number>;
  leaseWrites: number;
  /** DELETE requests by the operator on persistentvolumeclaims: must be 0. */
  pvcDeletesByOperator: string[];
  /** Claims deleted by the chaos itself. */
  pvcDeletesByChaos: number;
  /** Claims deleted by anyone else (e.g. the garbage collector): must be 0, no Userland is deleted. */
  pvcDeletesByOthers: string[];
}

export interface ChaosReport {
  seed: number;
  userlands: number;
  templates: { name: string; volume: string }[];
  operatorReplicas: number;
  setupSeconds: number | undefined;
  faultSeconds: number;
  faults: Record<FaultKind, FaultCount>;
  convergeBoundSeconds: number;
  /** Seconds from the end of the faults until every check passed; undefined if it never did. */
  convergeSeconds: number | undefined;
  final: Inspection;
  /** The state was still converged after the quiet window. */
  stable: boolean;
  /** Operator writes in the quiet window after convergence (Lease renewals excluded). */
  quietWrites: string[];
  /**
   * For each Userland whose status the operator wrote in the quiet window: its status at
   * convergence and after, so a late write names the fact it reported.
   */
  quietStatusChanges: string[];
  audit: AuditSummary;
  /** Operator exits the chaos did not cause. */
  unexpectedExits: string[];
  /** Graceful shutdowns (SIGTERM) that did not exit with 0. */
  uncleanShutdowns: number;
  /** What the chaos did to the Userlands that did not converge, and when the process faults were. */
  histories: Record<string, string[]>;
  /** Why the run counts as failed; empty when it passed. */
  failures: string[];
}

interface UserlandState {
  user: string;
  uid: string;
  templateName: string;
  enabled: boolean;
}

interface Replica {
  identity: string;
  process: OperatorProcess;
  expectedExit: boolean;
}

/** mulberry32: a small seeded generator, so a run can be repeated with CHAOS_SEED. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const seconds = (since: number) => (Date.now() - since) / 1000;

const CLAIM = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } };

/** The Templates: no volume, a claim kept when the Userland goes (Retain), one deleted with it. */
function templateSpecs(): { name: string; volume: string; spec: (image: number) => TemplateSpec }[] {
  return [
    { name: "code", volume: "none", spec: (n) => simpleTemplateSpec(`registry.invalid/code:${n}`) },
    {
      name: "notebook",
      volume: "home (Retain)",
      spec: (n) =>
        simpleTemplateSpec(`registry.invalid/notebook:${n}`, {
          volumes: [{ name: "home", pvcSpec: CLAIM, reclaimPolicy: "Retain" }],
        }),
    },
    {
      name: "db",
      volume: "data (Delete)",
      spec: (n) =>
        simpleTemplateSpec(`registry.invalid/db:${n}`, {
          volumes: [{ name: "data", pvcSpec: CLAIM, reclaimPolicy: "Delete" }],
        }),
    },
  ];
}

type Child = V1Deployment | V1Service | V1PersistentVolumeClaim;

export class Chaos {
  private readonly opts: ChaosOptions;
  private readonly rest: KubeRest;
  private readonly rand: () => number;
  private readonly seed: number;
  private readonly log: (line: string) => void;
  private readonly state = new Map<string, UserlandState>();
  private readonly templateImage = new Map<string, number>();
  private readonly templateVolumes = new Map<string, string[]>();
  private readonly faults = {} as Record<FaultKind, FaultCount>;
  private readonly replicas: Replica[] = [];
  private readonly unexpectedExits: string[] = [];
  private uncleanShutdowns = 0;
  private kubeconfig = "";
  private username = "";
  private replicaCount = 0;
  private stopping = false;
  private readonly spawning = new Set<Promise<Replica>>();
  /** What the chaos did to each Userland, and the process faults, with seconds since the faults began. */
  private readonly history = new Map<string, string[]>();
  private faultsStarted = Date.now();

  constructor(opts: ChaosOptions) {
    this.opts = opts;
    this.rest = new KubeRest(opts.cluster.kc, USER_AGENT);
    this.seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
    this.rand = random(this.seed);
    this.log = opts.log ?? ((line) => process.stderr.write(`[chaos] ${line}\n`));
    for (const kind of [...OBJECT_FAULTS, ...PROCESS_FAULTS])
      this.faults[kind] = { injected: 0, missed: 0, failed: 0, variants: {}, recoverySeconds: [] };
  }

  /** Sets up, injects faults, waits for convergence and checks. Stops the operators it started. */
  async run(): Promise<ChaosReport> {
    const o = this.opts;
    const ns = o.namespace;
    const runStarted = new Date();
    const report: ChaosReport = {
      seed: this.seed,
      userlands: o.userlands,
      templates: templateSpecs().map(({ name, volume }) => ({ name, volume })),
      operatorReplicas: 2,
      setupSeconds: undefined,
      faultSeconds: 0,
      faults: this.faults,
      convergeBoundSeconds: o.convergeSeconds,
      convergeSeconds: undefined,
      final: { userlands: 0, mismatches: [], orphans: [], keptPvcs: 0 },
      stable: false,
      quietWrites: [],
      quietStatusChanges: [],
      audit: emptyAudit(),
      unexpectedExits: this.unexpectedExits,
      uncleanShutdowns: 0,
      histories: {},
      failures: [],
    };
    try {
      this.log(`seed ${this.seed}; setting up ${o.userlands} Userlands in ${ns}`);
      const setupStarted = Date.now();
      await this.setUp();
      const setup = await this.waitForConvergence(o.convergeSeconds);
      report.final = setup.inspection;
      if (setup.seconds === undefined) {
        report.failures.push(`the set-up did not converge within ${o.convergeSeconds} s`);
        return report;
      }
      report.setupSeconds = seconds(setupStarted);
      this.log(`set-up converged in ${report.setupSeconds.toFixed(1)} s; faults for ${o.faultSeconds} s`);

      const faultsStarted = Date.now();
      this.faultsStarted = faultsStarted;
      await Promise.all([this.objectFaults(faultsStarted), this.processFaults(faultsStarted)]);
      report.faultSeconds = seconds(faultsStarted);
      this.log(`faults over after ${report.faultSeconds.toFixed(1)} s; waiting for convergence`);

      const result = await this.waitForConvergence(o.convergeSeconds);
      report.convergeSeconds = result.seconds;
      report.final = result.inspection;
      if (result.seconds !== undefined) {
        this.log(`converged in ${result.seconds.toFixed(1)} s; quiet window`);
        const quietStarted = new Date();
        const statusesAtConvergence = await this.userlandStatuses();
        await sleep((o.quietSeconds ?? 5) * 1000);
        const after = await this.inspect();
        report.stable = after.mismatches.length === 0 && after.orphans.length === 0;
        if (!report.stable) report.final = after;
        await sleep(2000); // the audit log is written in batches of up to 1 s
        report.quietWrites = (await this.readAudit(quietStarted)).operatorWriteRequests;
        if (report.quietWrites.length > 0) {
          const statusesAfter = await this.userlandStatuses();
          for (const write of report.quietWrites) {
            const name = /\/userlands\/([^/]+)\/status$/.exec(write)?.[1];
            if (name === undefined) continue;
            report.quietStatusChanges.push(
              `${name}: at convergence ${statusesAtConvergence.get(name) ?? "(none)"}; after ${statusesAfter.get(name) ?? "(none)"}`,
            );
          }
        }
      }
      const audit = await this.readAudit(runStarted);
      report.audit = audit.summary;
    } finally {
      await this.stopOperators();
      report.uncleanShutdowns = this.uncleanShutdowns;
      const involved = [
        ...report.final.mismatches.map((m) => m.userland).filter((n) => !n.startsWith("(")),
        ...report.final.orphans.map((o) =>
          /Userland (\S+)'s|owner (\S+) is gone/.exec(o)?.slice(1).find(Boolean),
        ),
      ];
      for (const name of new Set(involved.filter((n) => n !== undefined).slice(0, 10)))
        report.histories[name] = this.history.get(name) ?? [];
      if (Object.keys(report.histories).length > 0)
        report.histories["(processes)"] = this.history.get("(processes)") ?? [];
      await this.rest.close();
      // The operator's kubeconfig holds a ServiceAccount token.
      if (this.kubeconfig) rmSync(dirname(this.kubeconfig), { recursive: true, force: true });
    }
    report.failures.push(...chaosFailures(report));
    return report;
  }

  /** Stops the operator replicas (also from a signal handler while run() is in progress). */
  async stopOperators(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.spawning]);
    await Promise.all(
      this.replicas.map(async (r) => {
        r.expectedExit = true;
        const timer = setTimeout(() => r.process.child.kill("SIGKILL"), 10_000);
        await r.process.stop("SIGTERM");
        clearTimeout(timer);
      }),
    );
  }

  // --- set-up -------------------------------------------------------------------------------

  private async setUp(): Promise<void> {
    const ns = this.opts.namespace;
    const { path, username } = await operatorKubeconfig(ns, this.opts.cluster);
    this.kubeconfig = path;
    this.username = username;
    const templates = templateSpecs();
    for (const t of templates) {
      const spec = t.spec(1);
      await this.rest.create(templatesPath(ns), {
        apiVersion: "userland.dev/v1alpha1",
        kind: "Template",
        metadata: { name: t.name },
        spec,
      });
      this.templateImage.set(t.name, 1);
      this.templateVolumes.set(
        t.name,
        (spec.volumes ?? []).map((v) => v.name),
      );
    }
    await Promise.all([this.spawnReplica(), this.spawnReplica()]);
    if (!(await this.leader(60_000))) throw new Error("no operator replica took the Lease within 60 s");

    const names = Array.from({ length: this.opts.userlands }, (_, i) => i);
    const limit = pLimit(20);
    await Promise.all(
      names.map((i) =>
        limit(async () => {
          const name = `user-${String(i).padStart(4, "0")}`;
          const templateName = (templates[i % templates.length] as { name: string }).name;
          const enabled = i % 10 !== 9;
          const created = await this.rest.create<Userland>(userlandsPath(ns), {
            apiVersion: "userland.dev/v1alpha1",
            kind: "Userland",
            metadata: { name },
            // Identities as the auth service reports them, not the Kubernetes names.
            spec: { user: `Student.${i}@uni.example`, templateName, enabled },
          });
          this.state.set(name, {
            user: created.spec.user,
            uid: created.metadata.uid ?? "",
            templateName,
            enabled,
          });
        }),
      ),
    );
  }

  // --- operator replicas --------------------------------------------------------------------

  private spawnReplica(): Promise<Replica> {
    const identity = `chaos-operator-${++this.replicaCount}`;
    const env: Record<string, string> = {
      LOG_LEVEL: "info",
      OPERATOR_FREEZE_CACHE: "false",
      // Short Lease terms, so a killed leader is replaced within seconds.
      OPERATOR_LEASE_DURATION: "6s",
      OPERATOR_RENEW_DEADLINE: "4s",
      OPERATOR_RETRY_PERIOD: "1s",
      // No periodic resync during a run: a child the watches missed must not be repaired by a timer.
      OPERATOR_RESYNC_PERIOD: "1h",
      ...this.opts.operatorEnv,
    };
    const spawned = (async () => {
      const process = await spawnOperator(this.kubeconfig, this.username, this.opts.namespace, {
        identity,
        env,
      });
      const replica: Replica = { identity, process, expectedExit: this.stopping };
      this.replicas.push(replica);
      process.child.once("exit", (code, signal) => {
        if (replica.expectedExit || this.stopping) return;
        const tail = process.logs().split("\n").slice(-20).join("\n");
        this.unexpectedExits.push(`${identity} exited (${signal ?? code}):\n${tail}`);
        this.log(`${identity} exited unexpectedly (${signal ?? code}); starting another replica`);
        this.replace(replica);
      });
      if (this.stopping) await process.stop("SIGTERM");
      return replica;
    })();
    this.spawning.add(spawned);
    void spawned.finally(() => this.spawning.delete(spawned)).catch(() => undefined);
    return spawned;
  }

  /** Takes a replica out of the set and starts another in its place. */
  private replace(replica: Replica): void {
    const i = this.replicas.indexOf(replica);
    if (i >= 0) this.replicas.splice(i, 1);
    if (!this.stopping)
      void this.spawnReplica().catch((e: unknown) => this.log(`spawn failed: ${String(e)}`));
  }

  /** The replica that leads with synced caches. */
  private async leader(timeoutMs: number): Promise<Replica | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !this.stopping) {
      for (const r of this.replicas) {
        if (r.expectedExit) continue;
        const ready = await r.process.readyz();
        if (ready?.leader && ready.synced) return r;
      }
      await sleep(250);
    }
    return undefined;
  }

  // --- faults -------------------------------------------------------------------------------

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rand() * items.length)] as T;
  }

  private pickObjectFault(): ObjectFault {
    const total = OBJECT_FAULTS.reduce((n, k) => n + WEIGHTS[k], 0);
    let x = this.rand() * total;
    for (const k of OBJECT_FAULTS) {
      x -= WEIGHTS[k];
      if (x < 0) return k;
    }
    return "editDeployment";
  }

  private async objectFaults(started: number): Promise<void> {
    const perSecond = this.opts.faultsPerSecond ?? 3;
    const inFlight = new Set<Promise<void>>();
    const end = started + this.opts.faultSeconds * 1000;
    let next = Date.now();
    while (Date.now() < end && !this.stopping) {
      // A fault per tick; at most 16 in flight (while kube-apiserver is down they wait).
      if (inFlight.size < 16) {
        const p = this.objectFault(this.pickObjectFault());
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      next += 1000 / perSecond;
      await sleep(Math.max(0, next - Date.now()));
    }
    await Promise.all(inFlight);
  }

  private async processFaults(started: number): Promise<void> {
    const kinds = this.opts.processFaults ?? PROCESS_FAULTS;
    if (kinds.length === 0) return;
    const every = (this.opts.processFaultEvery ?? 20) * 1000;
    const end = started + this.opts.faultSeconds * 1000;
    let order: ProcessFault[] = [];
    // At every/2, every*1.5, ...: 120 s with every = 20 s gives six faults, each kind twice.
    for (let at = started + every / 2; at < end && !this.stopping; at += every) {
      await sleep(Math.max(0, at - Date.now()));
      if (order.length === 0) order = [...kinds].sort(() => this.rand() - 0.5);
      const kind = order.shift() as ProcessFault;
      await this.processFault(kind);
    }
  }

  private record(kind: FaultKind, outcome: "injected" | "missed" | "failed", variant?: string): void {
    const c = this.faults[kind];
    c[outcome]++;
    if (outcome === "injected" && variant) c.variants[variant] = (c.variants[variant] ?? 0) + 1;
  }

  private note(userland: string, what: string): void {
    const list = this.history.get(userland) ?? [];
    list.push(`${seconds(this.faultsStarted).toFixed(1)} s ${what}`);
    this.history.set(userland, list);
  }

  private async objectFault(kind: ObjectFault): Promise<void> {
    const name = kind === "templateRollout" ? "(templates)" : this.pick([...this.state.keys()]);
    const started = seconds(this.faultsStarted).toFixed(1);
    try {
      const variant = await this.inject(kind, name);
      if (variant === undefined) this.record(kind, "missed");
      else {
        this.record(kind, "injected", variant);
        this.note(name, `${kind} ${variant} (sent at ${started} s)`);
      }
    } catch (error) {
      this.record(kind, statusCode(error) === 404 ? "missed" : "failed");
    }
  }

  /** Injects one object fault; returns its variant, or undefined when there was no target. */
  private async inject(kind: ObjectFault, name: string): Promise<string | undefined> {
    const ns = this.opts.namespace;
    const u = this.state.get(name) ?? { templateName: "", enabled: true, uid: "", user: "" };
    const names = childNames(u.templateName, name);
    const volumes = this.templateVolumes.get(u.templateName) ?? [];
    const merge = (path: string, patch: unknown) => this.rest.patch(path, patch, "merge");
    switch (kind) {
      case "deleteDeployment":
        await this.rest.delete(resources.Deployment.path(ns, names.deployment), {
          propagationPolicy: "Background",
        });
        return "delete";
      case "deleteService":
        await this.rest.delete(resources.Service.path(ns, names.service));
        return "delete";
      case "deletePvc": {
        if (volumes.length === 0) return undefined;
        await this.rest.delete(resources.PersistentVolumeClaim.path(ns, names.pvc(this.pick(volumes))));
        return u.templateName;
      }
      case "editDeployment": {
        const path = resources.Deployment.path(ns, names.deployment);
        const variant = this.pick(["replicas", "image", "labels", "unlabel", "annotations"] as const);
        if (variant === "replicas") await merge(path, { spec: { replicas: 3 } });
        else if (variant === "image")
          await this.rest.patch(
            path,
            [
              {
                op: "replace",
                path: "/spec/template/spec/containers/0/image",
                value: "registry.invalid/x:9",
              },
            ],
            "json",
          );
        else await this.editMetadata(path, variant);
        return variant;
      }
      case "editService": {
        const path = resources.Service.path(ns, names.service);
        const variant = this.pick(["ports", "selector", "labels", "unlabel", "annotations"] as const);
        if (variant === "ports")
          await merge(path, {
            spec: { ports: [{ name: "x", port: 8081, targetPort: 9999, protocol: "TCP" }] },
          });
        else if (variant === "selector")
          await merge(path, { spec: { selector: { [EDITED_LABEL]: "true" } } });
        else await this.editMetadata(path, variant);
        return variant;
      }
      case "editPvc": {
        if (volumes.length === 0) return undefined;
        const path = resources.PersistentVolumeClaim.path(ns, names.pvc(this.pick(volumes)));
        if (this.rand() < 0.3) {
          // A label the operator does not own: it must be left alone.
          await merge(path, { metadata: { labels: { [EDITED_LABEL]: "true" } } });
          return "foreign label";
        }
        // Ownership decides whether the claim goes with its Userland: flip it against the policy.
        const pvc = await this.rest.get<V1PersistentVolumeClaim>(path);
        const owned = (pvc.metadata?.ownerReferences ?? []).some((r) => r.uid === u.uid);
        const userland = { metadata: { name, uid: u.uid } } as Userland;
        await merge(path, {
          metadata: {
            ownerReferences: owned ? [] : [controllerRef(userland)],
            resourceVersion: pvc.metadata?.resourceVersion,
          },
        });
        return owned ? "owner removed" : "owner added";
      }
      case "flipEnabled": {
        const enabled = !u.enabled;
        await merge(userlandsPath(ns, name), { spec: { enabled } });
        u.enabled = enabled;
        return enabled ? "enable" : "disable";
      }
      case "switchTemplate": {
        const others = [...this.templateImage.keys()].filter((t) => t !== u.templateName);
        const templateName = this.pick(others);
        await merge(userlandsPath(ns, name), { spec: { templateName } });
        u.templateName = templateName;
        return `to ${templateName}`;
      }
      case "templateRollout": {
        const template = this.pick([...this.templateImage.keys()]);
        const image = (this.templateImage.get(template) ?? 1) + 1;
        await this.rest.patch(
          templatesPath(ns, template),
          [
            {
              op: "replace",
              path: "/spec/template/spec/containers/0/image",
              value: `registry.invalid/${template}:${image}`,
            },
          ],
          "json",
        );
        this.templateImage.set(template, image);
        return template;
      }
    }
  }

  /** Hand edits of a child's metadata: change the operator's labels, drop them, drop its annotations. */
  private async editMetadata(path: string, variant: "labels" | "unlabel" | "annotations"): Promise<void> {
    // Merge patches: null removes a key.
    const patch: { metadata: Record<string, Record<string, string | null>> } =
      variant === "labels"
        ? { metadata: { labels: { "userland.dev/template": "tampered", [EDITED_LABEL]: "true" } } }
        : variant === "unlabel"
          ? // The object leaves the operator's label-selected watch.
            { metadata: { labels: { [MANAGED_BY_LABEL]: null } } }
          : {
              metadata: {
                annotations: {
                  [ANNOTATIONS.desiredHash]: null,
                  [ANNOTATIONS.userlandName]: null,
                },
              },
            };
    await this.rest.patch(path, patch, "merge");
  }

  private async processFault(kind: ProcessFault): Promise<void> {
    const started = Date.now();
    try {
      if (kind === "restartApiServer") {
        await this.opts.controlPlane.restartApiServer();
        this.record(kind, "injected", "stop and start");
      } else {
        const leader = await this.leader(30_000);
        if (!leader) {
          this.record(kind, "missed");
          this.log(`${kind}: no leader within 30 s`);
          return;
        }
        leader.expectedExit = true;
        const signal = kind === "killLeader" ? "SIGKILL" : "SIGTERM";
        // The replacement starts at once: a second replica is running while the leader goes.
        this.replace(leader);
        const timer = setTimeout(() => leader.process.child.kill("SIGKILL"), 20_000);
        const code = await leader.process.stop(signal);
        clearTimeout(timer);
        if (signal === "SIGTERM" && code !== 0) this.uncleanShutdowns++;
        this.record(kind, "injected", signal);
      }
      const led = await this.leader(60_000);
      const recovery = seconds(started);
      if (led) this.faults[kind].recoverySeconds.push(recovery);
      this.note("(processes)", `${kind}, leader again after ${recovery.toFixed(1)} s`);
      this.log(
        `${kind}: ${led ? `${led.identity} leads again after ${recovery.toFixed(1)} s` : "no leader after 60 s"}`,
      );
    } catch (error) {
      this.record(kind, "failed");
      this.log(`${kind} failed: ${(error as Error).message}`);
    }
  }

  // --- checks -------------------------------------------------------------------------------

  private async waitForConvergence(
    boundSeconds: number,
  ): Promise<{ seconds: number | undefined; inspection: Inspection }> {
    const started = Date.now();
    let last: Inspection = { userlands: 0, mismatches: [], orphans: [], keptPvcs: 0 };
    let lastLog = 0;
    for (;;) {
      try {
        last = await this.inspect();
        if (last.mismatches.length === 0 && last.orphans.length === 0)
          return { seconds: seconds(started), inspection: last };
      } catch (error) {
        this.log(`inspection failed: ${(error as Error).message}`);
      }
      if (seconds(started) > boundSeconds) return { seconds: undefined, inspection: last };
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        this.log(
          `waiting: ${last.mismatches.length} mismatches, ${last.orphans.length} orphans` +
            (last.mismatches[0]
              ? ` (e.g. ${last.mismatches[0].userland}: ${last.mismatches[0].problem})`
              : ""),
        );
      }
      await sleep(this.opts.userlands > 200 ? 2000 : 1000);
    }
  }

  /** Compares the whole namespace with what the current Userlands and Templates ask for. */
  /** Every Userland's status as JSON, by name: what a write after convergence changed. */
  private async userlandStatuses(): Promise<Map<string, string>> {
    const list = await this.rest.list<Userland>(userlandsPath(this.opts.namespace), { timeoutMs: 120_000 });
    return new Map(list.items.map((u) => [u.metadata.name ?? "", JSON.stringify(u.status ?? {})]));
  }

  async inspect(): Promise<Inspection> {
    const ns = this.opts.namespace;
    const list = async <T>(path: string) => (await this.rest.list<T>(path, { timeoutMs: 120_000 })).items;
    const [userlands, templates, deployments, services, pvcs, pods] = await Promise.all([
      list<Userland>(userlandsPath(ns)),
      list<Template>(templatesPath(ns)),
      list<V1Deployment>(resources.Deployment.path(ns)),
      list<V1Service>(resources.Service.path(ns)),
      list<V1PersistentVolumeClaim>(resources.PersistentVolumeClaim.path(ns)),
      list<V1Pod>(paths.namespaced("", "v1", "pods", ns)),
    ]);
    const byName = <T extends { metadata?: V1ObjectMeta }>(items: T[]) =>
      new Map(items.map((i) => [i.metadata?.name ?? "", i]));
    const templateByName = byName(templates);
    const deploymentByName = byName(deployments);
    const serviceByName = byName(services);
    const pvcByName = byName(pvcs);
    const mismatches: Mismatch[] = [];
    const wanted = new Set<string>();
    const wantedPvcs = new Set<string>();

    for (const u of userlands) {
      const name = u.metadata.name ?? "";
      const problem = (p: string) => mismatches.push({ userland: name, problem: p });
      const template = templateByName.get(u.spec.templateName);
      if (!template) {
        problem(`Template ${u.spec.templateName} is missing`);
        continue;
      }
      const desired = desiredChildren(u, template);
      const hasVolumes = desired.pvcs.length > 0;
      for (const [kind, want, actual] of [
        ["Deployment", desired.deployment, deploymentByName.get(desired.names.deployment)],
        ["Service", desired.service, serviceByName.get(desired.names.service)],
      ] as const) {
        wanted.add(`${kind}/${want.metadata?.name}`);
        const p = compareChild(kind, want, actual, u);
        if (p) problem(p);
      }
      for (const want of desired.pvcs) {
        const pvcName = want.metadata?.name ?? "";
        wantedPvcs.add(pvcName);
        const p = comparePvc(want, pvcByName.get(pvcName), u);
        if (p) problem(p);
      }

      // Status: current, and the phase the spec asks for.
      const status = u.status;
      const enabled = u.spec.enabled !== false;
      if (status?.observedGeneration !== u.metadata.generation)
        problem(
          `status.observedGeneration ${status?.observedGeneration} ≠ generation ${u.metadata.generation}`,
        );
      // Claims never bind without a storage provisioner, so pods that mount one never start.
      const phases = !enabled
        ? ["Stopped"]
        : hasVolumes
          ? ["Starting", "Ready", "Failed:ProgressDeadlineExceeded"]
          : ["Ready"];
      const readyReason = status?.conditions?.find((c) => c.type === "Ready")?.reason;
      const phase = status?.phase === "Failed" ? `Failed:${readyReason}` : status?.phase;
      if (!phases.includes(phase ?? "")) problem(`phase ${phase ?? "none"}, expected ${phases.join(" or ")}`);
      // Such a pod is unschedulable (its claims never bind): converged means the operator has said
      // so too, in the scheduler's current words (the Stalled condition), or its saying so later
      // would be writes after convergence.
      const pod = currentPod(
        pods.filter((p) => p.metadata?.labels?.[LABELS.instance] === desired.names.deployment),
      );
      const scheduled = pod?.status?.conditions?.find((c) => c.type === "PodScheduled");
      const stalled = status?.conditions?.find((c) => c.type === "Stalled");
      if (
        enabled &&
        phase === "Starting" &&
        scheduled?.status === "False" &&
        scheduled.reason === "Unschedulable" &&
        (stalled?.status !== "True" ||
          stalled.reason !== "Unschedulable" ||
          !stalled.message.includes(schedulerReasons(scheduled.message)))
      )
        problem(
          `its pod is unschedulable (${scheduled.message ?? ""}), the status says Stalled ${stalled?.status ?? "none"} ${stalled?.reason ?? ""}: ${stalled?.message ?? ""}`,
        );
      // And the start it reports (status.progress) is the current pod's: a pod replaced after the
      // children matched (a Recreate rollout ends later) is still to be reported.
      const since = status?.progress?.since;
      const podCreated = pod?.metadata?.creationTimestamp;
      if (enabled && pod && Date.parse(String(podCreated)) !== Date.parse(since ?? ""))
        problem(
          `status.progress is about a pod created ${since ?? "never"}, the current pod ${String(podCreated)}`,
        );
      if (status?.service?.name !== desired.names.service)
        problem(`status.service ${status?.service?.name} ≠ ${desired.names.service}`);
    }

    // Templates count their Userlands (batched by the operator, so this settles last).
    for (const t of templates) {
      const name = t.metadata.name ?? "";
      const want = userlands.filter((u) => u.spec.templateName === name).length;
      if (t.status?.userlands !== want || t.status.observedGeneration !== t.metadata.generation)
        mismatches.push({
          userland: `(Template ${name})`,
          problem: `status.userlands ${t.status?.userlands}, wants ${want}; observedGeneration ${t.status?.observedGeneration} of ${t.metadata.generation}`,
        });
    }

    const uids = new Set(userlands.map((u) => u.metadata.uid));
    const orphans: string[] = [];
    for (const [kind, items] of [
      ["Deployment", deployments],
      ["Service", services],
    ] as const) {
      for (const o of items) {
        const objectName = o.metadata?.name ?? "";
        if (wanted.has(`${kind}/${objectName}`) || o.metadata?.deletionTimestamp) continue;
        const owner = o.metadata?.ownerReferences?.find((r) => r.controller);
        const why = !owner
          ? "no controller"
          : uids.has(owner.uid)
            ? `of Userland ${owner.name}'s previous Template`
            : `owner ${owner.name} is gone`;
        const managed = o.metadata?.labels?.[MANAGED_BY_LABEL] ? "" : `, no ${MANAGED_BY_LABEL} label`;
        orphans.push(`${kind} ${objectName} (${why}${managed})`);
      }
    }
    const keptPvcs = pvcs.filter((p) => !wantedPvcs.has(p.metadata?.name ?? "")).length;
    return { userlands: userlands.length, mismatches, orphans, keptPvcs };
  }

  private async readAudit(since: Date): Promise<{ summary: AuditSummary; operatorWriteRequests: string[] }> {
    const summary = emptyAudit();
    const operatorWriteRequests: string[] = [];
    const ns = this.opts.namespace;
    for await (const line of auditLines(this.opts.controlPlane.auditLogPath)) {
      if (!line.includes(ns)) continue;
      const e = JSON.parse(line) as AuditEvent & { userAgent?: string };
      if (Date.parse(e.stageTimestamp) < since.getTime() || e.objectRef?.namespace !== ns) continue;
      const resource = `${e.objectRef.resource ?? ""}${e.objectRef.subresource ? `/${e.objectRef.subresource}` : ""}`;
      const byOperator = e.user.username === this.username;
      if (e.verb === "delete" && e.objectRef.resource === "persistentvolumeclaims") {
        const what = `${e.objectRef.name} by ${e.user.username} at ${e.stageTimestamp}`;
        if (byOperator) summary.pvcDeletesByOperator.push(what);
        else if (e.userAgent?.startsWith(USER_AGENT)) summary.pvcDeletesByChaos++;
        else summary.pvcDeletesByOthers.push(what);
      }
      if (!byOperator || !WRITE_VERBS.has(e.verb)) continue;
      if (e.objectRef.resource === "leases") {
        summary.leaseWrites++;
        continue;
      }
      summary.operatorWrites++;
      summary.operatorWritesByResource[resource] = (summary.operatorWritesByResource[resource] ?? 0) + 1;
      operatorWriteRequests.push(`${e.verb} ${e.requestURI}`);
    }
    return { summary, operatorWriteRequests };
  }
}

/**
 * Every line of the audit log, streamed: a 1,000-Userland run writes over 100 MB (the control plane
 * sets --audit-log-maxsize so the file is never rotated away).
 */
function auditLines(path: string): AsyncIterable<string> {
  return createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity });
}

/** Why a Deployment or Service is not what the operator should have made it, or undefined. */
function compareChild(
  kind: string,
  desired: V1Deployment | V1Service,
  actual: V1Deployment | V1Service | undefined,
  userland: Userland,
): string | undefined {
  const name = `${kind} ${desired.metadata?.name}`;
  if (!actual) return `${name} is missing`;
  if (actual.metadata?.deletionTimestamp) return `${name} is being deleted`;
  if (!isControlledBy(actual, userland)) return `${name} is not controlled by the Userland`;
  const problems: string[] = [];
  for (const field of ["labels", "annotations"] as const) {
    const want = desired.metadata?.[field] ?? {};
    const have = actual.metadata?.[field] ?? {};
    const differ = Object.keys(want).filter((k) => want[k] !== have[k]);
    if (differ.length > 0) problems.push(`${field} ${differ.join(", ")} differ`);
  }
  if (problems.length === 0 && !isSubset(desired.metadata, actual.metadata))
    problems.push("metadata differs");
  if (!isSubset(desired.spec, actual.spec)) {
    const d = desired as V1Deployment;
    const a = actual as V1Deployment;
    const image = (x: V1Deployment) => x.spec?.template.spec?.containers[0]?.image;
    if (kind === "Deployment" && d.spec?.replicas !== a.spec?.replicas)
      problems.push(`${a.spec?.replicas} replicas, wants ${d.spec?.replicas}`);
    else if (kind === "Deployment" && image(d) !== image(a))
      problems.push(`runs ${image(a)}, wants ${image(d)}`);
    else problems.push("spec differs");
  }
  if (kind === "Deployment" && problems.length === 0) {
    // A rollout still under way (a Recreate waits for the old pod to go) starts a new pod after
    // this check, and the operator reports that start later: not converged yet.
    const a = actual as V1Deployment;
    const want = a.spec?.replicas ?? 1;
    const s = a.status ?? {};
    if (
      (s.observedGeneration ?? 0) < (a.metadata?.generation ?? 0) ||
      (s.replicas ?? 0) !== want ||
      (s.updatedReplicas ?? 0) !== want
    )
      problems.push(
        `rollout under way (${s.updatedReplicas ?? 0} updated of ${s.replicas ?? 0}, wants ${want})`,
      );
  }
  return problems.length > 0 ? `${name}: ${problems.join("; ")}` : undefined;
}

function comparePvc(
  desired: V1PersistentVolumeClaim,
  actual: V1PersistentVolumeClaim | undefined,
  userland: Userland,
): string | undefined {
  const name = `PersistentVolumeClaim ${desired.metadata?.name}`;
  if (!actual) return `${name} is missing`;
  if (actual.metadata?.deletionTimestamp) return `${name} is being deleted`;
  if (actual.metadata?.labels?.[LABELS.userHash] !== desired.metadata?.labels?.[LABELS.userHash])
    return `${name} belongs to another user`;
  const wantOwned = (desired.metadata?.ownerReferences ?? []).length > 0;
  if (isControlledBy(actual, userland) !== wantOwned)
    return `${name} is ${wantOwned ? "not " : ""}owned by the Userland, against its reclaim policy`;
  return undefined;
}

function isControlledBy(object: Child, userland: Userland): boolean {
  return (object.metadata?.ownerReferences ?? []).some(
    (r) => r.controller && r.uid === userland.metadata.uid,
  );
}

/** The checks a run must pass. */
export function chaosFailures(r: ChaosReport): string[] {
  const failures: string[] = [];
  if (r.convergeSeconds === undefined)
    failures.push(`did not converge within ${r.convergeBoundSeconds} s after the faults`);
  if (r.final.mismatches.length > 0)
    failures.push(`${r.final.mismatches.length} mismatches with the desired state`);
  if (r.final.orphans.length > 0) failures.push(`${r.final.orphans.length} orphaned Deployments or Services`);
  if (r.convergeSeconds !== undefined && !r.stable) failures.push("the converged state did not hold");
  if (r.audit.pvcDeletesByOperator.length > 0)
    failures.push(`the operator deleted ${r.audit.pvcDeletesByOperator.length} PersistentVolumeClaims`);
  if (r.audit.pvcDeletesByOthers.length > 0)
    failures.push(`${r.audit.pvcDeletesByOthers.length} PersistentVolumeClaims deleted by someone else`);
  if (r.unexpectedExits.length > 0) failures.push(`${r.unexpectedExits.length} unexpected operator exits`);
  if (r.uncleanShutdowns > 0) failures.push(`${r.uncleanShutdowns} SIGTERM shutdowns exited non-zero`);
  return failures;
}

/** A readable report: faults by kind, then the results. */
export function formatReport(r: ChaosReport): string {
  const out: string[] = [];
  const fmt = (x: number | undefined) => (x === undefined ? "—" : `${x.toFixed(1)} s`);
  out.push(
    `Chaos: ${r.userlands} Userlands over ${r.templates.length} Templates (${r.templates.map((t) => `${t.name}: ${t.volume}`).join(", ")}), ` +
      `${r.operatorReplicas} operator replicas, seed ${r.seed}`,
    "",
    "| fault | injected | missed | failed | variants / leader synced again after |",
    "| --- | ---: | ---: | ---: | --- |",
  );
  let total = 0;
  for (const [kind, c] of Object.entries(r.faults)) {
    total += c.injected;
    const variants = Object.entries(c.variants)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([v, n]) => `${v} ${n}`)
      .join(", ");
    const recovery = c.recoverySeconds.map((x) => `${x.toFixed(1)} s`).join(", ");
    out.push(
      `| ${kind} | ${c.injected} | ${c.missed} | ${c.failed} | ${variants}${recovery ? ` / ${recovery}` : ""} |`,
    );
  }
  out.push(`| **total** | **${total}** | | | |`, "");
  const a = r.audit;
  const resources = Object.entries(a.operatorWritesByResource)
    .sort(([, x], [, y]) => y - x)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  out.push(
    "| result | value |",
    "| --- | --- |",
    `| set-up (create + first convergence) | ${fmt(r.setupSeconds)} |`,
    `| faults injected for | ${fmt(r.faultSeconds)} |`,
    `| time to converge after the faults | ${fmt(r.convergeSeconds)} (bound ${r.convergeBoundSeconds} s) |`,
    `| Userlands checked | ${r.final.userlands} |`,
    `| mismatches (Userlands or Templates whose children or status differ) | ${r.final.mismatches.length} |`,
    `| orphaned Deployments / Services | ${r.final.orphans.length} |`,
    `| claims of previous Templates, kept | ${r.final.keptPvcs} |`,
    `| PVC deletions: by the chaos / by the operator / by anyone else | ${a.pvcDeletesByChaos} / ${a.pvcDeletesByOperator.length} / ${a.pvcDeletesByOthers.length} |`,
    `| operator write requests during the run (without ${a.leaseWrites} Lease writes) | ${a.operatorWrites} (${resources}) |`,
    `| operator write requests in the quiet window after convergence | ${r.quietWrites.length} |`,
    `| converged state held through the quiet window | ${r.stable ? "yes" : "no"} |`,
    `| unexpected operator exits / unclean SIGTERM exits | ${r.unexpectedExits.length} / ${r.uncleanShutdowns} |`,
  );
  const examples = [
    ...r.final.mismatches.slice(0, 10).map((m) => `  mismatch: ${m.userland}: ${m.problem}`),
    ...r.final.orphans.slice(0, 10).map((o) => `  orphan: ${o}`),
    ...a.pvcDeletesByOperator.slice(0, 10).map((d) => `  PVC deleted by the operator: ${d}`),
    ...a.pvcDeletesByOthers.slice(0, 10).map((d) => `  PVC deleted by someone else: ${d}`),
    ...r.quietWrites.slice(0, 10).map((w) => `  write after convergence: ${w}`),
    ...r.quietStatusChanges.slice(0, 5).map((c) => `  status written after convergence: ${c}`),
    ...r.unexpectedExits.slice(0, 3).map((e) => `  unexpected exit: ${e}`),
  ];
  if (examples.length > 0) out.push("", "Examples:", ...examples);
  for (const [name, events] of Object.entries(r.histories))
    out.push(`  history of ${name}: ${events.length > 0 ? events.join("; ") : "no faults"}`);
  out.push("", r.failures.length === 0 ? "PASS" : `FAIL: ${r.failures.join("; ")}`);
  return out.join("\n");
}

/** An audit summary before any request was counted. */
function emptyAudit(): AuditSummary {
  return {
    operatorWrites: 0,
    operatorWritesByResource: {},
    leaseWrites: 0,
    pvcDeletesByOperator: [],
    pvcDeletesByChaos: 0,
    pvcDeletesByOthers: [],
  };
}
