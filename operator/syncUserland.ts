/**
 * The Userland sync handler: make a Userland's Deployment, Service and PVCs match its Template,
 * remove what a template switch left behind, and report the result in status. Level-triggered:
 * it reads the current state from the caches every time and writes only what differs.
 */
import { closedExamOf } from "./exams/podLabel.ts";
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import {
  TemplateConditions,
  UserlandConditions,
  type Template,
  type Userland,
} from "../api/v1alpha1/index.ts";
import { ANNOTATIONS, deploymentOfService, LABELS } from "../api/naming.ts";
import { namespacedKey } from "../lib/informer.ts";
import { isAlreadyExists, isInvalid, isNotFound } from "../lib/kubeRest.ts";
import { Index } from "./caches.ts";
import { isSubset } from "./compare.ts";
import { findCondition } from "./conditions.ts";
import type { OperatorContext } from "./context.ts";
import { hasCourseFolders } from "./courseFolders.ts";
import { desiredChildren, TemplateError, type DesiredChildren, type DesiredInputs } from "./desired.ts";
import { userlandRef } from "../lib/events.ts";
import { escPredecessor, isControlledBy } from "./ownership.ts";
import { resources } from "./resources.ts";
import { serviceRoutes } from "./serviceRoutes.ts";
import { diagnoseStart, type ClaimState, type Diagnosis } from "./startDiagnosis.ts";
import { computeStatus, firstStatusDelayMs, stallOf, statusEvents, type Blocker } from "./userlandStatus.ts";
import { writeStatus } from "./statusWrite.ts";

type Child = V1Deployment | V1Service | V1PersistentVolumeClaim;
type ChildKind = "Deployment" | "Service" | "PersistentVolumeClaim";

const childPath = (kind: ChildKind, namespace: string, name?: string) =>
  resources[kind].path(namespace, name);

/**
 * Thrown to stop a sync at a Blocker: reported in status. A Template's problem is not retried (the
 * Template's own events re-queue its Userlands); an object in the way (`heldByObject`) is, because
 * a foreign object is outside the label-selected caches and its removal sends no event.
 */
class Blocked extends Error implements Blocker {
  readonly reason: string;
  readonly condition: string;
  readonly heldByObject: boolean;
  constructor(condition: string, reason: string, message: string, heldByObject = false) {
    super(message);
    this.condition = condition;
    this.reason = reason;
    this.heldByObject = heldByObject;
  }
}

/** An object that is not provably this Userland's holds a child's name. */
const nameHeld = (reason: string, message: string) =>
  new Blocked(UserlandConditions.Ready, reason, message, true);

export interface UserlandSyncResult {
  /** Blocked by an object that holds a child's name: sync again with back-off until it is gone. */
  retry: boolean;
  /** A new Userland's first status is held back (firstStatusDelayMs): sync again after this long. */
  againAfterMs?: number;
}

/**
 * The children one sync created, named in one Event ("Created Deployment x and Service y"): one
 * Event per new Userland rather than one per object.
 */
type Created = string[];

/** One child in one sync: what creating, repairing or replacing it works on. */
interface ChildSync<T extends Child> {
  ctx: OperatorContext;
  userland: Userland;
  kind: ChildKind;
  desired: T;
  created: Created;
}

const listing = new Intl.ListFormat("en", { style: "long", type: "conjunction" });
/** Kinds in the order an Event names them: the Deployment and Service are created at once. */
const KIND_ORDER = ["PersistentVolumeClaim", "Deployment", "Service"];
const kindRank = (entry: string) => KIND_ORDER.indexOf(entry.split(" ", 1)[0] ?? "");

