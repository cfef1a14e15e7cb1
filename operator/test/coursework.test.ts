/**
 * Course folders against the real API server (docs/decisions/0011-coursework.md): the CRD's rules,
 * the claims a Template's sync keeps, and the mounts of students and teachers, with teachers
 * decided by the chart's own ClusterRole and real RoleBindings.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import type { V1Deployment, V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { childNames } from "../../api/naming.ts";
import type { Template, TemplateSpec } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { KubeError } from "../../lib/kubeRest.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { eventually, testCluster, testNamespace } from "../../test/support/cluster.ts";
import { guideCommands } from "../../test/support/guide.ts";
import { kubectl, ok } from "../../test/chart/support.ts";
import { appointTeacher, chartCourseTeacherRole } from "../../test/support/coursework.ts";
import { installCrds, startOperator } from "../../test/support/operator.ts";
import {
  adminRest,
  createTemplate,
  createUserland,
  getDeployment,
  getPvc,
  pvcsPath,
  recordSessionGroups,
  simpleTemplateSpec,
  templatesPath,
} from "../../test/support/resources.ts";

const claimSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };

/** Folders course (Retain, the default) and shared (`sharedPolicy`, default Retain too). */
const courseSpec = (
  extra: Partial<TemplateSpec["coursework"]> = {},
  sharedPolicy?: "Retain" | "Delete",
): TemplateSpec =>
  simpleTemplateSpec("registry.invalid/ide:1", {
    volumes: [{ name: "home", pvcSpec: { ...claimSpec, accessModes: ["ReadWriteOnce"] } }],
    coursework: {
      home: { volume: "home", mountPath: "/home/student" },
      folders: [
        { name: "course", mountPath: "/srv/course", pvcSpec: claimSpec },
        {
          name: "shared",
          mountPath: "/srv/shared",
          pvcSpec: claimSpec,
          ...(sharedPolicy ? { reclaimPolicy: sharedPolicy } : {}),
        },
      ],
      ...extra,
    },
  });

/** `request` is refused by the API server's validation (422) with `message`. */
const refused = (what: string, request: Promise<unknown>, message: RegExp) =>
  assert.rejects(
    request,
    (error: Error) => {
      assert.ok(error instanceof KubeError, `${what}: ${String(error)}`);
      assert.equal(error.code, 422, `${what}: ${error.message}`);
      assert.match(error.message, message, what);
      return true;
    },
    what,
  );

/** Each course folder's pod volume and its mount in the first container, as `name: ro|rw`. */
function courseMounts(deployment: V1Deployment | undefined): string[] {
  const pod = deployment?.spec?.template.spec;
  return (pod?.volumes ?? [])
    .filter((v) => v.name.startsWith("course-"))
    .map((v) => {
      const mount = pod?.containers[0]?.volumeMounts?.find((m) => m.name === v.name);
      const volumeRo = v.persistentVolumeClaim?.readOnly === true;
      const mountRo = mount?.readOnly === true;
      return `${v.persistentVolumeClaim?.claimName}@${mount?.mountPath}: ${volumeRo && mountRo ? "ro" : !volumeRo && !mountRo ? "rw" : "mixed"}`;
    });
}

