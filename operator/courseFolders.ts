/**
 * A Template's course folders (docs/decisions/0011-coursework.md): one claim per folder, kept when
 * the Template is deleted unless the folder says Delete, and their mounts in every environment of the Template —
 * read-only for students, read-write for the Template's teachers (operator/teachers.ts); a
 * `teachersOnly` folder is in teachers' environments alone.
 */
import type { V1PersistentVolumeClaim, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import { ANNOTATIONS, collectionNames, courseFolderNames, LABELS, MANAGED_BY } from "../api/naming.ts";
import { TemplateConditions, type Template } from "../api/v1alpha1/index.ts";
import { controllerReference } from "./ownership.ts";
import type { ConditionInput } from "./conditions.ts";
import type { OperatorContext } from "./context.ts";
import { templateRef } from "../lib/events.ts";
import { isAlreadyExists, isInvalid } from "../lib/kubeRest.ts";
import { resources } from "./resources.ts";

/**
 * Whether the Template has claims its environments mount by role: course folders, or the
 * collection (teachers see its hand-ins and feedback). Both wait for the Template's claim check and
 * ask RBAC who teaches.
 */
export const hasCourseFolders = (template: Template | undefined): boolean =>
  (template?.spec.coursework?.folders?.length ?? 0) > 0 ||
  template?.spec.coursework?.collection !== undefined;

/** The course-folder label value of the collection's claim: not a folder, so no folder's claim name matches it. */
export const COLLECTION_LABEL_VALUE = "collection";

/** Where teachers' environments see the collection (docs/decisions/0011-coursework.md). */
export const COLLECTION_SUBPATHS = { handins: "handins", feedback: "feedback", grades: "grades" } as const;

/**
 * The pod volumes and the container mounts of the folders (pure). Students get both
 * `persistentVolumeClaim.readOnly` and `volumeMount.readOnly`: the kubelet then mounts the volume
 * read-only for the whole pod, so no other mount of the same claim in the pod can write it.
 * `readOnly: false` is left out rather than written: the API server drops false, and a field it
 * drops would look changed on every comparison.
 */
export function courseFolderMounts(
  template: Template,
  teacher: boolean,
): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const templateName = template.metadata.name ?? "";
  const readOnly = teacher ? {} : { readOnly: true };
  // A teachers-only folder (hidden tests, solutions) is not in a student's pod at all.
  const folders = (template.spec.coursework?.folders ?? []).filter((f) => teacher || !f.teachersOnly);
  const collection = template.spec.coursework?.collection;
  // Teachers only: students never mount the collection (other students' hand-ins are on it).
  const teacherCollection = teacher && collection !== undefined;
  const names = collectionNames(templateName);
  return {
    volumes: [
      ...folders.map((f) => {
        const folder = courseFolderNames(templateName, f.name);
        return { name: folder.podVolume, persistentVolumeClaim: { claimName: folder.claim, ...readOnly } };
      }),
      ...(teacherCollection
        ? [{ name: names.podVolume, persistentVolumeClaim: { claimName: names.claim } }]
        : []),
    ],
    mounts: [
      ...folders.map((f) => ({
        name: courseFolderNames(templateName, f.name).podVolume,
        mountPath: f.mountPath,
        ...readOnly,
      })),
      // Hand-ins are evidence: read-only even for teachers. Feedback is theirs to write.
      ...(teacherCollection
        ? [
            {
              name: names.podVolume,
              mountPath: `${collection.mountPath.replace(/\/+$/, "")}/${COLLECTION_SUBPATHS.handins}`,
              subPath: COLLECTION_SUBPATHS.handins,
              readOnly: true,
            },
            {
              name: names.podVolume,
              mountPath: `${collection.mountPath.replace(/\/+$/, "")}/${COLLECTION_SUBPATHS.feedback}`,
              subPath: COLLECTION_SUBPATHS.feedback,
            },
            // The autograder's results and output per run (docs/decisions/0015-grading.md).
            {
              name: names.podVolume,
              mountPath: `${collection.mountPath.replace(/\/+$/, "")}/${COLLECTION_SUBPATHS.grades}`,
              subPath: COLLECTION_SUBPATHS.grades,
              readOnly: true,
            },
          ]
        : []),
    ],
  };
}

/**
 * The claims the Template's folders need (pure). A Retain folder's claim (the default) has no
 * owner, so deleting the Template keeps the materials; a Delete folder's is owned by the Template.
 */