export async function syncUserland(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<UserlandSyncResult> {
  const userland = ctx.caches.userlands.get(name, namespace);
  // Deleted: the garbage collector removes the children that have an owner reference.
  if (!userland || userland.metadata.deletionTimestamp) return { retry: false };

  const template = ctx.caches.templates.get(userland.spec.templateName, namespace);
  // Course folders are mounted by claim name: not before the Template's sync has found the claims
  // to be its own. Wait, with no status written, until its condition appears (that Template
  // update re-queues this Userland).
  if (courseFoldersUnchecked(template)) return { retry: false };
  let desired: DesiredChildren | undefined;
  let deployment: V1Deployment | undefined;
  let blocked: Blocked | undefined;
  const created: Created = [];
  try {
    desired = resolveDesired(userland, template, {
      teacher: await isTeacher(ctx, userland, template),
      exam: closedExamOf(ctx, userland),
    });
    await ensurePvcs(ctx, userland, desired, created);
    // The Deployment and the Service do not depend on each other: both requests at once halve
    // the time a new Userland waits for its children.
    [deployment] = await allSettled([
      ensureChild(
        { ctx, userland, kind: "Deployment", desired: desired.deployment, created },
        ctx.caches.deployments.get(desired.names.deployment, namespace),
      ),
      ensureChild(
        { ctx, userland, kind: "Service", desired: desired.service, created },
        ctx.caches.services.get(desired.names.service, namespace),
      ),
    ]);
    await removeStaleChildren(ctx, userland, desired);
  } catch (error) {
    if (!(error instanceof Blocked)) throw error;
    blocked = error;
  } finally {
    if (created.length > 0)
      ctx.events.normal(
        userlandRef(userland),
        "Created",
        `Created ${listing.format(created.sort((a, b) => kindRank(a) - kindRank(b)))}`,
      );
  }
  const now = ctx.now();
  const routable =
    desired !== undefined &&
    serviceRoutes(
      desired.service,
      desired.proxyPort,
      ctx.caches.endpointSlices.byIndex(Index.byService, namespacedKey(namespace, desired.names.service)),
    );
  const { diagnosis, recheckAfterMs } =
    desired && deployment && !blocked && userland.spec.enabled !== false
      ? await observeStart(ctx, userland, desired, routable, now)
      : { diagnosis: undefined, recheckAfterMs: undefined };
  const status = computeStatus(
    userland,
    { template, desired, deployment, routable, diagnosis, blocked },
    now,
  );
  const holdBackMs = firstStatusDelayMs(userland, status, deployment, now);
  if (holdBackMs === 0) {
    const key = namespacedKey(namespace, name);
    const last = ctx.computed.get(key);
    for (const event of statusEvents(userland.status, status, last && stallOf(last)))
      ctx.events[event.type](userlandRef(userland), event.reason, event.message);
    ctx.computed.set(key, status);
    await writeStatus(ctx.rest, resources.Userland.path(namespace, name, "status"), userland.status, status);
  }
  const spawned = ctx.spawns.observe(userland, userland.status?.phase, status.phase, now.getTime());
  if (spawned) ctx.metrics.spawnDuration.observe({ template: spawned.template }, spawned.seconds);
  return {
    retry: blocked?.heldByObject === true,
    againAfterMs: againAfter(holdBackMs, recheckAfterMs, userland, template, ctx.teachers.ttlMs),
  };
}

const courseFoldersUnchecked = (template: Template | undefined): boolean =>
  hasCourseFolders(template) &&
  !findCondition(template?.status?.conditions, TemplateConditions.CourseFoldersReady);

/** Whether the Userland's person teaches its Template; asked only of Templates with course folders. */
async function isTeacher(ctx: OperatorContext, userland: Userland, template: Template | undefined) {
  if (!template || !hasCourseFolders(template)) return false;
  return ctx.teachers.isTeacher(
    userland.metadata.namespace ?? "",
    template.metadata.name ?? "",
    userland.spec.user,
  );
}

/**
 * When to sync again without an event: a held-back first status, a start problem that time alone
 * can reveal (`startRecheckMs`, observeStart), and for a running environment with course folders, when RBAC's answer on its person expires (a RoleBinding's change sends the
 * operator no event; a changed answer changes the mounts and rolls the Deployment). A stopped one
 * is asked again when it starts.
 */
function againAfter(
  holdBackMs: number,
  startRecheckMs: number | undefined,
  userland: Userland,
  template: Template | undefined,
  teacherTtlMs: number,
): number | undefined {
  const recheck = userland.spec.enabled !== false && hasCourseFolders(template) ? teacherTtlMs : 0;
  const delays = [holdBackMs, startRecheckMs ?? 0, recheck].filter((ms) => ms > 0);
  return delays.length > 0 ? Math.min(...delays) : undefined;
}

/**
 * The start's progress and problems, from the cached pods and claims; a claim Pending for a while
 * also gets its Warning Events looked up (claimEvents.ts). `recheckAfterMs`: a problem that time
 * alone can reveal (a readiness check failing, a claim's provisioning) is looked at again then.
 */
async function observeStart(
  ctx: OperatorContext,
  userland: Userland,
  desired: DesiredChildren,
  routable: boolean,
  now: Date,
): Promise<{ diagnosis: Diagnosis; recheckAfterMs: number | undefined }> {
  const namespace = userland.metadata.namespace ?? "";
  const claims: ClaimState[] = [];
  const rechecks: number[] = [];
  for (const pvc of desired.pvcs) {
    const claim = ctx.caches.pvcs.get(pvc.metadata?.name ?? "", namespace);
    const lookup = await ctx.claimEvents.lookup(claim, now.getTime());
    if (lookup.recheckAfterMs !== undefined) rechecks.push(lookup.recheckAfterMs);
    claims.push({
      volume: pvc.metadata?.labels?.[LABELS.volume] ?? pvc.metadata?.name ?? "",
      claim,
      provisioningMessage: lookup.message,
    });
  }
  const diagnosis = diagnoseStart({
    pods: ctx.caches.pods.byIndex(Index.byInstance, namespacedKey(namespace, desired.names.deployment)),
    claims,
    routable,
    previous: userland.status?.progress,
    remembered: ctx.computed.get(namespacedKey(namespace, userland.metadata.name ?? ""))?.progress,
    now,
  });
  if (diagnosis.recheckAfterMs !== undefined) rechecks.push(diagnosis.recheckAfterMs);
  return { diagnosis, recheckAfterMs: rechecks.length > 0 ? Math.min(...rechecks) : undefined };
}

/** Like Promise.all, but settles only when every promise has: no request is still running when it rejects. */
async function allSettled<A, B>(promises: [Promise<A>, Promise<B>]): Promise<[A, B]> {
  const [a, b] = await Promise.allSettled(promises);
  if (a.status === "rejected") throw a.reason;
  if (b.status === "rejected") throw b.reason;
  return [a.value, b.value];
}

function resolveDesired(
  userland: Userland,
  template: Template | undefined,
  inputs: DesiredInputs,
): DesiredChildren {
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
  // Course folders are mounted by claim name: never while a claim of that name is someone else's.
  const folders = findCondition(template.status?.conditions, TemplateConditions.CourseFoldersReady);
  if (hasCourseFolders(template) && folders?.status === "False") {
    throw new Blocked(
      UserlandConditions.TemplateAvailable,
      "CourseFolderUnavailable",
      `Template "${templateName}": ${folders.message}`,
    );
  }
  try {
    return desiredChildren(userland, template, inputs);
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

/** Claims are created once and never rewritten (their spec is immutable); only ownership follows the reclaim policy. */
async function ensurePvcs(
  ctx: OperatorContext,
  userland: Userland,
  desired: DesiredChildren,
  created: Created,
): Promise<void> {
  const namespace = userland.metadata.namespace ?? "";
  for (const pvc of desired.pvcs) {
    const name = pvc.metadata?.name ?? "";
    // An unlabelled claim is outside the label-selected cache: creating it answers 409 with it.
    const cached = ctx.caches.pvcs.get(name, namespace);
    const actual =
      cached ?? (await create({ ctx, userland, kind: "PersistentVolumeClaim", desired: pvc, created }));
    const wantedUser = pvc.metadata?.labels?.[LABELS.userHash];
    const actualUser = actual.metadata?.labels?.[LABELS.userHash];
    if (actualUser === undefined) {
      await adoptPvc(ctx, userland, pvc, actual);
      continue;
    }
    if (actualUser !== wantedUser) {
      throw nameHeld(
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

/**
 * A claim without the user-hash label is taken over only when it is provably this Userland's
 * (operator/ownership.ts): labelled like a claim the operator made, owned as the reclaim policy
 * says (Retain: no owner, so an ESC Userland's deletion can no longer collect it), and an Event
 * says so. Anything else may be someone's data: the Userland is blocked, and the message says how
 * an admin who knows better hands it over.
 */
async function adoptPvc(
  ctx: OperatorContext,
  userland: Userland,
  desired: V1PersistentVolumeClaim,
  actual: V1PersistentVolumeClaim,
): Promise<void> {
  const name = actual.metadata?.name ?? "";
  const namespace = actual.metadata?.namespace ?? "";
  const esc = escPredecessor(actual, userland);
  if (!esc && !isControlledBy(actual, userland)) {
    const userHash = desired.metadata?.labels?.[LABELS.userHash] ?? "";
    throw nameHeld(
      "VolumeNameConflict",
      `PersistentVolumeClaim ${name} already exists and is not provably this Userland's (no ${LABELS.userHash} label, and not owned by this Userland or by the ESC Userland of this user); delete or rename it, or if it holds this user's data, label it: kubectl label pvc ${name} ${LABELS.userHash}=${userHash}`,
    );
  }
  const wantedOwners = desired.metadata?.ownerReferences ?? [];
  const ownerReferences = [
    ...(actual.metadata?.ownerReferences ?? []).filter((r) => !r.controller),
    ...wantedOwners,
  ];
  await ctx.rest.patch(childPath("PersistentVolumeClaim", namespace, name), {
    metadata: {
      labels: desired.metadata?.labels,
      annotations: desired.metadata?.annotations,
      ownerReferences,
      resourceVersion: actual.metadata?.resourceVersion,
    },
  });
  const from = esc ? ` from ESC Userland ${esc.name}` : "";
  const kept = wantedOwners.length > 0 ? "deleted with the Userland" : "kept when the Userland is deleted";
  ctx.events.normal(
    userlandRef(userland),
    "Adopted",
    `Adopted PersistentVolumeClaim ${name}${from}: it is this user's volume, ${kept}`,
  );
}

async function ensureChild<T extends Child>(child: ChildSync<T>, actual: T | undefined): Promise<T> {
  const { ctx, userland, kind, desired } = child;
  // Not in the cache: create it. A 409 hands back the existing object, e.g. one whose labels were
  // edited out of the label-selected watch; it is then compared and repaired like any other.
  actual ??= await create(child);
  if (!isControlledBy(actual, userland)) actual = await replaceEscChild(child, actual);
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

/**
 * An ESC Userland's Deployment or Service for the same user (operator/ownership.ts) holds no data
 * and its selector cannot be changed in place: it is deleted (that exact object) and made anew.
 * Anything else in the way blocks the Userland until it is gone.
 */
async function replaceEscChild<T extends Child>(child: ChildSync<T>, actual: T): Promise<T> {
  const { ctx, userland, kind } = child;
  const name = actual.metadata?.name ?? "";
  const conflict = () =>
    nameHeld("NameConflict", `${kind} ${name} already exists and does not belong to this Userland`);
  const esc = escPredecessor(actual, userland);
  if (!esc) throw conflict();
  try {
    await ctx.rest.delete(childPath(kind, actual.metadata?.namespace ?? "", name), {
      preconditions: { uid: actual.metadata?.uid },
      propagationPolicy: "Background",
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  ctx.events.normal(
    userlandRef(userland),
    "Replaced",
    `Replaced ${kind} ${name} of ESC Userland ${esc.name}`,
  );
  const made = await create(child);
  if (!isControlledBy(made, userland)) throw conflict();
  return made;
}

async function create<T extends Child>({ ctx, userland, kind, desired, created }: ChildSync<T>): Promise<T> {
  const name = desired.metadata?.name ?? "";
  const namespace = desired.metadata?.namespace ?? "";
  try {
    const made = await ctx.rest.create<T>(childPath(kind, namespace), desired);
    created.push(`${kind} ${name}`);
    return made;
  } catch (error) {
    if (isAlreadyExists(error)) {
      // The cache has not seen it yet, or someone else's object has this name: the caller checks
      // whose it is.
      return await ctx.rest.get<T>(childPath(kind, namespace, name));
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
  const previousDeployment =
    previousService && previousService !== desired.names.service
      ? deploymentOfService(previousService)
      : undefined;
  if (previousService && previousDeployment) {
    const previous: [ChildKind, string][] = [
      ["Deployment", previousDeployment],
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
