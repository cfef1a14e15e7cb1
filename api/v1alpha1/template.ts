/**
 * Template: what container(s) a user gets. Admin-owned; every Userland that names it gets the same
 * environment. Field names follow koba1t/ESC's esc.k06.in/v1alpha2 Template (template, service,
 * volumes[].name/pvcSpec), so an ESC Template works after changing only its apiVersion.
 */
import type {
  V1PersistentVolumeClaimSpec,
  V1PodSpec,
  V1ResourceRequirements,
  V1ServiceSpec,
} from "@kubernetes/client-node";
import { DURATION_PATTERN } from "../duration.ts";
import type { CustomObject } from "./group.ts";
import {
  Conditions,
  Embedded,
  INT_OR_STRING,
  IntOrString,
  StringEnum,
  StringMap,
  Type,
  type Static,
} from "./schema.ts";

/** Template names become part of host names and Service names (DNS-1035 labels of 63 characters). */
export const TEMPLATE_NAME_PATTERN = "^[a-z]([-a-z0-9]{0,22}[a-z0-9])?$";
export const TEMPLATE_NAME_MAX = 24;

/**
 * Template annotation: `"allowed"` lets this Template's environments register service workers on
 * the shared origin (code-server's webviews use one). Read by the proxy, from its Template cache.
 */
export const SERVICE_WORKERS_ANNOTATION = "userland.dev/service-workers";

export const PodTemplateSpecSchema = Type.Object(
  {
    metadata: Type.Optional(
      Type.Object({
        labels: Type.Optional(StringMap()),
        annotations: Type.Optional(StringMap()),
      }),
    ),
    spec: Embedded<V1PodSpec>({
      description:
        "A Pod spec (core/v1 PodSpec); validated in full by the operator with a server-side dry run.",
      required: ["containers"],
      properties: {
        containers: {
          type: "array",
          minItems: 1,
          items: {
            type: "object",
            required: ["name"],
            "x-kubernetes-preserve-unknown-fields": true,
            properties: { name: { type: "string", minLength: 1 }, image: { type: "string" } },
          },
        },
      },
    }),
  },
  { description: "The pod every user of this Template gets (core/v1 PodTemplateSpec)." },
);

/** Whether a claim outlives its owner: Retain (the default) keeps the data, Delete removes it. */
const reclaimPolicy = (description: string) =>
  Type.Optional(StringEnum(["Retain", "Delete"], { default: "Retain", description }));

export const TemplateVolumeSchema = Type.Object({
  name: Type.String({
    description:
      "Volume name; containers mount it with volumeMounts[].name. One PersistentVolumeClaim per user.",
    pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    maxLength: 63,
  }),
  pvcSpec: Embedded<V1PersistentVolumeClaimSpec>({
    description: "The claim made for each user (core/v1 PersistentVolumeClaimSpec).",
  }),
  reclaimPolicy: reclaimPolicy(
    "What happens to a user's claim when their Userland is deleted: Retain keeps the data (default), Delete removes it. Disabling or switching templates never deletes data.",
  ),
});

/** An absolute path without `..` components: where a container mounts a volume. */
const MOUNT_PATH = {
  type: "string",
  minLength: 2,
  maxLength: 1024,
  pattern: "^/",
  "x-kubernetes-validations": [
    {
      rule: "!self.matches('(^|/)[.][.](/|$)')",
      message: "a mount path must not contain '..' components",
    },
  ],
};

/**
 * Course folder names become claim names (`<template>-course-<folder>`, api/naming.ts) and pod
 * volume names (`course-<folder>`, a DNS label of at most 63). A name containing `pvc-` could
 * equal a student's claim name (`<template>-<userland>-pvc-<volume>` for a Userland named
 * `course…`), so it is refused.
 */
export const COURSE_FOLDER_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$";