test("the CRD refuses malformed coursework with messages that say what to fix", async (t) => {
  const ns = await testNamespace(t, "cw-crd");
  await installCrds();
  const rest = await adminRest();
  const body = (name: string, spec: unknown) => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name },
    spec,
  });
  const folder = (name: string, mountPath: string) => ({ name, mountPath, pvcSpec: claimSpec });
  const spec = (coursework: unknown, volumes: unknown = [{ name: "home", pvcSpec: claimSpec }]) => ({
    ...simpleTemplateSpec(),
    volumes,
    coursework,
  });
  // kubectl-style objects as an admin writes them: these are accepted.
  await rest.create(templatesPath(ns), body("good", courseSpec()));
  await rest.create(templatesPath(ns), body("folders-only", spec({ folders: [folder("course", "/c")] })));
  const cases: [string, unknown, RegExp][] = [
    [
      "home names no volume",
      spec({ home: { volume: "data", mountPath: "/home" } }),
      /home\.volume must name an entry of spec\.volumes/,
    ],
    [
      "home without volumes",
      { ...simpleTemplateSpec(), coursework: { home: { volume: "home", mountPath: "/home" } } },
      /home\.volume must name an entry of spec\.volumes/,
    ],
    [
      "a relative mount path",
      spec({ folders: [folder("course", "srv/course")] }),
      /mountPath.*should match '\^\/'/,
    ],
    [
      "a '..' in a mount path",
      spec({ folders: [folder("course", "/srv/../etc")] }),
      /must not contain '\.\.' components/,
    ],
    [
      "a folder name that is no DNS label",
      spec({ folders: [folder("Course_1", "/c")] }),
      /name.*should match/,
    ],
    ["a folder name with pvc-", spec({ folders: [folder("pvc-home", "/c")] }), /must not contain 'pvc-'/],
    [
      "two folders of one name",
      spec({ folders: [folder("course", "/a"), folder("course", "/b")] }),
      /Duplicate value/,
    ],
    [
      "two folders at one path",
      spec({ folders: [folder("a", "/c"), folder("b", "/c")] }),
      /cannot share a mountPath/,
    ],
  ];
  for (const [what, bad, message] of cases)
    await refused(what, rest.create(templatesPath(ns), body("bad", bad)), message);
});

test("course folders: claims made for the Template; students read-only, teachers (RBAC) read-write, and back when the RoleBinding goes", async (t) => {
  const ns = await testNamespace(t, "cw");
  const role = await chartCourseTeacherRole(t, ns);
  await startOperator(t, ns, { env: { OPERATOR_TEACHER_CACHE_TTL: "1s" } });
  const rest = await adminRest();
  const template = await createTemplate(ns, "jupyter", courseSpec({}, "Delete"));
  await createTemplate(ns, "plain", simpleTemplateSpec());

  // One claim per folder, naming the Template, reported in its status; shared says Delete, so the
  // Template owns it, and course keeps the default, Retain: no owner.
  for (const folder of ["course", "shared"]) {
    const claim = await eventually(`the ${folder} claim`, () => getPvc(ns, `jupyter-course-${folder}`));
    assert.deepEqual(
      claim.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
      folder === "shared" ? [["Template", "jupyter", template.metadata.uid]] : undefined,
    );
    assert.equal(claim.metadata?.annotations?.["userland.dev/course-template"], "jupyter");
    assert.equal(claim.metadata?.labels?.["userland.dev/course-folder"], folder);
    assert.deepEqual(claim.spec?.accessModes, ["ReadWriteMany"]);
  }
  await eventually("CourseFoldersReady=True", async () => {
    const now = await rest.get<Template>(templatesPath(ns, "jupyter"));
    return now.status?.conditions?.find((c) => c.type === "CourseFoldersReady")?.status === "True";
  });
  // A deleted claim is made again (its data is gone: an admin's deliberate act).
  const before = await getPvc(ns, "jupyter-course-shared");
  await rest.delete(pvcsPath(ns, "jupyter-course-shared"));
  await eventually("the shared claim to be re-created", async () => {
    const now = await getPvc(ns, "jupyter-course-shared");
    return now && now.metadata?.uid !== before?.metadata?.uid && !now.metadata?.deletionTimestamp;
  });

  // A student and a teacher-to-be: both read-only until RBAC says otherwise.
  await createUserland(ns, "ann", "ann@uni.example", "jupyter");
  await createUserland(ns, "tess", "tess@uni.example", "jupyter");
  await createUserland(ns, "tess-plain", "tess@uni.example", "plain");
  const ann = childNames("jupyter", "ann").deployment;
  const tess = childNames("jupyter", "tess").deployment;
  const readOnly = ["jupyter-course-course@/srv/course: ro", "jupyter-course-shared@/srv/shared: ro"];
  const readWrite = readOnly.map((m) => m.replace(": ro", ": rw"));
  const mountsOf = async (name: string) => courseMounts(await getDeployment(ns, name));
  assert.deepEqual(
    await eventually("Ann's Deployment", () => getDeployment(ns, ann)).then(courseMounts),
    readOnly,
  );
  assert.deepEqual(
    await eventually("Tess's Deployment", () => getDeployment(ns, tess)).then(courseMounts),
    readOnly,
  );
  // Every container sees the folders (here the one), at their mount paths.
  const plain = await eventually("the plain Template's Deployment", () =>
    getDeployment(ns, childNames("plain", "tess-plain").deployment),
  );
  assert.equal(plain.spec?.template.spec?.volumes, undefined, "a Template without coursework: no volumes");

  // Appointing Tess: one RoleBinding to the chart's ClusterRole, for her session user.
  const binding = await appointTeacher(ns, role, "tess@uni.example", "teach-jupyter-tess");
  await eventually(
    "Tess's Deployment to mount the folders read-write",
    async () => JSON.stringify(await mountsOf(tess)) === JSON.stringify(readWrite),
  );
  assert.deepEqual(await mountsOf(ann), readOnly, "Ann stays a student");

  // Removing the RoleBinding: read-only again once the cached answer (1 s here) expires.
  await rest.delete(binding);
  await eventually(
    "Tess's Deployment to mount the folders read-only again",
    async () => JSON.stringify(await mountsOf(tess)) === JSON.stringify(readOnly),
  );
  assert.deepEqual(await mountsOf(ann), readOnly);

  // Appointed by the identity provider's group "staff" (issue 41 item 7): a teacher once a sign-in
  // recorded her groups in her session record (the auth service's report, api/sessions.ts).
  await appointTeacher(ns, role, "staff", "teach-jupyter-staff", "Group");
  await recordSessionGroups(ns, "ann@uni.example", ["students"]);
  await recordSessionGroups(ns, "tess@uni.example", ["staff"]);
  await eventually(
    "Tess's Deployment to mount the folders read-write by her group",
    async () => JSON.stringify(await mountsOf(tess)) === JSON.stringify(readWrite),
  );
  assert.deepEqual(await mountsOf(ann), readOnly, "Ann's group teaches nothing");
});

