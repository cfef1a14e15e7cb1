/**
 * The Userland sync handler: make a Userland's Deployment, Service and PVCs match its Template,
 * remove what a template switch left behind, and report the result in status. Level-triggered:
 * it reads the current state from the caches every time and writes only what differs.
 */
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import {
  TemplateConditions,
  UserlandConditions,
  type Template,
  type Userland,
  type UserlandStatus,
} from "../api/v1alpha1/index.ts";
import { ANNOTATIONS, LABELS } from "../api/naming.ts";
import { namespacedKey } from "../lib/informer.ts";
import { isAlreadyExists, isInvalid, isNotFound } from "../lib/kube.ts";
import { Index } from "./caches.ts";
import { isSubset, stableJson } from "./compare.ts";
import { findCondition } from "./conditions.ts";
import type { OperatorContext } from "./context.ts";
import { desiredChildren, TemplateError, type DesiredChildren } from "./desired.ts";
import { userlandRef } from "./events.ts";
import { resources } from "./resources.ts";
import { computeStatus, phaseChangeEvent, type Blocker } from "./userlandStatus.ts";

type Child = V1Deployment | V1Service | V1PersistentVolumeClaim;
type ChildKind = "Deployment" | "Service" | "PersistentVolumeClaim";

const childPath = (kind: ChildKind, namespace: string, name?: string) =>
  resources[kind].path(namespace, name);

/** Thrown to stop a sync at a Blocker: reported in status, not retried. */
class Blocked extends Error implements Blocker {
  readonly reason: string;
  readonly condition: string;
  constructor(condition: string, reason: string, message: string) {
    super(message);
    this.condition = condition;
    this.reason = reason;
  }
}

export async function syncUserland(ctx: OperatorContext, namespace: string, name: string): Promise<void> {
  const userland = ctx.caches.userlands.get(name, namespace);
  // Deleted: the garbage collector removes the children that have an owner reference.
  if (!userland || userland.metadata.deletionTimestamp) return;

  const template = ctx.caches.templates.get(userland.spec.templateName, namespace);
  let desired: DesiredChildren | undefined;
  let deployment: V1Deployment | undefined;
  let blocked: Blocked | undefined;
  try {
    desired = resolveDesired(userland, template);
    await ensurePvcs(ctx, userland, desired);
    deployment = await ensureChild(
      ctx,
      userland,
      "Deployment",
      desired.deployment,
      ctx.caches.deployments.get(desired.names.deployment, namespace),
    );
    await ensureChild(
      ctx,
      userland,
      "Service",
      desired.service,
      ctx.caches.services.get(desired.names.service, namespace),
    );
    await removeStaleChildren(ctx, userland, desired);
  } catch (error) {
    if (!(error instanceof Blocked)) throw error;
    blocked = error;
  }
  const status = computeStatus(userland, { template, desired, deployment, blocked }, ctx.now());
  const event = phaseChangeEvent(userland.status, status);
  if (event) ctx.events[event.type](userlandRef(userland), event.reason, event.message);
  await writeStatus(ctx, userland, status);
}

function resolveDesired(userland: Userland, template: Template | undefined): DesiredChildren {
  const templateName = userland.spec.templateName;
  if (!template) {
    throw new Blocked(
      UserlandConditions.TemplateAvailable,
      "TemplateNotFound",
      `Template "${templateName}" does not exist in namespace ${userland.metadata.namespace}`,
    );
  }
  const valid = findCondition(template.status?.conditions, TemplateConditions.PodTemplateValid);
  if (valid?.status === "False" && template.status?.observedGeneration === template.metadata.generation) {
    throw new Blocked(
      UserlandConditions.TemplateAvailable,
      "TemplateInvalid",
      `Template "${templateName}" is invalid: ${valid.message}`,
    );
  }
  try {
    return desiredChildren(userland, template);
  } catch (error) {
    if (error instanceof TemplateError) {
      throw new Blocked(
        UserlandConditions.TemplateAvailable,
        "TemplateInvalid",
        `Template "${templateName}" is invalid: ${error.message}`,
      );
    }
    throw error;
  }
}

