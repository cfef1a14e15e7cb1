/**
 * The CustomResourceDefinitions, built from the schemas in v1alpha1/: the single source of truth.
 * `npm run generate` writes them to charts/userland/crds/; a test fails when the checked-in YAML drifts.
 */
import type { V1CustomResourceDefinition } from "@kubernetes/client-node";
import { stringify } from "yaml";
import {
  ARCHIVES,
  ArchiveSpecSchema,
  ArchiveStatusSchema,
  ASSIGNMENTS,
  EXAMS,
  ExamSpecSchema,
  ExamStatusSchema,
  AssignmentSpecSchema,
  CLASS_ARCHIVES,
  ClassArchiveSpecSchema,
  ClassArchiveStatusSchema,
  AssignmentStatusSchema,
  GROUP,
  SUBMISSIONS,
  SubmissionSpecSchema,
  SubmissionStatusSchema,
  TEMPLATE_NAME_PATTERN,
  TEMPLATES,
  TemplateSpecSchema,
  TemplateStatusSchema,
  USERLAND_NAME_PATTERN,
  USER_REQUIRED_RULE,
  USERLANDS,
  UserlandFields,
  UserlandSpecSchema,
  UserlandStatusSchema,
  VERSION,
} from "./v1alpha1/index.ts";
import { toOpenAPI, type TSchema } from "./v1alpha1/schema.ts";

/**
 * The category every CRD belongs to: `kubectl get userland-all` lists Templates, Userlands,
 * Assignments, Submissions, Archives, ClassArchives and Exams together.
 * It must be no kind's name, plural, singular or short name: kubectl expands a category before a
 * resource name, so a category named `userland` made `kubectl get userland NAME` fail ("you must
 * specify only one resource") and `kubectl delete userland --all` delete Templates too.
 */
export const CATEGORY = "userland-all";

interface ResourceDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: TSchema;
  /** Spec fields that admission may fill in: optional in the published schema, required by a rule. */
  filledByAdmission?: { field: string; rule: { rule: string; message: string } }[];
  status: TSchema;
  rootValidations?: { rule: string; message: string }[];
  printerColumns: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
  /**
   * Fields list and watch requests may filter by (`fieldSelector`), so a client finds one user's
   * objects without reading everyone's. Kubernetes 1.31+ (beta, on by default; GA in 1.32); an API
   * server without the feature drops them, and readers fall back to filtering a full list.
   */
  selectableFields?: string[];
}

/** Object names become parts of other names, so the CRD checks them (the API server allows more). */
const nameRule = (pattern: string, message: string) => ({
  rule: `self.metadata.name.matches('${pattern}')`,
  message,
});
const TEMPLATE_NAMES = nameRule(
  TEMPLATE_NAME_PATTERN,
  "Template names are lowercase letters, digits and '-', start with a letter and have at most 24 characters: they become part of host names and Service names",
);
const USERLAND_NAMES = nameRule(
  USERLAND_NAME_PATTERN,
  "Userland names are lowercase letters, digits and '-' (no dots): they become part of Deployment and Service names",
);
const AGE_COLUMN = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