test("a course folder's claim name held by someone else's claim blocks the Template's environments until it goes", async (t) => {
  const ns = await testNamespace(t, "cw-held");
  await startOperator(t, ns, { env: { OPERATOR_TEACHER_CACHE_TTL: "1s" } });
  const rest = await adminRest();
  await rest.create<V1PersistentVolumeClaim>(pvcsPath(ns), {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "jupyter-course-course" },
    spec: claimSpec,
  });
  await createTemplate(ns, "jupyter", courseSpec());
  await createUserland(ns, "ann", "ann", "jupyter");
  const template = await eventually("CourseFoldersReady=False", async () => {
    const now = await rest.get<Template>(templatesPath(ns, "jupyter"));
    const condition = now.status?.conditions?.find((c) => c.type === "CourseFoldersReady");
    return condition?.status === "False" ? condition : undefined;
  });
  assert.match(template.message, /jupyter-course-course already exists and is not this Template's/);
  await eventually("Ann's Userland to say why it does not start", async () => {
    const u = await rest.get<{ status?: { phase?: string; message?: string } }>(
      paths.namespaced("userland.dev", "v1alpha1", "userlands", ns, "ann"),
    );
    return u.status?.message?.includes("jupyter-course-course") ? u : undefined;
  });
  assert.equal(await getDeployment(ns, childNames("jupyter", "ann").deployment), undefined);

  // The admin removes the foreign claim: the Template makes its own, and Ann's environment starts.
  await rest.delete(pvcsPath(ns, "jupyter-course-course"));
  const own = await eventually("the Template's own claim", async () => {
    const claim = await getPvc(ns, "jupyter-course-course");
    return claim?.metadata?.annotations?.["userland.dev/course-template"] === "jupyter" ? claim : undefined;
  });
  assert.ok(own.metadata?.labels?.["userland.dev/course-folder"]);
  await eventually("Ann's Deployment", () => getDeployment(ns, childNames("jupyter", "ann").deployment));
});

