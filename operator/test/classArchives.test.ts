/**
 * The ClassArchive controller against the real API server (docs/decisions/0011-coursework.md, "End of
 * term"): the class recorded and stopped, the archive and read-back pods it makes (least rights: no
 * token, students' claims read-only, the read-back sees only the archives folder, read-only), an
 * operator restart mid-archive, the dry run from the read-back's result, and an end that deletes
 * exactly the confirmed list. kwok runs no containers: the test finishes each copy pod as the kubelet
 * would (its terminated status and termination message, through pods/status).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { childNames, collectionUserFolder } from "../../api/naming.ts";
import {
  archivesPath,
  classArchivesPath,
  userlandsPath,
  type ClassArchive,
  type TemplateSpec,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { isInvalid, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { paths } from "../../api/kubePaths.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { guideCommands } from "../../test/support/guide.ts";
import { startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  simpleTemplateSpec,
} from "../../test/support/resources.ts";
import { dryRunHash } from "../coursework/syncClassArchive.ts";

const IMAGE = "registry.invalid/userland:test";
const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };
const MANIFEST = "d".repeat(64);
const ZIP = "e".repeat(64);

const podsPath = (ns: string, name?: string, sub?: string) =>
  paths.namespaced("", "v1", "pods", ns, name, sub);
const pvcPath = (ns: string, name: string) => paths.namespaced("", "v1", "persistentvolumeclaims", ns, name);

const spec = (): TemplateSpec =>
  simpleTemplateSpec("registry.invalid/ide:1", {
    volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
    coursework: {
      home: { volume: "home", mountPath: "/home/student" },
      collection: { pvcSpec: claimSpec, mountPath: "/srv/collection" },
    },
  });

async function copyPods(rest: KubeRest, ns: string, job: string): Promise<V1Pod[]> {
  const list = await rest.list<V1Pod>(podsPath(ns), { query: { labelSelector: `userland.dev/copy=${job}` } });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

async function finish(rest: KubeRest, pod: V1Pod, exitCode: number, result: object): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await rest.patch(podsPath(pod.metadata?.namespace ?? "", pod.metadata?.name, "status"), {
    status: {
      phase: exitCode === 0 ? "Succeeded" : "Failed",
      containerStatuses: [
        {
          name: "copy",
          image: IMAGE,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: { exitCode, message: JSON.stringify(result), startedAt: now, finishedAt: now },
          },
        },
      ],
    },
  });
}

const getCA = (rest: KubeRest, ns: string) => rest.get<ClassArchive>(classArchivesPath(ns, "term1"));
const exists = (rest: KubeRest, path: string) =>
  rest.get(path).then(
    () => true,
    (e: unknown) => (isNotFound(e) ? false : Promise.reject(e as Error)),
  );

test("a ClassArchive stops the class, archives and reads it back in locked-down pods (across an operator restart), lists a dry run, ends nothing on a wrong or stale confirm, and deletes exactly the verified, unchanged students on the right one", async (t) => {
  const ns = await testNamespace(t, "carch");
  const rest = await adminRest();
  const env = {
    OPERATOR_COPY_IMAGE: IMAGE,
    OPERATOR_ARCHIVE_CLIENTS: "userland-system:app.kubernetes.io/component=user-manager",
  };
  const operator = await startOperator(t, ns, { env });
  await createTemplate(ns, "lab", spec());
  for (const [name, enabled] of [
    ["alice", true],
    ["bob", false],
    ["carol", true],
  ] as const)
    await createUserland(ns, name, name, "lab", enabled);
  const claim = (userland: string) => childNames("lab", userland).pvc("home");
  for (const u of ["alice", "bob", "carol"])
    await eventually(`${u}'s claim`, () => exists(rest, pvcPath(ns, claim(u))));

  // The API server refuses a class archive without a class (issue 41 item 9: it took every
  // environment of the Template), and a change of class or Template.
  const classArchive = (spec: Record<string, unknown>) => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "ClassArchive",
    metadata: { name: "term1" },
    spec,
  });
  await assert.rejects(rest.create(classArchivesPath(ns), classArchive({ templateName: "lab" })), (e) =>
    isInvalid(e),
  );
  await rest.create(classArchivesPath(ns), classArchive({ templateName: "lab", class: "*" }));
  await assert.rejects(rest.patch(classArchivesPath(ns, "term1"), { spec: { templateName: "other" } }), (e) =>
    isInvalid(e),
  );
  await assert.rejects(rest.patch(classArchivesPath(ns, "term1"), { spec: { class: "b" } }), (e) =>
    isInvalid(e),
  );

  // Planned (issue 41 item 9, issue 44 item 5): whose environments would stop and whose volumes be
  // read, said before anyone is stopped; then spec.archive, which cannot be undone.
  const plan = await eventually("the plan", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.phase === "Planned" && ca;
  });
  assert.deepEqual(
    plan.status?.students?.map((s) => [s.user, s.claims, s.enabledBefore]),
    [
      ["alice", [claim("alice")], true],
      ["bob", [claim("bob")], false],
      ["carol", [claim("carol")], true],
    ],
  );
  assert.match(
    plan.status?.message ?? "",
    /^A plan: 3 students' environments \(2 running now\) would be stopped/,
  );
  for (const u of ["alice", "carol"]) {
    const userland = await rest.get<Userland>(userlandsPath(ns, u));
    assert.equal(userland.spec.enabled, true, `${u} still runs`);
    assert.equal(userland.metadata.annotations?.["userland.dev/stopped-reason"], undefined);
  }
  assert.deepEqual(await copyPods(rest, ns, "classarchive"), [], "nothing read");
  await rest.patch(classArchivesPath(ns, "term1"), { spec: { archive: true } });
  await assert.rejects(rest.patch(classArchivesPath(ns, "term1"), { spec: { archive: false } }), (e) =>
    isInvalid(e),
  );

  // Stopping: the class recorded, every environment stopped.
  const stopping = await eventually("the class recorded", async () => {
    const ca = await getCA(rest, ns);
    return (ca.status?.students?.length ?? 0) === 3 && ca;
  });
  assert.deepEqual(
    stopping.status?.students?.map((s) => [s.user, s.claims, s.folder]),
    ["alice", "bob", "carol"].map((u) => [u, [claim(u)], collectionUserFolder(u)]),
  );
  for (const u of ["alice", "carol"])
    await eventually(`${u} stopped`, async () => {
      const userland = await rest.get<Userland>(userlandsPath(ns, u));
      return userland.spec.enabled === false;
    });
  // Each student sees why (issue 41 item 9): the reason their home page words, and an Event.
  for (const u of ["alice", "bob", "carol"]) {
    const userland = await eventually(`${u} marked`, async () => {
      const got = await rest.get<Userland>(userlandsPath(ns, u));
      return got.metadata.annotations?.["userland.dev/stopped-reason"] === "ClassArchive" && got;
    });
    await eventually(`${u}'s Status says the class is archived`, async () =>
      /end of term: the class is being archived/.test(
        (await rest.get<Userland>(userlandsPath(ns, u))).status?.message ?? "",
      ),
    );
    const events = await eventually(`${u}'s Event`, async () => {
      const list = await rest.list<{ reason?: string; message?: string; involvedObject: { uid?: string } }>(
        paths.namespaced("", "v1", "events", ns),
      );
      const mine = list.items.filter(
        (e) => e.reason === "ClassArchive" && e.involvedObject.uid === userland.metadata.uid,
      );
      return mine.length > 0 && mine;
    });
    assert.match(events[0]?.message ?? "", new RegExp(`class archive term1 reads ${u}'s volumes`));
  }

  // Archiving: one pod, no token, students' claims read-only, the collection read-only but for archives/.
  const [archivePod] = await eventually("the archive pod", async () => {
    const pods = await copyPods(rest, ns, "classarchive");
    return pods.length > 0 && pods;
  });
  assert.ok(archivePod);
  const podSpec = archivePod.spec!;
  const container = podSpec.containers[0]!;
  assert.equal(podSpec.automountServiceAccountToken, false);
  const deny = await rest.get<{ spec: { policyTypes: string[] } }>(
    paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns, "userland-copy-pods-deny-all"),
  );
  assert.deepEqual(deny.spec.policyTypes, ["Ingress", "Egress"]);
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
  assert.equal(container.resources?.limits?.memory, "4Gi");
  const ca1 = await getCA(rest, ns);
  const command = container.command ?? [];
  assert.deepEqual(command.slice(0, 3), ["node", "coursework/copy.ts", "archive-class"]);
  assert.match(command[3] ?? "", /^\/archives\/term1-[a-z2-7]{8}\.zip$/);
  assert.equal(ca1.status?.archive, undefined, "the archive is recorded only once it is written");
  for (const [i, u] of ["alice", "bob", "carol"].entries())
    assert.ok(command.includes(`students/${collectionUserFolder(u)}/home=/students/${i}/${claim(u)}`), u);
  const volumes = new Map(
    podSpec.volumes?.map((v) => [v.persistentVolumeClaim?.claimName, v.persistentVolumeClaim?.readOnly]),
  );
  assert.deepEqual(Object.fromEntries(volumes), {
    "lab-collection": undefined,
    [claim("alice")]: true,
    [claim("bob")]: true,
    [claim("carol")]: true,
  });
  assert.deepEqual(
    container.volumeMounts?.map((m) => [m.mountPath, m.subPath, m.readOnly]),
    [
      ["/collection", undefined, true],
      ["/archives", "archives", undefined],
      [`/students/0/${claim("alice")}`, undefined, true],
      [`/students/1/${claim("bob")}`, undefined, true],
      [`/students/2/${claim("carol")}`, undefined, true],
    ],
  );

  // The operator stops while the archive is written; a new one finds the same pod and reads it.
  assert.equal(await operator.stop("SIGTERM"), 0);
  await finish(rest, archivePod, 0, {
    folders: 3,
    incomplete: [
      { name: `students/${collectionUserFolder("bob")}/home`, problem: "1 entry could not be archived" },
    ],
    files: 7,
    bytes: 700,
    manifestSha256: MANIFEST,
  });
  await startOperator(t, ns, { env });

  // Verifying: only the archives folder, read-only.
  const [verifyPod] = await eventually("the read-back pod", async () => {
    const pods = await copyPods(rest, ns, "verify");
    return pods.length > 0 && pods;
  });
  assert.ok(verifyPod);
  assert.equal((await copyPods(rest, ns, "classarchive")).length, 0, "the archive ran once");
  assert.deepEqual(verifyPod.spec?.containers[0]?.command, [
    "node",
    "coursework/copy.ts",
    "verify-archive",
    command[3],
    "--manifest-sha256",
    MANIFEST,
  ]);
  assert.deepEqual(
    verifyPod.spec?.volumes?.map((v) => [
      v.persistentVolumeClaim?.claimName,
      v.persistentVolumeClaim?.readOnly,
    ]),
    [["lab-collection", true]],
  );
  assert.deepEqual(
    verifyPod.spec?.containers[0]?.volumeMounts?.map((m) => [m.mountPath, m.subPath, m.readOnly]),
    [["/archives", "archives", true]],
  );
  await finish(rest, verifyPod, 0, {
    folders: 3,
    verified: 2,
    unverified: [
      { name: `students/${collectionUserFolder("bob")}/home`, reason: "1 entry could not be archived" },
    ],
    entries: 9,
    bytes: 1234,
    sha256: ZIP,
  });

  // DryRun: alice and carol would go, bob is kept and why.
  const dry = await eventually("the dry run", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.phase === "DryRun" && ca;
  });
  assert.deepEqual(
    dry.status?.toDelete?.map((d) => [d.user, d.claims]),
    [
      ["alice", [claim("alice")]],
      ["carol", [claim("carol")]],
    ],
  );
  assert.deepEqual(
    dry.status?.kept?.map((k) => [k.user, k.reason]),
    [["bob", "not verified: home: 1 entry could not be archived"]],
  );
  assert.equal(dry.status?.dryRunHash, dryRunHash(dry.status?.toDelete ?? []));
  assert.match(
    dry.status?.message ?? "",
    new RegExp(`set spec.end: true and spec.confirm: ${dry.status?.dryRunHash}`),
  );
  assert.equal(dry.status?.archive?.sha256, ZIP);
  assert.deepEqual(
    [dry.status?.studentCount, dry.status?.verifiedCount, dry.status?.toDeleteCount],
    [3, 2, 2],
  );
  const firstHash = dry.status?.dryRunHash ?? "";

  // A zip that was read back may be downloaded: an Archive serves that one file, read-only.
  await rest.create(archivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Archive",
    metadata: { name: "term1-zip" },
    spec: { source: { classArchive: { templateName: "lab", name: "term1" } }, tokenSha256: "ab".repeat(32) },
  });
  const serve = await eventually("the serving pod", async () => {
    const pods = await copyPods(rest, ns, "archive");
    return pods.find((p) => p.metadata?.ownerReferences?.[0]?.name === "term1-zip");
  });
  assert.deepEqual(serve.spec?.containers[0]?.command?.slice(2, 4), [
    "serve-file",
    command[3]?.replace("/archives/", "/archive-source/"),
  ]);
  assert.deepEqual(
    serve.spec?.containers[0]?.volumeMounts?.map((m) => [m.mountPath, m.subPath, m.readOnly]),
    [["/archive-source", "archives", true]],
  );
  await rest.delete(archivesPath(ns, "term1-zip"));

  // Carol starts her environment again: she changed since the archive, so she is kept and the
  // list's hash changes.
  await rest.patch(userlandsPath(ns, "carol"), { spec: { enabled: true } });
  const changed = await eventually("carol kept", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.dryRunHash !== firstHash && ca;
  });
  assert.deepEqual(
    changed.status?.toDelete?.map((d) => d.user),
    ["alice"],
  );
  assert.match(
    changed.status?.kept?.find((k) => k.user === "carol")?.reason ?? "",
    /changed after it was archived/,
  );

  // A wrong confirm, then the hash read before carol's change: nothing is deleted.
  for (const confirm of ["0".repeat(64), firstHash]) {
    await rest.patch(classArchivesPath(ns, "term1"), { spec: { end: true, confirm } });
    await eventually(`refused ${confirm.slice(0, 8)}`, async () => {
      const ca = await getCA(rest, ns);
      return (
        ca.metadata.generation === ca.status?.observedGeneration &&
        /nothing is deleted/.test(ca.status?.message ?? "") &&
        ca
      );
    });
    assert.equal((await getCA(rest, ns)).status?.phase, "DryRun");
    for (const u of ["alice", "bob", "carol"]) assert.ok(await exists(rest, userlandsPath(ns, u)), u);
  }

  // The right one: alice and her claim go; bob (unverified) and carol (changed) stay with theirs.
  const secondHash = changed.status?.dryRunHash ?? "";
  await rest.patch(classArchivesPath(ns, "term1"), { spec: { confirm: secondHash } });
  const ended = await eventually("Ended", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.phase === "Ended" && ca;
  });
  assert.equal(ended.status?.deleted, 1);
  assert.equal(await exists(rest, userlandsPath(ns, "alice")), false);
  assert.equal(await exists(rest, pvcPath(ns, claim("alice"))), false);
  for (const u of ["bob", "carol"]) {
    assert.ok(await exists(rest, userlandsPath(ns, u)), u);
    assert.ok(await exists(rest, pvcPath(ns, claim(u))), `${u}'s claim`);
  }
});

test("a cancelled ClassArchive starts again exactly the environments it stopped, and deletes nothing (issue 44 item 5)", async (t) => {
  const ns = await testNamespace(t, "carch-cancel");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "lab", spec());
  await createUserland(ns, "alice", "alice", "lab", true);
  await createUserland(ns, "bob", "bob", "lab", false);
  await rest.create(classArchivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "ClassArchive",
    metadata: { name: "term1" },
    spec: { templateName: "lab", class: "*", archive: true },
  });
  for (const u of ["alice", "bob"])
    await eventually(`${u} stopped for the archive`, async () => {
      const got = await rest.get<Userland>(userlandsPath(ns, u));
      return (
        got.spec.enabled === false &&
        got.metadata.annotations?.["userland.dev/stopped-reason"] === "ClassArchive"
      );
    });
  await rest.patch(classArchivesPath(ns, "term1"), { spec: { cancel: true } });
  const cancelled = await eventually("Cancelled", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.phase === "Cancelled" && ca;
  });
  assert.equal(cancelled.status?.message, "Cancelled: 1 environment started again; nothing was deleted");
  const [alice, bob] = await Promise.all(
    ["alice", "bob"].map((u) => rest.get<Userland>(userlandsPath(ns, u))),
  );
  assert.equal(alice?.spec.enabled, true, "alice ran before: she runs again");
  assert.equal(bob?.spec.enabled, false, "bob was stopped before: he stays stopped");
  for (const u of [alice, bob])
    assert.equal(u?.metadata.annotations?.["userland.dev/stopped-reason"], undefined);
  await eventually(
    "the archive's pods gone",
    async () => (await copyPods(rest, ns, "classarchive")).length === 0,
  );
  await assert.rejects(rest.patch(classArchivesPath(ns, "term1"), { spec: { cancel: false } }), (e) =>
    isInvalid(e),
  );
});

test("a ClassArchive of a Template without a collection fails with what to set, and makes no pod", async (t) => {
  const ns = await testNamespace(t, "carch2");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(
    ns,
    "bare",
    simpleTemplateSpec("registry.invalid/ide:1", {
      volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
    }),
  );
  await createUserland(ns, "alice", "alice", "bare", true);
  await rest.create(classArchivesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "ClassArchive",
    metadata: { name: "term1" },
    spec: { templateName: "bare", class: "*", end: true },
  });
  const failed = await eventually("Failed", async () => {
    const ca = await getCA(rest, ns);
    return ca.status?.phase === "Failed" && ca;
  });
  assert.match(failed.status?.message ?? "", /has no collection \(spec\.coursework\.collection\)/);
  assert.equal((await rest.get<Userland>(userlandsPath(ns, "alice"))).spec.enabled, true);
  assert.deepEqual(await copyPods(rest, ns, "classarchive"), []);
});

test("the admin guide's end of term with kubectl: apply, read the dry run, confirm its hash", async (t) => {
  const ns = await testNamespace(t, "carch-guide");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_COPY_IMAGE: IMAGE } });
  await createTemplate(ns, "jupyter", spec());
  await createUserland(ns, "ann", "ann", "jupyter", false);
  const annClaim = childNames("jupyter", "ann").pvc("home");
  await eventually("ann's claim", () => exists(rest, pvcPath(ns, annClaim)));

  const guide = readFileSync(join(repoRoot, "deploy", "README.md"), "utf8");
  const section = guide.slice(guide.indexOf("### End of term"));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(yaml, "the guide's classarchive.yaml");
  const dir = await mkdtemp(join(tmpdir(), "guide-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "classarchive.yaml"), yaml);
  const { info } = await testCluster();
  const env = {
    ...process.env,
    KUBECONFIG: info.kubeconfig,
    PATH: `${info.binDir}:${process.env.PATH ?? ""}`,
  };
  const [apply, ...rest_] = guideCommands(join(repoRoot, "deploy", "README.md"), "### End of term").flatMap(
    (s) => s.blocks.flat(),
  );
  const run = (command: string) =>
    execFileSync("sh", ["-c", command.replaceAll("-n ide ", `-n ${ns} `)], {
      env,
      cwd: dir,
      encoding: "utf8",
    });
  assert.ok(apply?.includes("apply -f classarchive.yaml"), apply);
  run(apply ?? "");

  // The operator's pods, finished as the kubelet would.
  const name = "jupyter-2026-autumn";
  const [archivePod] = await eventually("the archive pod", async () => {
    const pods = await copyPods(rest, ns, "classarchive");
    return pods.length > 0 && pods;
  });
  await finish(rest, archivePod!, 0, {
    folders: 1,
    incomplete: [],
    files: 1,
    bytes: 1,
    manifestSha256: MANIFEST,
  });
  const [verifyPod] = await eventually("the read-back pod", async () => {
    const pods = await copyPods(rest, ns, "verify");
    return pods.length > 0 && pods;
  });
  await finish(rest, verifyPod!, 0, {
    folders: 1,
    verified: 1,
    unverified: [],
    entries: 2,
    bytes: 99,
    sha256: ZIP,
  });
  await eventually(
    "the dry run",
    async () => (await rest.get<ClassArchive>(classArchivesPath(ns, name))).status?.phase === "DryRun",
  );

  const outputs = rest_.map(run);
  assert.match(
    outputs[0] ?? "",
    new RegExp(`${name}\\s+jupyter\\s+\\*\\s+DryRun\\s+1\\s+1\\s+1`),
    "kubectl get's columns",
  );
  assert.match(outputs[1] ?? "", /"user":"ann"/);
  const ended = await eventually("Ended", async () => {
    const ca = await rest.get<ClassArchive>(classArchivesPath(ns, name));
    return ca.status?.phase === "Ended" && ca;
  });
  assert.equal(ended.status?.deleted, 1);
  assert.equal(await exists(rest, userlandsPath(ns, "ann")), false);
  assert.equal(await exists(rest, pvcPath(ns, annClaim)), false);
});