function isControlledBy(object: Child, userland: Userland): boolean {
  return (object.metadata?.ownerReferences ?? []).some(
    (r) => r.controller && r.uid === userland.metadata.uid,
  );
}

/** Claims are created once and never rewritten (their spec is immutable); only ownership follows the reclaim policy. */
async function ensurePvcs(ctx: OperatorContext, userland: Userland, desired: DesiredChildren): Promise<void> {
  const namespace = userland.metadata.namespace ?? "";
  for (const pvc of desired.pvcs) {
    const name = pvc.metadata?.name ?? "";
    const actual = ctx.caches.pvcs.get(name, namespace);
    if (!actual) {
      await create(ctx, userland, "PersistentVolumeClaim", pvc);
      continue;
    }
    const wantedUser = pvc.metadata?.labels?.[LABELS.userHash];
    if (actual.metadata?.labels?.[LABELS.userHash] !== wantedUser) {
      throw new Blocked(
        UserlandConditions.Ready,
        "VolumeBelongsToAnotherUser",
        `PersistentVolumeClaim ${name} holds another user's data; delete or rename it to give this Userland a new volume`,
      );
    }
    const wantedOwners = pvc.metadata?.ownerReferences ?? [];
    const owned = isControlledBy(actual, userland);
    if (owned !== wantedOwners.length > 0) {
      const ownerReferences =
        wantedOwners.length > 0
          ? [...(actual.metadata?.ownerReferences ?? []).filter((r) => !r.controller), ...wantedOwners]
          : (actual.metadata?.ownerReferences ?? []).filter((r) => r.uid !== userland.metadata.uid);
      await ctx.rest.patch(childPath("PersistentVolumeClaim", namespace, name), {
        metadata: { ownerReferences, resourceVersion: actual.metadata?.resourceVersion },
      });
      ctx.events.normal(
        userlandRef(userland),
        "VolumeRetention",
        `PersistentVolumeClaim ${name} is now ${wantedOwners.length > 0 ? "deleted" : "kept"} with the Userland`,
      );
    }
  }
}

async function ensureChild<T extends Child>(
  ctx: OperatorContext,
  userland: Userland,
  kind: ChildKind,
  desired: T,
  actual: T | undefined,
): Promise<T> {
  // Not in the cache: create it. A 409 hands back the existing object, e.g. one whose labels were
  // edited out of the label-selected watch; it is then compared and repaired like any other.
  actual ??= await create(ctx, userland, kind, desired);
  if (!isControlledBy(actual, userland)) {
    throw new Blocked(
      UserlandConditions.Ready,
      "NameConflict",
      `${kind} ${actual.metadata?.name} already exists and does not belong to this Userland`,
    );
  }
  const hash = desired.metadata?.annotations?.[ANNOTATIONS.desiredHash];
  const inSync =
    actual.metadata?.annotations?.[ANNOTATIONS.desiredHash] === hash &&
    isSubset(desired.metadata, actual.metadata) &&
    isSubset(desired.spec, actual.spec);
  if (inSync) return actual;

  // Never mutate the cached object: build the update from a copy.
  const updated = structuredClone(actual) as T & { spec: Record<string, unknown> };
  const metadata = updated.metadata ?? {};
  metadata.labels = { ...metadata.labels, ...desired.metadata?.labels };
  metadata.annotations = { ...metadata.annotations, ...desired.metadata?.annotations };
  metadata.ownerReferences = desired.metadata?.ownerReferences;
  const spec = structuredClone(desired.spec) as Record<string, unknown>;
  if (kind === "Service") {
    // Allocated by the API server and immutable.
    for (const field of ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"]) {
      if (updated.spec[field] !== undefined && spec[field] === undefined) spec[field] = updated.spec[field];
    }
  }
  updated.spec = spec;
  const name = metadata.name ?? "";
  const result = await ctx.rest.replace<T>(childPath(kind, metadata.namespace ?? "", name), updated);
  ctx.events.normal(userlandRef(userland), "Updated", `Updated ${kind} ${name}`);
  return result;
}