test("the admin guide's commands appoint course teachers, per namespace and per Template", async (t) => {
  const ns = await testNamespace(t, "cw-guide");
  await installCrds();
  const role = await chartCourseTeacherRole(t, ns);
  const { info } = await testCluster();
  const env = {
    ...process.env,
    KUBECONFIG: info.kubeconfig,
    PATH: `${info.binDir}:${process.env.PATH ?? ""}`,
  };
  const commands = guideCommands(join(repoRoot, "deploy", "README.md"), "### Course folders").flatMap((s) =>
    s.blocks.flat(),
  );
  assert.ok(commands.length >= 3, commands.join("\n"));
  for (const command of commands) {
    const local = command
      .replaceAll("-n ide ", `-n ${ns} `)
      .replaceAll("=userland-course-teacher ", `=${role} `);
    execFileSync("sh", ["-c", local], { env, encoding: "utf8" });
  }
  const canUpdate = (user: string, template: string): string => {
    try {
      return execFileSync(
        "kubectl",
        [
          "-n",
          ns,
          "auth",
          "can-i",
          "update",
          `templates.userland.dev/${template}`,
          "--subresource=coursework",
          `--as=${user}`,
        ],
        { env, encoding: "utf8" },
      ).trim();
    } catch (error) {
      return String((error as { stdout?: string }).stdout ?? "").trim();
    }
  };
  assert.equal(canUpdate("userland:alice@uni.example", "jupyter"), "yes");
  assert.equal(canUpdate("userland:alice@uni.example", "code-server"), "yes", "Alice: every Template here");
  assert.equal(canUpdate("userland:bob@uni.example", "jupyter"), "yes");
  assert.equal(canUpdate("userland:bob@uni.example", "code-server"), "no", "Bob: only jupyter");
  assert.equal(canUpdate("userland:carol@uni.example", "jupyter"), "no", "a student");
  assert.equal(canUpdate("alice@uni.example", "jupyter"), "no", "the prefix matters");
});

test("Assignments and Submissions as an admin writes them: accepted, shown with their columns, and the hostile edits refused", async (t) => {
  const ns = await testNamespace(t, "cw-objects");
  await installCrds();
  const manifests = `
apiVersion: userland.dev/v1alpha1
kind: Assignment
metadata: { name: lab1 }
spec:
  templateName: jupyter
  title: "Lab 1: lists and loops"
  source: { folder: course, path: week1/lab1 }
  deadline: "2026-12-01T23:59:00Z"
  limits: { maxBytes: 10485760, maxFiles: 200 }
---
apiVersion: userland.dev/v1alpha1
kind: Submission
metadata: { name: lab1-ann }
spec: { assignment: lab1, user: ann@uni.example }
`;
  ok(await kubectl(["-n", ns, "apply", "-f", "-"], manifests), "kubectl apply");
  const header = (kind: string) =>
    kubectl(["-n", ns, "get", kind]).then((r) => ok(r, `get ${kind}`).split("\n")[0] ?? "");
  assert.match(
    await header("assignments"),
    /^NAME\s+TEMPLATE\s+DEADLINE\s+STUDENTS\s+HANDED IN\s+MISSING\s+AGE$/,
  );
  // The deadline as written, not an age (a date column shows "<invalid>" for the future; issue 44 item 7).
  assert.match(
    ok(await kubectl(["-n", ns, "get", "assignment", "lab1"]), "get lab1").split("\n")[1] ?? "",
    /^lab1\s+\S+\s+2026-12-01T23:59:00Z\s/,
  );
  assert.match(await header("subm"), /^NAME\s+ASSIGNMENT\s+USER\s+HANDED IN\s+LATE\s+SCORE\s+AGE$/);
  const defaults = ok(
    await kubectl(["-n", ns, "get", "submission", "lab1-ann", "-o", "jsonpath={.spec.user}"]),
    "get",
  );
  assert.equal(defaults, "ann@uni.example");

  const rest = await adminRest();
  const path = (plural: string, name?: string) =>
    paths.namespaced("userland.dev", "v1alpha1", plural, ns, name);
  const assignment = (name: string, source: unknown) => ({
    apiVersion: "userland.dev/v1alpha1",
    kind: "Assignment",
    metadata: { name },
    spec: { templateName: "jupyter", title: "x", source },
  });
  await refused(
    "a source path with ..",
    rest.create(path("assignments"), assignment("a1", { folder: "course", path: "week1/../../etc" })),
    /must not contain '\.\.' components/,
  );
  await refused(
    "an absolute source path",
    rest.create(path("assignments"), assignment("a2", { folder: "course", path: "/etc" })),
    /should match '\^\[\^\/\]'/,
  );
  await refused(
    "a backslash in the source path",
    rest.create(path("assignments"), assignment("a3", { folder: "course", path: "week1\\..\\x" })),
    /must not contain a backslash/,
  );
  await refused(
    "moving an Assignment to another class",
    rest.patch(path("assignments", "lab1"), { spec: { templateName: "other" } }),
    /spec\.templateName is immutable/,
  );
  await refused(
    "giving a Submission to another student",
    rest.patch(path("submissions", "lab1-ann"), { spec: { user: "mallory" } }),
    /spec\.user is immutable/,
  );
  await rest.patch(path("submissions", "lab1-ann"), {
    spec: { handInRequestedAt: "2026-11-30T10:00:00Z", handInRequestedBy: "student" },
  });
  await refused(
    "moving a hand-in's time back",
    rest.patch(path("submissions", "lab1-ann"), { spec: { handInRequestedAt: "2026-11-29T10:00:00Z" } }),
    /only moves forward/,
  );
  await refused(
    "taking a hand-in back",
    rest.patch(path("submissions", "lab1-ann"), { spec: { handInRequestedAt: null } }),
    /only moves forward/,
  );
  // Handing in again moves it forward; a collection at the closing time is final.
  await rest.patch(path("submissions", "lab1-ann"), {
    spec: { handInRequestedAt: "2026-11-30T11:00:00Z", handInRequestedBy: "deadline" },
  });
  await refused(
    "handing in after the collection at the closing time",
    rest.patch(path("submissions", "lab1-ann"), {
      spec: { handInRequestedAt: "2026-11-30T12:00:00Z", handInRequestedBy: "student" },
    }),
    /a collection at the closing time is final/,
  );
  const submissions = ok(
    await kubectl([
      "-n",
      ns,
      "get",
      "submissions",
      "--field-selector",
      "spec.user=ann@uni.example",
      "-o",
      "name",
    ]),
    "select by user",
  );
  assert.equal(submissions.trim(), "submission.userland.dev/lab1-ann");
});

