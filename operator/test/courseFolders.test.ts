import assert from "node:assert/strict";
import { test } from "node:test";
import type { Template, Userland } from "../../api/v1alpha1/index.ts";
import { courseFolderMounts, desiredCourseClaims } from "../courseFolders.ts";
import { desiredChildren, TemplateError } from "../desired.ts";

const userland: Userland = {
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name: "alice", namespace: "class", uid: "u-1" },
  spec: { user: "alice", templateName: "jupyter" },
};

const pvcSpec = { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } };

const template = (coursework?: Template["spec"]["coursework"], volumes: unknown[] = []): Template => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name: "jupyter", namespace: "class", uid: "t-1", generation: 1 },
  spec: {
    template: {
      spec: {
        containers: [
          { name: "ide", image: "registry.invalid/ide:1", ports: [{ containerPort: 8888 }] },
          { name: "db", image: "registry.invalid/db:1" },
        ],
        volumes: volumes as never,
      },
    },
    ...(coursework ? { coursework } : {}),
  },
});

const folders = {
  folders: [
    { name: "course", mountPath: "/srv/course", pvcSpec },
    { name: "shared", mountPath: "/srv/shared", pvcSpec },
  ],
};

test("without coursework, being a teacher changes nothing: the Deployment is exactly as before", () => {
  const plain = desiredChildren(userland, template());
  const asTeacher = desiredChildren(userland, template(), { teacher: true });
  for (const part of ["deployment", "service", "pvcs", "proxyPort"] as const)
    assert.deepEqual(asTeacher[part], plain[part], part);
  assert.equal(plain.deployment.spec?.template.spec?.volumes, undefined);
  assert.deepEqual(desiredCourseClaims(template()), []);
});

test("a student gets every course folder read-only in every container, on the volume and the mount", () => {
  const pod = desiredChildren(userland, template(folders)).deployment.spec?.template.spec;
  assert.deepEqual(pod?.volumes, [
    { name: "course-course", persistentVolumeClaim: { claimName: "jupyter-course-course", readOnly: true } },
    { name: "course-shared", persistentVolumeClaim: { claimName: "jupyter-course-shared", readOnly: true } },
  ]);
  for (const container of pod?.containers ?? [])
    assert.deepEqual(container.volumeMounts, [
      { name: "course-course", mountPath: "/srv/course", readOnly: true },
      { name: "course-shared", mountPath: "/srv/shared", readOnly: true },
    ]);
});

test("a teacher gets them read-write (readOnly left out, as the API server stores false), and a change of role changes the hash", () => {
  const student = desiredChildren(userland, template(folders));
  const teacher = desiredChildren(userland, template(folders), { teacher: true });
  const pod = teacher.deployment.spec?.template.spec;
  assert.deepEqual(pod?.volumes?.[0], {
    name: "course-course",
    persistentVolumeClaim: { claimName: "jupyter-course-course" },
  });
  assert.deepEqual(pod?.containers[0]?.volumeMounts?.[1], {
    name: "course-shared",
    mountPath: "/srv/shared",
  });
  assert.notEqual(
    teacher.deployment.metadata?.annotations?.["userland.dev/desired-hash"],
    student.deployment.metadata?.annotations?.["userland.dev/desired-hash"],
  );
  assert.deepEqual(
    courseFolderMounts(template(folders), true).mounts.map((m) => m.readOnly),
    [undefined, undefined],
  );
});

test("a pod volume with a course folder's volume name is the Template's error", () => {
  const clash = template(folders, [{ name: "course-shared", emptyDir: {} }]);
  assert.throws(
    () => desiredChildren(userland, clash),
    (e: Error) => {
      assert.ok(e instanceof TemplateError);
      assert.match(e.message, /volume named course-shared/);
      return true;
    },
  );
});