async function create<T extends Child>(
  ctx: OperatorContext,
  userland: Userland,
  kind: ChildKind,
  desired: T,
): Promise<T> {
  const name = desired.metadata?.name ?? "";
  const namespace = desired.metadata?.namespace ?? "";
  try {
    const created = await ctx.rest.create<T>(childPath(kind, namespace), desired);
    ctx.events.normal(userlandRef(userland), "Created", `Created ${kind} ${name}`);
    return created;
  } catch (error) {
    if (isAlreadyExists(error)) {
      // The cache has not seen it yet, or someone else's object has this name.
      const existing = await ctx.rest.get<T>(childPath(kind, namespace, name));
      if (kind === "PersistentVolumeClaim" || isControlledBy(existing, userland)) return existing;
      throw new Blocked(
        UserlandConditions.Ready,
        "NameConflict",
        `${kind} ${name} already exists and does not belong to this Userland`,
      );
    }
    if (isInvalid(error)) {
      // Children come only from the Template, so their refusal is the Template's fault. It can
      // arrive before the Template's own dry-run check has written PodTemplateValid=False.
      throw new Blocked(
        UserlandConditions.TemplateAvailable,
        "TemplateInvalid",
        `Template "${userland.spec.templateName}" is invalid: the API server rejected the ${kind}: ${(error as Error).message}`,
      );
    }
    throw error;
  }
}

/** After a template switch: delete the old Deployment and Service (never a claim: data is kept). */
async function removeStaleChildren(
  ctx: OperatorContext,
  userland: Userland,
  desired: DesiredChildren,
): Promise<void> {
  const namespace = userland.metadata.namespace ?? "";
  const name = userland.metadata.name ?? "";
  const owner = namespacedKey(namespace, name);
  const stale: [ChildKind, Child][] = [
    ...ctx.caches.deployments
      .byIndex(Index.byUserland, owner)
      .filter((d) => d.metadata?.name !== desired.names.deployment)
      .map((d): [ChildKind, Child] => ["Deployment", d]),
    ...ctx.caches.services
      .byIndex(Index.byUserland, owner)
      .filter((s) => s.metadata?.name !== desired.names.service)
      .map((s): [ChildKind, Child] => ["Service", s]),
  ].filter(([, object]) => isControlledBy(object, userland));
  // The previous Template's children, named after the Service in status (the Template of the last
  // sync): one whose labels were edited out of the label-selected watch is not in the cache, but
  // must go all the same. Read from the API only while a switch is in progress.
  const previousService = userland.status?.service?.name;
  if (previousService && previousService !== desired.names.service && previousService.endsWith("-svc")) {
    const previous: [ChildKind, string][] = [
      ["Deployment", previousService.slice(0, -"-svc".length)],
      ["Service", previousService],
    ];
    for (const [kind, childName] of previous) {
      if (stale.some(([k, o]) => k === kind && o.metadata?.name === childName)) continue;
      const object = await ctx.rest
        .get<Child>(childPath(kind, namespace, childName))
        .catch((error: unknown) => {
          if (isNotFound(error)) return undefined;
          throw error;
        });
      if (object && isControlledBy(object, userland)) stale.push([kind, object]);
    }
  }
  for (const [kind, object] of stale) {
    const childName = object.metadata?.name ?? "";
    try {
      await ctx.rest.delete(childPath(kind, namespace, childName), { propagationPolicy: "Background" });
      ctx.events.normal(
        userlandRef(userland),
        "Deleted",
        `Deleted ${kind} ${childName} of the previous Template`,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

async function writeStatus(ctx: OperatorContext, userland: Userland, status: UserlandStatus): Promise<void> {
  if (stableJson(userland.status ?? {}) === stableJson(status)) return;
  await ctx.rest.patch(
    resources.Userland.path(userland.metadata.namespace ?? "", userland.metadata.name ?? "", "status"),
    { status },
  );
}