test("deleting a Template keeps its Retain folders' materials, and a Template made again with its name takes them back", async (t) => {
  const ns = await testNamespace(t, "cw-retain");
  await startOperator(t, ns, { env: { OPERATOR_TEACHER_CACHE_TTL: "1s" } });
  const rest = await adminRest();
  await createTemplate(ns, "jupyter", courseSpec({}, "Delete"));
  const kept = await eventually("the course claim", () => getPvc(ns, "jupyter-course-course"));
  const collected = await eventually("the shared claim", () => getPvc(ns, "jupyter-course-shared"));

  await rest.delete(templatesPath(ns, "jupyter"));
  // The Delete folder's claim goes with the Template (the garbage collector): waiting for that also
  // gives the collector its chance at the Retain claim, which must still be there after it.
  await eventually("the shared (Delete) claim to be collected", async () => {
    const now = await getPvc(ns, "jupyter-course-shared");
    return (
      !now || now.metadata?.uid !== collected.metadata?.uid || now.metadata?.deletionTimestamp !== undefined
    );
  });
  const after = await getPvc(ns, "jupyter-course-course");
  assert.equal(after?.metadata?.uid, kept.metadata?.uid, "the Retain claim outlives its Template");
  assert.equal(after?.metadata?.deletionTimestamp, undefined);

  // Made again: the same claim is its folder (not "someone else's"), and its environments start.
  await createTemplate(ns, "jupyter", courseSpec());
  await eventually("CourseFoldersReady=True on the new Template", async () => {
    const now = await rest.get<Template>(templatesPath(ns, "jupyter"));
    return now.status?.conditions?.find((c) => c.type === "CourseFoldersReady")?.status === "True";
  });
  assert.equal((await getPvc(ns, "jupyter-course-course"))?.metadata?.uid, kept.metadata?.uid);
  await createUserland(ns, "ann", "ann", "jupyter");
  await eventually("Ann's Deployment", () => getDeployment(ns, childNames("jupyter", "ann").deployment));
});
