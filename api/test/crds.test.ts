import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CRD_DIR, crdFiles, customResourceDefinitions } from "../crds.ts";

test("the checked-in CRDs are exactly what api/ generates (run `npm run generate` after changing api/)", () => {
  const generated = crdFiles();
  assert.deepEqual(readdirSync(CRD_DIR).sort(), [...generated.keys()].sort());
  for (const [name, text] of generated) {
    assert.equal(readFileSync(join(CRD_DIR, name), "utf8"), text, `${name} drifted from api/`);
  }
});

test("the CRDs carry printer columns, short names, status subresources and the ESC field names", () => {
  const text = [...crdFiles().values()].join("\n");
  for (const column of ["name: User", "name: Template", "name: Phase", "name: Age"])
    assert.ok(text.includes(column), column);
  assert.match(text, /shortNames:\n\s+- ul/);
  assert.match(text, /status: \{\}/);
  for (const field of ["pvcSpec:", "templateName:", "volumes:", "service:"])
    assert.ok(text.includes(field), field);
});

test("Userlands are selectable by spec.user and spec.templateName (one student's lookups read no one else's)", () => {
  const userland = customResourceDefinitions.find((c) => c.spec.names.kind === "Userland");
  assert.deepEqual(userland?.spec.versions[0]?.selectableFields, [
    { jsonPath: ".spec.user" },
    { jsonPath: ".spec.templateName" },
  ]);
  const template = customResourceDefinitions.find((c) => c.spec.names.kind === "Template");
  assert.equal(template?.spec.versions[0]?.selectableFields, undefined);
});

test("Assignments and Submissions: printer columns, selectable by assignment and user, status only by the subresource", () => {
  const byKind = (kind: string) => customResourceDefinitions.find((c) => c.spec.names.kind === kind);
  const assignment = byKind("Assignment")?.spec.versions[0];
  const submission = byKind("Submission")?.spec.versions[0];
  assert.deepEqual(
    assignment?.additionalPrinterColumns?.map((c) => c.name),
    ["Template", "Title", "Deadline", "Students", "Handed In", "Missing", "Age"],
  );
  assert.deepEqual(
    submission?.additionalPrinterColumns?.map((c) => c.name),
    ["Assignment", "User", "Handed In", "Late", "Files", "SHA-256", "Score", "Max", "Age"],
  );
  assert.deepEqual(submission?.selectableFields, [
    { jsonPath: ".spec.assignment" },
    { jsonPath: ".spec.user" },
  ]);
  for (const version of [assignment, submission]) assert.deepEqual(version?.subresources, { status: {} });
});
