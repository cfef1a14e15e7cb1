/**
 * The Template sync handler: validate the pod template with the API server's own rules (a
 * server-side dry run of the Deployment and Service a user would get) once per generation, keep
 * its course folders' claims (operator/courseFolders.ts), and count the Userlands that use it.
 */
import {
  API_VERSION,
  TemplateConditions,
  type Template,
  type TemplateStatus,
  type Userland,
} from "../api/v1alpha1/index.ts";
import { namespacedKey } from "../lib/informer.ts";
import { oldest } from "../lib/namespaces.ts";
import { isAlreadyExists, isInvalid } from "../lib/kubeRest.ts";
import { Index } from "./caches.ts";
import { findCondition, setCondition, type ConditionValue } from "./conditions.ts";
import type { OperatorContext } from "./context.ts";
import { desiredCourseClaims, ensureCourseFolders } from "./courseFolders.ts";
import { desiredChildren, TemplateError } from "./desired.ts";
import { templateRef } from "../lib/events.ts";
import { resources } from "./resources.ts";
import { writeStatus } from "./statusWrite.ts";

export interface TemplateSyncResult {
  /**
   * A course folder's claim name is held by someone else's claim: sync again with back-off until
   * it is gone (it is outside the label-selected caches: its removal sends no event).
   */
  retry: boolean;
}

export async function syncTemplate(
  ctx: OperatorContext,
  namespace: string,
  name: string,
): Promise<TemplateSyncResult> {
  const template = ctx.caches.templates.get(name, namespace);
  if (!template || template.metadata.deletionTimestamp) return { retry: false };
  const generation = template.metadata.generation;
  const previous = template.status ?? {};
  let conditions = previous.conditions ?? [];

  const validated =
    previous.observedGeneration === generation &&
    findCondition(conditions, TemplateConditions.PodTemplateValid);
  if (!validated) {
    const problem = await validate(ctx, template);
    conditions = setCondition(conditions, {
      type: TemplateConditions.PodTemplateValid,
      status: problem ? "False" : "True",
      reason: problem ? "Invalid" : "Valid",
      message: problem ?? "The API server accepts the Deployment and Service built from this Template",
      observedGeneration: generation,
    });
    if (problem) ctx.events.warning(templateRef(template), "InvalidTemplate", problem);
    else if (findCondition(previous.conditions, TemplateConditions.PodTemplateValid)?.status === "False") {
      ctx.events.normal(templateRef(template), "ValidTemplate", "The Template is valid again");
    }
  }

  conditions = nameServed(ctx, template, conditions);
  const courseFolders = await ensureCourseFolders(ctx, template);
  if (courseFolders) {
    const previousFolders = findCondition(conditions, TemplateConditions.CourseFoldersReady);
    if (courseFolders.status === "False" && previousFolders?.message !== courseFolders.message)
      ctx.events.warning(templateRef(template), courseFolders.reason, courseFolders.message);
    conditions = setCondition(conditions, courseFolders);
  } else conditions = conditions.filter((c) => c.type !== TemplateConditions.CourseFoldersReady);

  const status: TemplateStatus = {
    observedGeneration: generation,
    conditions,
    userlands: ctx.caches.userlands.byIndex(Index.byTemplate, namespacedKey(namespace, name)).length,
  };
  const retry = courseFolders?.reason === "ClaimNameTaken";
  await writeStatus(ctx.rest, resources.Template.path(namespace, name, "status"), previous, status);
  return { retry };
}

/**
 * NameServed: whether this Template is the one its name means (the oldest of that name among the
 * served namespaces; the proxy and user-manager use that one). Written only once a duplicate has
 * been seen, so a single namespace's Templates never carry it.
 */
function nameServed(
  ctx: OperatorContext,
  template: Template,
  conditions: ConditionValue[],
): ConditionValue[] {
  const sameName = ctx.caches.templates.byIndex(Index.byName, template.metadata.name ?? "");
  const served = oldest(sameName.filter((t) => !t.metadata.deletionTimestamp));
  const shadowed = served !== undefined && served.metadata.namespace !== template.metadata.namespace;
  const previous = findCondition(conditions, TemplateConditions.NameServed);
  if (!shadowed) {
    if (!previous || previous.status === "True") return conditions;
    ctx.events.normal(
      templateRef(template),
      "NameServed",
      "No older Template of this name remains: this one is served",
    );
    return setCondition(conditions, {
      type: TemplateConditions.NameServed,
      status: "True",
      reason: "Oldest",
      message: "No older Template of this name exists in another namespace served",
    });
  }
  const message = `Template "${template.metadata.name ?? ""}" in namespace "${served.metadata.namespace ?? ""}" is older: hosts and the user-manager use that one, not this. Rename this Template (names must be unique across the namespaces served)`;
  if (previous?.status !== "False" || previous.message !== message)
    ctx.events.warning(templateRef(template), "DuplicateName", message);
  return setCondition(conditions, {
    type: TemplateConditions.NameServed,
    status: "False",
    reason: "OlderTemplateExists",
    message,
  });
}

/** Returns what is wrong with the Template, or undefined when the API server accepts it. */
async function validate(ctx: OperatorContext, template: Template): Promise<string | undefined> {
  const namespace = template.metadata.namespace ?? "";
  const probe: Userland = {
    apiVersion: API_VERSION,
    kind: "Userland",
    metadata: { name: "template-validation", namespace, uid: "00000000-0000-0000-0000-000000000000" },
    spec: { user: "template-validation", templateName: template.metadata.name ?? "", enabled: true },
  };
  let children;
  try {
    children = desiredChildren(probe, template);
  } catch (error) {
    if (error instanceof TemplateError) return error.message;
    throw error;
  }
  const checks: [string, string, unknown][] = [
    ["Deployment", resources.Deployment.path(namespace), children.deployment],
    ["Service", resources.Service.path(namespace), children.service],
    ...[...children.pvcs, ...desiredCourseClaims(template)].map((pvc): [string, string, unknown] => [
      "PersistentVolumeClaim",
      resources.PersistentVolumeClaim.path(namespace),
      pvc,
    ]),
  ];
  for (const [kind, path, object] of checks) {
    // A dry run needs no owner: the probe Userland does not exist.
    const body = structuredClone(object) as { metadata: { ownerReferences?: unknown } };
    delete body.metadata.ownerReferences;
    try {
      await ctx.rest.create(path, body, { dryRun: "All" });
    } catch (error) {
      if (isInvalid(error)) return `${kind}: ${(error as Error).message.replace(/^POST \S+: \d+ /, "")}`;
      // A real object with the probe's name exists; the dry run told us nothing about validity.
      if (!isAlreadyExists(error)) throw error;
    }
  }
  return undefined;
}
