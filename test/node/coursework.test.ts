/**
 * Course folders on the real node (docs/decisions/0011-coursework.md): one claim bound by
 * local-path-provisioner, mounted into a student's and a teacher's running containers. The
 * teacher writes a file; the student reads it and cannot write (the kernel says EROFS), not even
 * as root in their container. ReadWriteOnce: both pods are on the one real node.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames, LABELS } from "../../api/naming.ts";
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";
import { testNamespace } from "../support/cluster.ts";
import { appointTeacher, chartCourseTeacherRole } from "../support/coursework.ts";
import { startOperator } from "../support/operator.ts";
import { createTemplate, createUserland, getPvc, waitForPhase } from "../support/resources.ts";
import {
  execInContainer,
  LOCAL_PATH_STORAGE_CLASS,
  onRealNode,
  realNode,
  waitForOnePodReady,
} from "../support/realNode.ts";

function courseTemplate(image: string): TemplateSpec {
  return {
    displayName: "Course folders on the real node",
    template: {
      spec: {
        ...onRealNode,
        containers: [
          {
            name: "ide",
            image,
            imagePullPolicy: "Never",
            command: ["busybox", "httpd", "-f", "-p", "8080", "-h", "/srv"],
            ports: [{ containerPort: 8080, name: "http" }],
          },
        ],
      },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    coursework: {
      folders: [
        {
          name: "course",
          mountPath: "/srv/course",
          pvcSpec: {
            storageClassName: LOCAL_PATH_STORAGE_CLASS,
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: "64Mi" } },
          },
        },
      ],
    },
  };
}

test("a teacher writes the course folder, a student reads it and cannot write it (EROFS)", async (t) => {
  const node = await realNode();
  const ns = await testNamespace(t, "node-cw");
  const role = await chartCourseTeacherRole(t, ns);
  await appointTeacher(ns, role, "tess", "teach-tess");
  await startOperator(t, ns);
  await createTemplate(ns, "course", courseTemplate(node.images.tools ?? ""));
  await createUserland(ns, "tess", "tess", "course");
  await createUserland(ns, "ann", "ann", "course");
  await waitForPhase(ns, "tess", "Ready", 120_000);
  await waitForPhase(ns, "ann", "Ready", 120_000);
  const pod = (userland: string) =>
    waitForOnePodReady(ns, `${LABELS.instance}=${childNames("course", userland).deployment}`);
  const teacher = await pod("tess");
  const student = await pod("ann");
  assert.equal((await getPvc(ns, "course-course-course"))?.status?.phase, "Bound");

  const written = await execInContainer(teacher, [
    "sh",
    "-c",
    "echo 'week 1: read chapter 2' > /srv/course/notes.txt && mkdir /srv/course/week1",
  ]);
  assert.equal(written.code, 0, `the teacher writes: ${written.stderr}`);

  const read = await execInContainer(student, ["cat", "/srv/course/notes.txt"]);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(read.stdout, "week 1: read chapter 2\n", "the student sees the teacher's file");

  for (const [what, command] of [
    ["create a file", "echo mine > /srv/course/answers.txt"],
    ["overwrite the teacher's file", "echo changed > /srv/course/notes.txt"],
    ["delete the teacher's file", "rm /srv/course/notes.txt"],
    ["make a folder", "mkdir /srv/course/mine"],
    ["remount it read-write", "mount -o remount,rw /srv/course"],
  ] as const) {
    const attempt = await execInContainer(student, ["sh", "-c", command]);
    assert.notEqual(attempt.code, 0, `the student could ${what}`);
    if (what !== "remount it read-write")
      assert.match(attempt.stderr, /Read-only file system/, `${what}: ${attempt.stderr}`);
  }
  const after = await execInContainer(teacher, ["sh", "-c", "cat /srv/course/notes.txt; ls /srv/course"]);
  assert.equal(
    after.stdout,
    "week 1: read chapter 2\nnotes.txt\nweek1\n",
    "nothing the student tried changed it",
  );
});