export function desiredCourseClaims(template: Template): V1PersistentVolumeClaim[] {
  const templateName = template.metadata.name ?? "";
  const collection = template.spec.coursework?.collection;
  // The collection is always Retain: collected work outlives the Template, its Userlands and volumes.
  const collectionClaim: V1PersistentVolumeClaim[] = collection
    ? [
        {
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: {
            name: collectionNames(templateName).claim,
            namespace: template.metadata.namespace,
            labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.courseFolder]: COLLECTION_LABEL_VALUE },
            annotations: { [ANNOTATIONS.courseTemplate]: templateName },
          },
          spec: structuredClone(collection.pvcSpec),
        },
      ]
    : [];
  return [
    ...(template.spec.coursework?.folders ?? []).map((f) => ({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: {
        name: courseFolderNames(templateName, f.name).claim,
        namespace: template.metadata.namespace,
        // The managed-by label puts the claim in the operator's label-selected claim cache. No
        // userland.dev/template label: the admin guide deletes students' kept claims by it.
        labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.courseFolder]: f.name },
        annotations: { [ANNOTATIONS.courseTemplate]: templateName },
        // No blockOwnerDeletion: nothing needs the Template to wait for its claims, and setting it
        // would need rights on templates/finalizers.
        ...((f.reclaimPolicy ?? "Retain") === "Delete"
          ? {
              ownerReferences: [controllerReference("Template", template)],
            }
          : {}),
      },
      spec: structuredClone(f.pvcSpec),
    })),
    ...collectionClaim,
  ];
}

/**
 * Whether `actual` is the Template's claim for `desired`: made by the operator for this folder of
 * a Template of this name (a Retain claim kept from an earlier Template of the name is taken back),
 * and owned by no other object (a Delete claim of a deleted Template waits for the collector).
 */
function isCourseClaimOf(
  template: Template,
  desired: V1PersistentVolumeClaim,
  actual: V1PersistentVolumeClaim,
): boolean {
  const labels = actual.metadata?.labels ?? {};
  const owner = actual.metadata?.ownerReferences?.find((r) => r.controller);
  return (
    labels[LABELS.managedBy] === MANAGED_BY &&
    labels[LABELS.courseFolder] === desired.metadata?.labels?.[LABELS.courseFolder] &&
    actual.metadata?.annotations?.[ANNOTATIONS.courseTemplate] === template.metadata.name &&
    (owner === undefined || owner.uid === template.metadata.uid)
  );
}

/**
 * Creates the claims that are missing (never rewrites one: a claim's spec is immutable, and a
 * folder removed from the Template keeps its claim, and its data, until the Template is deleted)
 * and reports them as the CourseFoldersReady condition, or undefined without course folders.
 */
export async function ensureCourseFolders(
  ctx: OperatorContext,
  template: Template,
): Promise<ConditionInput | undefined> {
  const claims = desiredCourseClaims(template);
  if (claims.length === 0) return undefined;
  const namespace = template.metadata.namespace ?? "";
  const created: string[] = [];
  const held: string[] = [];
  const invalid: string[] = [];
  for (const claim of claims) {
    const name = claim.metadata?.name ?? "";
    let actual = ctx.caches.pvcs.get(name, namespace);
    if (!actual) {
      try {
        actual = await ctx.rest.create<V1PersistentVolumeClaim>(
          resources.PersistentVolumeClaim.path(namespace),
          claim,
        );
        created.push(name);
      } catch (error) {
        // The pvcSpec is refused: the Template's error (PodTemplateValid says so too).
        if (isInvalid(error)) {
          invalid.push(`${name}: ${(error as Error).message.replace(/^POST \S+: \d+ /, "")}`);
          continue;
        }
        // Not in the label-selected cache but there: someone else's claim (or ours, unlabelled).
        if (!isAlreadyExists(error)) throw error;
        actual = await ctx.rest.get<V1PersistentVolumeClaim>(
          resources.PersistentVolumeClaim.path(namespace, name),
        );
      }
    }
    if (!isCourseClaimOf(template, claim, actual)) held.push(name);
  }
  if (created.length > 0)
    ctx.events.normal(
      templateRef(template),
      "Created",
      `Created the course folder claim${created.length > 1 ? "s" : ""} ${created.join(", ")}`,
    );
  const generation = template.metadata.generation;
  const problem = (reason: string, message: string): ConditionInput => ({
    type: TemplateConditions.CourseFoldersReady,
    status: "False",
    reason,
    message,
    observedGeneration: generation,
  });
  if (invalid.length > 0)
    return problem("ClaimInvalid", `The API server refuses the claim ${invalid.join("; ")}`);
  if (held.length > 0)
    return problem(
      "ClaimNameTaken",
      `PersistentVolumeClaim ${held.join(", ")} already exists and is not this Template's: delete or rename it (until then no environment of this Template starts: it would mount someone else's claim)`,
    );
  return {
    type: TemplateConditions.CourseFoldersReady,
    status: "True",
    reason: "ClaimsExist",
    message: `Every course folder (and the collection) has its claim: ${claims.map((c) => c.metadata?.name).join(", ")}`,
    observedGeneration: generation,
  };
}
