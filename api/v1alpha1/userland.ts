/**
 * Userland: one user's environment. Just who (spec.user, the identity exactly as the auth service
 * reports it), which Template, and whether it should run.
 */
import type { CustomObject } from "./group.ts";
import { Conditions, StringEnum, Type, type Static } from "./schema.ts";
import { TEMPLATE_NAME_MAX, TEMPLATE_NAME_PATTERN } from "./template.ts";

/**
 * Userland names become part of Deployment and Service names, which allow no dots: DNS-1123 labels
 * (what the API server allows for object names, less the dots). The CRD refuses other names, so
 * everything that accepts a Userland name checks this pattern too.
 */
export const USERLAND_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/**
 * Identities are sent to environments in the X-User header, so they are printable ASCII without
 * surrounding spaces; anything else is refused rather than silently rewritten (rewriting could make
 * two identities equal).
 */
export const USER_PATTERN = "^[!-~]([ -~]*[!-~])?$";
export const USER_MAX = 256;

/**
 * Every stored Userland has spec.user, so the type says so. The CRD still lists it as optional and
 * requires it with this rule, evaluated after mutating admission: an ESC Userland (no user field,
 * its name is the user) gets its name as spec.user from the chart's MutatingAdmissionPolicy
 * (templates/userland-user-default.yaml), and clients that check objects against the published
 * schema (kubectl validates a `kind: List` itself) must leave that decision to the API server.
 */
export const USER_REQUIRED_RULE = {
  rule: "has(self.user)",
  message:
    "spec.user: Required value: the user's identity (a Userland without it gets its name as spec.user from the chart's MutatingAdmissionPolicy on Kubernetes 1.36+)",
};

export const UserlandSpecSchema = Type.Object({
  user: Type.String({
    minLength: 1,
    maxLength: USER_MAX,
    pattern: USER_PATTERN,
    description: "The user's identity exactly as the auth service reports it. Immutable.",
    "x-kubernetes-validations": [
      { rule: "self == oldSelf", message: "spec.user is immutable: create a new Userland for another user" },
    ],
  }),
  templateName: Type.String({
    pattern: TEMPLATE_NAME_PATTERN,
    maxLength: TEMPLATE_NAME_MAX,
    description:
      "The Template (same namespace) that defines this environment. Immutable: moving a student to another Template is a new Userland (a patch that may start and stop must not pick what runs).",
    "x-kubernetes-validations": [
      {
        rule: "self == oldSelf",
        message: "spec.templateName is immutable: create a new Userland for another Template",
      },
    ],
  }),
  enabled: Type.Optional(
    Type.Boolean({
      default: true,
      description: "false stops the environment and keeps its data (default true).",
    }),
  ),
});

export const UserlandPhases = ["Pending", "Starting", "Ready", "Stopped", "Failed"] as const;
export type UserlandPhase = (typeof UserlandPhases)[number];

/**
 * The steps of a start, in order: the pod is placed on a node, its volumes are bound, its
 * containers (images pulled) run, the app passes its readiness check, the Service routes to it.
 */
export const StartSteps = ["Scheduled", "VolumeBound", "ContainerStarted", "AppReady", "Reachable"] as const;
export type StartStep = (typeof StartSteps)[number];

export const StartProgressSchema = Type.Object(
  {
    since: Type.String({ format: "date-time", description: "When this start began (the pod was created)." }),
    steps: Type.Array(
      Type.Object({
        step: StringEnum([...StartSteps]),
        at: Type.String({ format: "date-time", description: "When the step was reached." }),
      }),
      {
        maxItems: 8,
        description: "The steps reached so far, in order; how long each took is the gap to the one before.",
      },
    ),
  },
  { description: "Where the current (or last) start of the environment is." },
);
export type StartProgress = Static<typeof StartProgressSchema>;

export const UserlandStatusSchema = Type.Object({
  phase: Type.Optional(StringEnum([...UserlandPhases])),
  message: Type.Optional(Type.String({ description: "A human-readable summary of the phase." })),
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  conditions: Type.Optional(Conditions),
  progress: Type.Optional(StartProgressSchema),
  service: Type.Optional(
    Type.Object(
      {
        name: Type.String(),
        port: Type.Integer({ minimum: 1, maximum: 65535 }),
      },
      { description: "Where the proxy reaches this environment: <name>.<namespace>.svc, port." },
    ),
  ),
});