export const CourseFolderSchema = Type.Object(
  {
    name: Type.String({
      description:
        "The folder's name (a DNS label, at most 40 characters, without 'pvc-'); its claim is <template>-course-<name>.",
      pattern: COURSE_FOLDER_NAME_PATTERN,
      maxLength: 40,
    }),
    mountPath: Type.Unsafe<string>({
      ...MOUNT_PATH,
      description:
        "Where every container of every environment of this Template sees the folder: read-only for students, read-write for the Template's teachers.",
    }),
    teachersOnly: Type.Optional(
      Type.Boolean({
        description:
          "Mounted in teachers' environments only (read-write); students' environments never mount it. For autograders' hidden tests and reference solutions (an Assignment's spec.autograder must be in such a folder).",
      }),
    ),
    pvcSpec: Embedded<V1PersistentVolumeClaimSpec>({
      description:
        "The one claim of this folder, shared by every environment of the Template (core/v1 PersistentVolumeClaimSpec). ReadWriteMany where the cluster has it; with ReadWriteOnce every pod of the Template must run on one node (docs/decisions/0011-coursework.md).",
    }),
    reclaimPolicy: reclaimPolicy(
      "What happens to the folder's claim when the Template is deleted: Retain keeps the materials (default; a Template made again with the same name mounts them again), Delete removes them. Removing the folder from the Template never deletes it.",
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "!self.name.matches('(^|-)pvc-')",
        fieldPath: ".name",
        message:
          "a course folder's name must not contain 'pvc-': its claim name could equal a student's claim name",
      },
    ],
  },
);

export const CourseworkSchema = Type.Object(
  {
    home: Type.Optional(
      Type.Object(
        {
          volume: Type.String({
            description:
              "The spec.volumes entry holding a student's work: assignments are handed out into its assignments/<name>/ and collected from there.",
            pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
            maxLength: 63,
          }),
          mountPath: Type.Unsafe<string>({
            ...MOUNT_PATH,
            description:
              "Where the main container mounts that volume (shown to students: assignments are in <mountPath>/assignments/).",
          }),
        },
        { description: "Where a student's own work lives." },
      ),
    ),
    collection: Type.Optional(
      Type.Object(
        {
          pvcSpec: Embedded<V1PersistentVolumeClaimSpec>({
            description:
              "The claim holding what the platform keeps of this Template's assignments, <template>-collection (core/v1 PersistentVolumeClaimSpec): published snapshots, hand-ins and teachers' feedback. No student's environment mounts it. Kept when the Template is deleted: collected work outlives students' Userlands and volumes.",
          }),
          mountPath: Type.Unsafe<string>({
            ...MOUNT_PATH,
            description:
              "Where teachers' environments see it: <mountPath>/handins and <mountPath>/grades (the autograder's results per run) read-only, <mountPath>/feedback read-write (feedback/<assignment>/<user>/ is handed back to that student).",
          }),
        },
        {
          description:
            "Where assignments are kept (docs/decisions/0011-coursework.md). Required for Assignments of this Template.",
        },
      ),
    ),
    folders: Type.Optional(
      Type.Array(CourseFolderSchema, {
        maxItems: 8,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-validations": [
          {
            rule: "self.all(f, self.exists_one(g, g.mountPath == f.mountPath))",
            message: "two course folders cannot share a mountPath",
          },
        ],
      }),
    ),
  },
  {
    description:
      "Course folders and where students' work lives (docs/decisions/0011-coursework.md). Teachers of this Template are those RBAC allows `update` on templates/coursework of it.",
  },
);

/** Rules on the whole spec: coursework fields that name other spec fields. */
const courseworkValidations = [
  {
    rule: "!has(self.coursework) || !has(self.coursework.home) || (has(self.volumes) && self.volumes.exists(v, v.name == self.coursework.home.volume))",
    fieldPath: ".coursework.home.volume",
    message: "spec.coursework.home.volume must name an entry of spec.volumes",
  },
];

/** How students reach environments: only through the proxy, which signs them in first. */
const PROXY_ONLY = "students reach environments only through the proxy";

/**
 * Service fields that would give each student's environment an address outside the proxy (and its
 * authentication), or that only such Services use. Each is refused at admission with its own
 * message; the operator drops them too (operator/desired.ts), for Templates stored before this rule.
 */
export const SERVICE_EXTERNAL_FIELDS = [
  "externalIPs",
  "loadBalancerIP",
  "loadBalancerSourceRanges",
  "loadBalancerClass",
  "externalName",
  "externalTrafficPolicy",
  "healthCheckNodePort",
  "allocateLoadBalancerNodePorts",
] as const;

