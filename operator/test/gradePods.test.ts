/** The sealed grading pod (operator/grading/gradePods.ts), built and read as pure functions. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { V1ContainerState, V1Pod } from "@kubernetes/client-node";
import type { Template } from "../../api/v1alpha1/index.ts";
import { copyNetworkPolicy } from "../coursework/copyPods.ts";
import {
  DEFAULT_GRADING_RESOURCES,
  gradeKey,
  gradeOutcome,
  gradePod,
  PLATFORM_STEPS_SECONDS,
  runAutograderScript,
} from "../grading/gradePods.ts";

const template: Template = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name: "lab", namespace: "class" },
  spec: {
    template: {
      spec: {
        securityContext: { runAsUser: 0 },
        containers: [{ name: "ide", image: "registry.invalid/jupyter:1" }],
      },
    },
  },
};

const pod = gradePod({
  name: "userland-grade-x",
  namespace: "class",
  owner: { apiVersion: "userland.dev/v1alpha1", kind: "Submission", name: "s", uid: "u", controller: true },
  template,
  platformImage: "registry.invalid/userland:1",
  autograderImage: "registry.invalid/jupyter:1",
  timeoutSeconds: 300,
  resources: DEFAULT_GRADING_RESOURCES,
  collectionClaim: "lab-collection",
  handIn: "handins/a1/ann",
  autograder: "autograders/a1/1",
  out: "a1/ann/k1",
  receiptSha256: "a".repeat(64),
  metadata: { id: "u" },
});

test("the grading pod can reach nothing and hold no credentials: no token, no Service links, no resolver, the copy pods' deny-all policy", () => {
  const spec = pod.spec!;
  assert.equal(spec.automountServiceAccountToken, false);
  assert.equal(spec.enableServiceLinks, false);
  assert.equal(spec.dnsPolicy, "None");
  assert.deepEqual(spec.dnsConfig, { nameservers: ["127.0.0.1"] });
  assert.equal(spec.hostNetwork, undefined);
  // The deny-all NetworkPolicy selects pods with the copy label.
  const selector = copyNetworkPolicy("class").spec?.podSelector?.matchExpressions?.[0];
  assert.equal(selector?.operator, "Exists");
  assert.ok(selector && pod.metadata?.labels?.[selector.key] !== undefined);
  assert.ok(!JSON.stringify(spec).includes("secret"), "no Secret anywhere");
  assert.equal(spec.restartPolicy, "Never");
  assert.equal(spec.activeDeadlineSeconds, 300 + PLATFORM_STEPS_SECONDS);
});

test("every step runs as a user, without capabilities, under the runtime's seccomp profile, on a read-only root; the autograder's step is limited", () => {
  const spec = pod.spec!;
  // root in the Template's pod is replaced by the usual first user.
  assert.equal(spec.securityContext?.runAsUser, 1000);
  assert.equal(spec.securityContext?.runAsNonRoot, true);
  const steps = [...(spec.initContainers ?? []), ...spec.containers];
  assert.deepEqual(
    steps.map((c) => c.name),
    ["prepare", "autograder", "collect"],
  );
  for (const c of steps) {
    assert.equal(c.securityContext?.allowPrivilegeEscalation, false, c.name);
    assert.equal(c.securityContext?.readOnlyRootFilesystem, true, c.name);
    assert.deepEqual(c.securityContext?.capabilities?.drop, ["ALL"], c.name);
    assert.equal(c.securityContext?.seccompProfile?.type, "RuntimeDefault", c.name);
    assert.ok(c.resources?.limits?.memory && c.resources.limits.cpu, c.name);
  }
  const autograder = spec.initContainers![1]!;
  assert.equal(autograder.image, "registry.invalid/jupyter:1");
  assert.deepEqual(autograder.resources?.limits, { cpu: "1", memory: "2Gi" });
  assert.deepEqual(
    spec.volumes?.find((v) => v.name === "work")?.emptyDir,
    { medium: "Memory", sizeLimit: "1Gi" },
    "a memory-backed scratch volume: its size is a hard cap",
  );
  assert.equal(autograder.workingDir, "/autograder");
});

test("only the autograder's step sees the hand-in, read-only; only collect writes the collection, and only its grades", () => {
  const mounts = (name: string) =>
    [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
      .find((c) => c.name === name)
      ?.volumeMounts?.filter((m) => m.name === "collection")
      .map((m) => [m.mountPath, m.subPath, m.readOnly ?? false]);
  assert.deepEqual(mounts("prepare"), [
    ["/submission", "handins/a1/ann", true],
    ["/autograder-snapshot", "autograders/a1/1", true],
  ]);
  assert.deepEqual(mounts("autograder"), [["/autograder/submission", "handins/a1/ann", true]]);
  assert.deepEqual(mounts("collect"), [["/grades", "grades", false]]);
  assert.deepEqual(pod.spec?.containers[0]?.command?.slice(-2), ["--out", "/grades/a1/ann/k1"]);
});

test("a run's key changes with each of its inputs", () => {
  const base = {
    receiptSha256: "a".repeat(64),
    autograderRevision: "b".repeat(64),
    image: "i",
    timeoutSeconds: 300,
  };
  const keys = new Set([
    gradeKey(base),
    gradeKey({ ...base, receiptSha256: "c".repeat(64) }),
    gradeKey({ ...base, autograderRevision: "c".repeat(64) }),
    gradeKey({ ...base, image: "j" }),
    gradeKey({ ...base, timeoutSeconds: 60 }),
  ]);
  assert.equal(keys.size, 5);
  assert.equal(gradeKey(base), gradeKey({ ...base }));
});

const finished = (
  phase: string,
  inits: Record<string, V1ContainerState>,
  collect?: V1ContainerState,
  reason?: string,
): V1Pod => ({
  status: {
    phase,
    ...(reason ? { reason } : {}),
    initContainerStatuses: Object.entries(inits).map(([name, state]) => ({
      name,
      state,
      image: "",
      imageID: "",
      ready: false,
      restartCount: 0,
    })),
    containerStatuses: collect
      ? [{ name: "collect", state: collect, image: "", imageID: "", ready: false, restartCount: 0 }]
      : [],
  },
});
const done = (exitCode: number, message?: object, reason?: string): V1ContainerState => ({
  terminated: {
    exitCode,
    ...(message ? { message: JSON.stringify(message) } : {}),
    ...(reason ? { reason } : {}),
    finishedAt: new Date("2026-12-07T10:00:00Z"),
  },
});

test("every way a run ends is a result with a reason and a message", () => {
  const now = new Date("2026-12-07T11:00:00Z");
  const read = (p: V1Pod) => {
    const o = gradeOutcome(p, 300, now);
    return o && (o.ok ? ["ok", o.summary.score] : [o.reason, o.message]);
  };
  assert.equal(gradeOutcome({ status: { phase: "Running" } }, 300, now), undefined);
  assert.deepEqual(
    read(finished("Succeeded", { prepare: done(0), autograder: done(0) }, done(0, { score: 3 }))),
    ["ok", 3],
  );
  assert.deepEqual(
    read(
      finished("Failed", { prepare: done(0), autograder: { running: {} } }, undefined, "DeadlineExceeded"),
    ),
    ["TimedOut", "timed out after 300 s: the autograder was stopped"],
  );
  assert.deepEqual(
    read(
      finished(
        "Failed",
        { prepare: done(0), autograder: { waiting: { reason: "ErrImagePull" } } },
        undefined,
        "DeadlineExceeded",
      ),
    ),
    ["ImageUnavailable", "the autograder's image could not be started (ErrImagePull)"],
  );
  assert.deepEqual(
    read(
      finished("Failed", {
        prepare: done(3, { error: { kind: "HandInChanged", message: "not its receipt" } }),
      }),
    ),
    ["HandInChanged", "not its receipt"],
  );
  assert.deepEqual(
    read(finished("Failed", { prepare: done(0), autograder: done(137, undefined, "OOMKilled") })),
    ["OutOfMemory", "the autograder used more memory than its limit and was stopped"],
  );
  assert.deepEqual(
    read(
      finished(
        "Failed",
        { prepare: done(0), autograder: done(0) },
        done(3, { error: { kind: "ResultsInvalid", message: "results.json invalid: it is not JSON" } }),
      ),
    ),
    ["ResultsInvalid", "results.json invalid: it is not JSON"],
  );
});

/** Runs the autograder step's script with `shell` in a scratch /autograder; resolves with its time. */
async function runScript(shell: string, runAutograder: string, timeoutSeconds: number) {
  const root = await mkdtemp(join(tmpdir(), "autograder-"));
  await mkdir(join(root, "results"));
  await writeFile(join(root, "run_autograder"), runAutograder, { mode: 0o755 });
  const began = Date.now();
  // As in the container: the script is PID 1 of a PID namespace of its own.
  const result = spawnSync(
    "unshare",
    ["--pid", "--fork", "--kill-child", shell, "-c", runAutograderScript(timeoutSeconds, root)],
    { encoding: "utf8" },
  );
  const read = (name: string) => readFile(join(root, name), "utf8").catch(() => undefined);
  const out = {
    code: result.status,
    seconds: (Date.now() - began) / 1000,
    stdout: await read("results/stdout"),
    exit: await read(".exit_code"),
    timedOut: await read(".timed_out"),
    root,
  };
  return out;
}