export type UserlandSpec = Static<typeof UserlandSpecSchema>;
export type UserlandStatus = Static<typeof UserlandStatusSchema>;

export type Userland = CustomObject<"Userland", UserlandSpec, UserlandStatus>;

/** Userland condition types. */
export const UserlandConditions = {
  /**
   * The environment answers through its Service: its Deployment has an available, up-to-date
   * replica and the Service's EndpointSlice has a ready endpoint for the proxy's port.
   */
  Ready: "Ready",
  /** The Template exists and is valid. */
  TemplateAvailable: "TemplateAvailable",
  /**
   * True while a start cannot get further by itself: the reason names the cause (StartProblems)
   * and the message says it in words for teachers and students. False once it gets further.
   */
  Stalled: "Stalled",
} as const;

/** Reasons of the Ready condition that clients may act on. */
export const UserlandReasons = {
  Available: "Available",
  /** The pod is ready, but the Service's EndpointSlice has no ready endpoint for the proxy's port yet. */
  ServiceNotRouting: "ServiceNotRouting",
} as const;

/** Why a start is stalled: the reason of the Stalled condition (and of Ready while it lasts). */
export const StartProblems = {
  /** The image cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName). */
  ImagePullFailed: "ImagePullFailed",
  /** A container keeps exiting (CrashLoopBackOff, or a non-zero exit). */
  ContainerCrashing: "ContainerCrashing",
  /** A container cannot be created (a missing Secret or ConfigMap, a bad command). */
  ContainerCannotStart: "ContainerCannotStart",
  /** No node can take the pod (PodScheduled=False, Unschedulable). */
  Unschedulable: "Unschedulable",
  /** A volume's claim cannot be provisioned (its storage class, as the provisioner says). */
  VolumeProvisioningFailed: "VolumeProvisioningFailed",
  /** The containers run but the app has not passed its readiness check for a while. */
  ReadinessProbeFailing: "ReadinessProbeFailing",
} as const;
export type StartProblem = (typeof StartProblems)[keyof typeof StartProblems];

/**
 * The fields the API server can filter Userlands by (the CRD's `selectableFields`, Kubernetes 1.31+
 * by default): `?fieldSelector=spec.user=…,spec.templateName=…` finds one student's Userlands
 * without listing everyone's. Field selectors escape `\`, `,` and `=` in values, and an identity may
 * hold any of them, so selectors are built by userlandFieldSelector only.
 */
export const UserlandFields = { user: "spec.user", templateName: "spec.templateName" } as const;

/** Escapes a field selector value the way the API server unescapes it (k8s.io/apimachinery fields.EscapeValue). */
function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** `spec.user=<user>,spec.templateName=<template>` for the filters given, or undefined for none. */
export function userlandFieldSelector(filter: {
  user?: string | undefined;
  templateName?: string | undefined;
}): string | undefined {
  const terms: string[] = [];
  if (filter.user !== undefined) terms.push(`${UserlandFields.user}=${escapeFieldValue(filter.user)}`);
  if (filter.templateName !== undefined)
    terms.push(`${UserlandFields.templateName}=${escapeFieldValue(filter.templateName)}`);
  return terms.length > 0 ? terms.join(",") : undefined;
}

/** Annotations on a Userland. */
export const UserlandAnnotations = {
  /** RFC 3339 time of the last proxied request or WebSocket message, written by the proxy in batches. */
  lastActivity: "userland.dev/last-activity",
  /** Why the Userland was last stopped by the platform (e.g. "IdleTimeout"), written by the operator. */
  stoppedReason: "userland.dev/stopped-reason",
  /** Who created the Userland through the user-manager (a Kubernetes user name), for audits. */
  createdBy: "userland.dev/created-by",
  /** Teachers' visits of the last 30 days (JSON, at most 50; api/visits.ts), written by the user-manager. */
  visits: "userland.dev/visits",
  /** Visits waiting for (or given) the student's Allow (JSON, api/visits.ts), written by the user-manager. */
  visitRequests: "userland.dev/visit-requests",
} as const;

/**
 * The value of the last-activity annotation: RFC 3339 in whole seconds, like Kubernetes' own
 * timestamps, whoever writes it (the proxy on traffic, the user-manager on Start).
 */
export function activityStamp(at: Date | number): string {
  const ms = typeof at === "number" ? at : at.getTime();
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
}