const definitions: ResourceDefinition[] = [
  {
    kind: "Template",
    plural: TEMPLATES,
    singular: "template",
    shortNames: ["tpl", "ult"],
    description: "What every user of this Template gets: a pod template, its Service and per-user volumes.",
    spec: TemplateSpecSchema,
    status: TemplateStatusSchema,
    rootValidations: [TEMPLATE_NAMES],
    printerColumns: [
      { name: "Display Name", type: "string", jsonPath: ".spec.displayName" },
      { name: "Userlands", type: "integer", jsonPath: ".status.userlands" },
      { name: "Valid", type: "string", jsonPath: ".status.conditions[?(@.type=='PodTemplateValid')].status" },
      AGE_COLUMN,
    ],
  },
  {
    kind: "Userland",
    plural: USERLANDS,
    singular: "userland",
    shortNames: ["ul"],
    description: "One user's environment: who it belongs to and which Template it runs.",
    spec: UserlandSpecSchema,
    status: UserlandStatusSchema,
    filledByAdmission: [{ field: "user", rule: USER_REQUIRED_RULE }],
    selectableFields: [UserlandFields.user, UserlandFields.templateName],
    rootValidations: [USERLAND_NAMES],
    printerColumns: [
      { name: "User", type: "string", jsonPath: ".spec.user" },
      { name: "Template", type: "string", jsonPath: ".spec.templateName" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Enabled", type: "boolean", jsonPath: ".spec.enabled", priority: 1 },
      { name: "Message", type: "string", jsonPath: ".status.message", priority: 1 },
      AGE_COLUMN,
    ],
  },
  {
    kind: "Assignment",
    plural: ASSIGNMENTS,
    singular: "assignment",
    shortNames: ["asgn"],
    description:
      "Work handed out to the students of a Template and collected from them (docs/decisions/0011-coursework.md).",
    spec: AssignmentSpecSchema,
    status: AssignmentStatusSchema,
    printerColumns: [
      { name: "Template", type: "string", jsonPath: ".spec.templateName" },
      { name: "Title", type: "string", jsonPath: ".spec.title", priority: 1 },
      // Times ahead as written: a date column shows "<invalid>" for the future (kubectl's age).
      { name: "Deadline", type: "string", jsonPath: ".spec.deadline" },
      { name: "Students", type: "integer", jsonPath: ".status.students" },
      { name: "Handed In", type: "integer", jsonPath: ".status.handedIn" },
      { name: "Missing", type: "integer", jsonPath: ".status.missing" },
      AGE_COLUMN,
    ],
  },
  {
    kind: "Submission",
    plural: SUBMISSIONS,
    singular: "submission",
    shortNames: ["subm"],
    description:
      "One student's copy of one Assignment: what was handed out to them and the receipt of what was collected.",
    spec: SubmissionSpecSchema,
    status: SubmissionStatusSchema,
    selectableFields: ["spec.assignment", "spec.user"],
    printerColumns: [
      { name: "Assignment", type: "string", jsonPath: ".spec.assignment" },
      { name: "User", type: "string", jsonPath: ".spec.user" },
      { name: "Handed In", type: "date", jsonPath: ".status.receipt.time" },
      { name: "Late", type: "boolean", jsonPath: ".status.receipt.late" },
      { name: "Files", type: "integer", jsonPath: ".status.receipt.files", priority: 1 },
      { name: "SHA-256", type: "string", jsonPath: ".status.receipt.sha256", priority: 1 },
      { name: "Score", type: "number", jsonPath: ".status.grade.score" },
      { name: "Max", type: "number", jsonPath: ".status.grade.maxScore", priority: 1 },
      AGE_COLUMN,
    ],
  },
  {
    kind: "Archive",
    plural: ARCHIVES,
    singular: "archive",
    shortNames: ["arch"],
    description:
      "One transfer through a one-shot pod, to or from the holder of a token: a download (a student's home or an assignment's hand-ins as a zip) or an upload (materials into a course folder, feedback into the collection) (docs/decisions/0011-coursework.md).",
    spec: ArchiveSpecSchema,
    status: ArchiveStatusSchema,
    printerColumns: [
      { name: "User", type: "string", jsonPath: ".spec.source.home.user" },
      { name: "Assignment", type: "string", jsonPath: ".spec.source.handins.assignment" },
      { name: "Requested By", type: "string", jsonPath: ".spec.requestedBy" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Files", type: "integer", jsonPath: ".status.summary.files", priority: 1 },
      AGE_COLUMN,
    ],
  },
  {
    kind: "ClassArchive",
    plural: CLASS_ARCHIVES,
    singular: "classarchive",
    shortNames: ["carch"],
    description:
      "The end of a term: a class's volumes and hand-ins archived into one zip, read back, then (when confirmed) its Userlands and claims deleted (docs/decisions/0011-coursework.md).",
    spec: ClassArchiveSpecSchema,
    status: ClassArchiveStatusSchema,
    printerColumns: [
      { name: "Template", type: "string", jsonPath: ".spec.templateName" },
      { name: "Class", type: "string", jsonPath: ".spec.class" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Students", type: "integer", jsonPath: ".status.studentCount" },
      { name: "Verified", type: "integer", jsonPath: ".status.verifiedCount" },
      { name: "To Delete", type: "integer", jsonPath: ".status.toDeleteCount" },
      { name: "Message", type: "string", jsonPath: ".status.message", priority: 1 },
      AGE_COLUMN,
    ],
  },
  {
    kind: "Exam",
    plural: EXAMS,
    singular: "exam",
    shortNames: ["exm"],
    description:
      "A class's exam: a time window in which its environments of a Template run with the network closed, reachable only by each student and the proctors, with work collected at the end (docs/decisions/0013-exams.md).",
    spec: ExamSpecSchema,
    status: ExamStatusSchema,
    printerColumns: [
      { name: "Template", type: "string", jsonPath: ".spec.templateName" },
      { name: "Class", type: "string", jsonPath: ".spec.class" },
      { name: "Start", type: "string", jsonPath: ".spec.start" },
      { name: "End", type: "string", jsonPath: ".spec.end" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Students", type: "integer", jsonPath: ".status.studentCount" },
      { name: "Ready", type: "integer", jsonPath: ".status.ready" },
      { name: "Collected", type: "integer", jsonPath: ".status.collected" },
      { name: "Title", type: "string", jsonPath: ".spec.title", priority: 1 },
      AGE_COLUMN,
    ],
  },
];

/** The spec's schema as published: fields admission may fill in are required by a rule, not by `required`. */
function specSchema(def: ResourceDefinition): Record<string, unknown> {
  const spec = toOpenAPI(def.spec);
  const filled = def.filledByAdmission ?? [];
  if (filled.length === 0) return spec;
  const fields = new Set(filled.map((f) => f.field));
  const validations = (spec["x-kubernetes-validations"] as unknown[] | undefined) ?? [];
  return {
    ...spec,
    required: ((spec.required as string[] | undefined) ?? []).filter((f) => !fields.has(f)),
    "x-kubernetes-validations": [...validations, ...filled.map((f) => f.rule)],
  };
}

function crd(def: ResourceDefinition): V1CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${def.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: [CATEGORY],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          ...(def.selectableFields
            ? { selectableFields: def.selectableFields.map((field) => ({ jsonPath: `.${field}` })) }
            : {}),
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: def.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: specSchema(def),
                status: toOpenAPI(def.status),
              },
              ...(def.rootValidations ? { "x-kubernetes-validations": def.rootValidations } : {}),
            },
          },
        },
      ],
    },
  };
}

export const customResourceDefinitions: V1CustomResourceDefinition[] = definitions.map(crd);

/** The YAML file for each CRD, keyed by file name. */
export function crdFiles(): Map<string, string> {
  const header = "# Generated by `npm run generate` from api/v1alpha1/. Do not edit.\n";
  return new Map(
    customResourceDefinitions.map((c) => [
      `${c.metadata?.name}.yaml`,
      header + stringify(c, { lineWidth: 0 }),
    ]),
  );
}

/** Where the generated CRDs are checked in (Helm installs files in a chart's crds/ first). */
export const CRD_DIR = new URL("../charts/userland/crds/", import.meta.url).pathname;