test("the autograder's step in a plain /bin/sh: output and exit code kept; at the timeout every process but the script is killed, detached ones too, and .timed_out says so", async (t) => {
  const shells = ["/bin/sh", "/bin/dash", "/bin/bash"].filter((s) => existsSync(s));
  assert.ok(shells.length > 0);
  for (const shell of shells) {
    const ok = await runScript(shell, "#!/bin/sh\necho graded\nexit 3\n", 5);
    t.after(() => rm(ok.root, { recursive: true, force: true }));
    assert.deepEqual(
      [ok.code, ok.stdout, ok.exit?.trim(), ok.timedOut],
      [0, "graded\n", "3", undefined],
      shell,
    );

    // A loop detached from run_autograder (a session of its own), and run_autograder looping itself.
    const marker = `loop-${Math.random().toString(16).slice(2)}`;
    const loop = await runScript(
      shell,
      `#!/bin/sh\necho started\nsetsid sh -c 'while :; do :; done' ${marker} &\nwhile :; do sleep 0.1; done\n`,
      1,
    );
    t.after(() => rm(loop.root, { recursive: true, force: true }));
    assert.equal(loop.code, 0, shell);
    assert.equal(loop.timedOut?.trim(), "1", shell);
    assert.equal(loop.stdout, "started\n", "the output so far is kept");
    assert.ok(loop.seconds < 4, `${shell}: stopped after ${loop.seconds} s`);
    const left = spawnSync("pgrep", ["-f", marker], { encoding: "utf8" });
    assert.equal(left.stdout.trim(), "", `${shell}: the detached loop was killed`);
  }
});