test("each folder's claim is named <template>-course-<folder>, labelled for the operator's cache (not as a student's claim), names its Template and is kept when the Template goes unless the folder says Delete", () => {
  const claims = desiredCourseClaims(template(folders));
  assert.deepEqual(
    claims.map((c) => c.metadata?.name),
    ["jupyter-course-course", "jupyter-course-shared"],
  );
  const [first] = claims;
  assert.deepEqual(first?.metadata?.labels, {
    "app.kubernetes.io/managed-by": "userland-operator",
    "userland.dev/course-folder": "course",
  });
  assert.deepEqual(first?.metadata?.annotations, { "userland.dev/course-template": "jupyter" });
  assert.equal(first?.metadata?.ownerReferences, undefined, "Retain (the default): no owner to collect it");
  assert.deepEqual(first?.spec, pvcSpec);

  const [deleted] = desiredCourseClaims(
    template({ folders: [{ name: "course", mountPath: "/srv/course", pvcSpec, reclaimPolicy: "Delete" }] }),
  );
  assert.deepEqual(deleted?.metadata?.ownerReferences, [
    { apiVersion: "userland.dev/v1alpha1", kind: "Template", name: "jupyter", uid: "t-1", controller: true },
  ]);
});

test("the collection: a Retain claim <template>-collection; teachers see handins and grades read-only and feedback read-write, students never mount it", () => {
  const collection = { pvcSpec, mountPath: "/srv/collection/" };
  const withCollection = template({ ...folders, collection });
  const claim = desiredCourseClaims(withCollection).find((c) => c.metadata?.name === "jupyter-collection");
  assert.ok(claim);
  assert.equal(
    claim.metadata?.ownerReferences,
    undefined,
    "always Retain: collected work outlives the Template",
  );
  assert.equal(claim.metadata?.annotations?.["userland.dev/course-template"], "jupyter");

  const student = desiredChildren(userland, withCollection).deployment.spec?.template.spec;
  assert.equal(
    student?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === "jupyter-collection"),
    false,
  );
  const teacher = desiredChildren(userland, withCollection, { teacher: true }).deployment.spec?.template.spec;
  assert.deepEqual(
    teacher?.volumes?.find((v) => v.name === "collection"),
    { name: "collection", persistentVolumeClaim: { claimName: "jupyter-collection" } },
  );
  assert.deepEqual(
    teacher?.containers[0]?.volumeMounts?.filter((m) => m.name === "collection"),
    [
      { name: "collection", mountPath: "/srv/collection/handins", subPath: "handins", readOnly: true },
      { name: "collection", mountPath: "/srv/collection/feedback", subPath: "feedback" },
      { name: "collection", mountPath: "/srv/collection/grades", subPath: "grades", readOnly: true },
    ],
  );
  // A pod volume named like the collection's is refused even for a student (the Template's validation probe).
  assert.throws(
    () => desiredChildren(userland, template({ collection }, [{ name: "collection", emptyDir: {} }])),
    (e: Error) => e instanceof TemplateError && /volume named collection/.test(e.message),
  );
});

test("a teachersOnly folder (hidden tests, solutions) is in a teacher's pod and in no student's", () => {
  const withGraders = template({
    folders: [
      ...folders.folders,
      { name: "graders", mountPath: "/srv/graders", pvcSpec, teachersOnly: true },
    ],
  });
  const student = desiredChildren(userland, withGraders).deployment.spec?.template.spec;
  const teacher = desiredChildren(userland, withGraders, { teacher: true }).deployment.spec?.template.spec;
  const claimsOf = (pod: typeof student) =>
    (pod?.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName).filter(Boolean);
  const mountsOf = (pod: typeof student) => (pod?.containers[0]?.volumeMounts ?? []).map((m) => m.mountPath);
  assert.ok(!claimsOf(student).includes("jupyter-course-graders"), "no student's pod names the claim");
  assert.ok(!mountsOf(student).includes("/srv/graders"));
  assert.ok(claimsOf(teacher).includes("jupyter-course-graders"));
  assert.ok(mountsOf(teacher).includes("/srv/graders"));
  // Its claim is kept like any folder's: teachers write the autograder into it.
  assert.ok(desiredCourseClaims(withGraders).some((c) => c.metadata?.name === "jupyter-course-graders"));
});
