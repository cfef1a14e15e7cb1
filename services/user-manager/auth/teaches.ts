/**
 * Who teaches a Template (docs/decisions/0009-teachers.md, 0011-coursework.md), decided the one way
 * every coursework route decides it: an access review on the person's own identity for `update` on
 * the subresource templates/coursework of that Template. The subresource has no handler: it exists
 * so RBAC can name "teaches this Template" without granting anything on the Template itself.
 */
import type { FastifyRequest } from "fastify";
import { TEMPLATES } from "../../../api/v1alpha1/index.ts";
import type { AccessReviewer } from "./accessReview.ts";
import type { Resource, Verb } from "./caller.ts";

/** "Teaches this Template": the course teacher's right (the chart's userland-course-teacher). */
export const COURSEWORK_RESOURCE: Resource = { resource: TEMPLATES, subresource: "coursework" };

/** Whether a person (a Userland's spec.user) teaches a Template, asked without their session. */
export type PersonTeaches = (user: string, templateName: string, namespace: string) => Promise<boolean>;

/** How a person without a session is named to RBAC: as the console names them when signed in. */
export interface PersonSubject {
  userPrefix: string;
  groupPrefix: string;
  /** The groups of the person's latest session (their session record, api/sessions.ts). */
  groupsOf(user: string): Promise<readonly string[]>;
}

/**
 * The operator's rule (operator/teachers.ts): the person's session user name (`userPrefix` and
 * spec.user) and the groups their latest session carried, so a teacher appointed by group is one
 * here too (issue 41 item 7).
 */
export const personTeaches =
  (reviewer: AccessReviewer, subject: PersonSubject): PersonTeaches =>
  async (user, templateName, namespace) =>
    (
      await reviewer.review(
        {
          username: subject.userPrefix + user,
          groups: (await subject.groupsOf(user)).map((group) => subject.groupPrefix + group),
        },
        "update",
        templateName,
        namespace,
        COURSEWORK_RESOURCE,
      )
    ).allowed;

/** 403 unless the caller teaches `templateName`. */
export async function authorizeTeaches(
  request: FastifyRequest,
  templateName: string,
  namespace: string,
): Promise<void> {
  await request.authorize("update", templateName, namespace, COURSEWORK_RESOURCE);
}

/**
 * 403 unless the caller may `verb` the `resource` (named `name`) in the namespace and teaches the
 * Template: a coursework object names its Template, and RBAC has no resourceNames for create.
 */
export async function authorizeTeacher(
  request: FastifyRequest,
  resource: Resource,
  verb: Verb,
  templateName: string,
  namespace: string,
  name?: string,
): Promise<void> {
  await request.authorize(verb, name, namespace, resource);
  await authorizeTeaches(request, templateName, namespace);
}