const serviceValidations = [
  {
    rule: "!has(self.type) || self.type == 'ClusterIP'",
    fieldPath: ".type",
    message: `${PROXY_ONLY}: remove spec.service.type NodePort/LoadBalancer/ExternalName (only ClusterIP is allowed; the operator sets it)`,
  },
  ...SERVICE_EXTERNAL_FIELDS.map((field) => ({
    rule: `!has(self.${field})`,
    fieldPath: `.${field}`,
    message: `${PROXY_ONLY}: remove spec.service.${field} (it only applies to Services reachable from outside the cluster)`,
  })),
];

const stringList = { type: "array", items: { type: "string" } };

export const TemplateSpecSchema = Type.Object(
  {
    displayName: Type.Optional(
      Type.String({ maxLength: 100, description: "Shown to students on their home page and start pages." }),
    ),
    description: Type.Optional(
      Type.String({ maxLength: 2000, description: "Shown to students on their home page and start pages." }),
    ),
    template: PodTemplateSpecSchema,
    service: Type.Optional(
      Embedded<V1ServiceSpec>({
        description:
          "The per-user Service (core/v1 ServiceSpec); the operator sets its selector and type. Always ClusterIP: type NodePort, LoadBalancer or ExternalName, externalIPs and the load-balancer fields are refused, so students reach environments only through the proxy.",
        "x-kubernetes-validations": serviceValidations,
        properties: {
          // Declared so the rules above can see them (CEL cannot read preserved unknown fields).
          type: { type: "string" },
          externalIPs: stringList,
          loadBalancerIP: { type: "string" },
          loadBalancerSourceRanges: stringList,
          loadBalancerClass: { type: "string" },
          externalName: { type: "string" },
          externalTrafficPolicy: { type: "string" },
          healthCheckNodePort: { type: "integer", format: "int32" },
          allocateLoadBalancerNodePorts: { type: "boolean" },
          ports: {
            type: "array",
            minItems: 1,
            items: {
              type: "object",
              required: ["port"],
              "x-kubernetes-preserve-unknown-fields": true,
              properties: {
                name: { type: "string" },
                port: { type: "integer", minimum: 1, maximum: 65535 },
                targetPort: INT_OR_STRING,
              },
            },
          },
        },
      }),
    ),
    proxyPort: Type.Optional(
      IntOrString({
        description: "The Service port (number or name) the proxy sends users to. Default: the first port.",
      }),
    ),
    volumes: Type.Optional(
      Type.Array(TemplateVolumeSchema, {
        maxItems: 16,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
      }),
    ),
    idleTimeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'Stop a Userland after this long without traffic ("30m", "2h"). Unset: never.',
      }),
    ),
    selfService: Type.Optional(
      Type.Boolean({
        description:
          "Any signed-in student who has no environment of this Template may create one from their home page (the proxy asks the user-manager). false (default): only teachers and admins assign it.",
      }),
    ),
    defaultResources: Type.Optional(
      Embedded<V1ResourceRequirements>({
        description: "Requests and limits for containers that set none (core/v1 ResourceRequirements).",
      }),
    ),
    coursework: Type.Optional(CourseworkSchema),
  },
  { "x-kubernetes-validations": courseworkValidations },
);

/** The condition types a Template's status carries. */
export const TemplateConditions = {
  /** The pod template passed the API server's own validation (a server-side dry run). */
  PodTemplateValid: "PodTemplateValid",
  /**
   * With several namespaces served: False while an older Template of the same name exists in
   * another one (that one serves the name: docs/decisions/0010-namespaces.md). Absent until a
   * duplicate is first seen.
   */
  NameServed: "NameServed",
  /**
   * With spec.coursework.folders: True when every folder's claim exists and is this Template's;
   * False names the claim whose name another object holds. Absent without course folders.
   */
  CourseFoldersReady: "CourseFoldersReady",
} as const;

export const TemplateStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  conditions: Type.Optional(Conditions),
  userlands: Type.Optional(
    Type.Integer({ minimum: 0, description: "How many Userlands use this Template." }),
  ),
});

export type TemplateSpec = Static<typeof TemplateSpecSchema>;
export type TemplateStatus = Static<typeof TemplateStatusSchema>;

export type Template = CustomObject<"Template", TemplateSpec, TemplateStatus>;
