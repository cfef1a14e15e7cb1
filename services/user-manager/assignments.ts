/**
 * The coursework routes (docs/decisions/0011-coursework.md).
 *
 * Teachers: a Template's Assignments, a new one, Publish again (spec.release + 1), Return feedback
 * (spec.feedbackRelease + 1) and one Assignment's hand-in table. Who is a teacher is the person's
 * own RBAC, asked as for every other route (an access review on their identity, in the
 * Template's namespace): the verb on `assignments`, and `update templates/coursework` on the
 * Template (the course teacher's right: `create assignments` alone cannot name a Template, RBAC
 * has no resourceNames for create). Only then does the service's own ServiceAccount write.
 *
 * Students: their assignments, hand-in and receipt, for the user named in the path. The caller is
 * whoever may `get`/`update` the subresource `submissions/handin` (no handler: it exists so RBAC can
 * name "acts for students at hand-in", as templates/coursework names teachers); the proxy's home
 * page is that caller and names only the session's own user, as for Start.
 */
import { submissionIsOf } from "../../api/assignmentIdentity.ts";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { LABELS } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { ASSIGNMENTS, SUBMISSIONS } from "../../api/v1alpha1/index.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import type { Resource } from "./auth/caller.ts";
import { authorizeTeacher as authorizeFor, type PersonTeaches } from "./auth/teaches.ts";
import {
  AssignmentList,
  AssignmentNameSchema,
  AssignmentView,
  CreateAssignmentBody,
  HandInTable,
  ReleaseBody,
  toAssignmentView,
  toHandInRow,
  toStudentView,
} from "./assignmentSchemas.ts";
import { StudentAssignmentList, StudentAssignmentView } from "../../api/studentAssignmentView.ts";
import type { Assignment, AssignmentSpec, Submission } from "../../api/v1alpha1/index.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import { HttpError, badRequest, conflict, notFound } from "./errors.ts";
import { closesAt, isClosed } from "../../api/handInState.ts";
import { handInRefusal, pendingHandIn } from "../../api/handIns.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export interface AssignmentRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  /**
   * Whether `user` teaches `template` (RBAC, as the operator decides it: update on
   * templates/coursework for the session user, groups not counted). The operator gives teachers
   * no Submission; the hand-in table leaves them out too.
   */
  teaches?: PersonTeaches;
  now?: () => Date;
}

export const ASSIGNMENT_RESOURCE: Resource = { resource: ASSIGNMENTS };
export const SUBMISSION_RESOURCE: Resource = { resource: SUBMISSIONS };
/** "Acts for students at hand-in": no handler, it exists for RBAC to name (the proxy holds it). */
export const HANDIN_RESOURCE: Resource = { resource: SUBMISSIONS, subresource: "handin" };

/** The label the operator narrows an Assignment's class by (the CRD's spec.class). */

const TemplateParams = Type.Object({ template: TemplateNameSchema });
const AssignmentParams = Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema });
const SubmissionParams = Type.Object({
  template: TemplateNameSchema,
  name: AssignmentNameSchema,
  user: UserSchema,
});
const UserParams = Type.Object({ user: UserSchema });

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

/** Why a source path is not a relative path inside its folder, in words (the CRD's rules). */
function badSourcePath(path: string): string | undefined {
  if (path.startsWith("/")) return "must be relative to the course folder (no leading '/')";
  if (path.split("/").includes("..")) return "must not contain '..'";
  if (path.includes("\\")) return "must not contain a backslash";
  if ([...path].some((c) => c < " ")) return "must not contain control characters";
  return undefined;
}

/** An RFC 3339 time from a request, normalised; 400 naming the field when it is not one. */
export function timeField(value: string, field: string): Date;
export function timeField(value: string | undefined, field: string): Date | undefined;
export function timeField(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at.getTime()))
    throw badRequest(`${field} must be an RFC 3339 time, e.g. 2026-12-01T09:00:00Z`, field);
  return at;
}

export const assignmentRoutes: FastifyPluginCallbackTypebox<AssignmentRouteOptions> = (app, opts, done) => {
  const { store, coursework } = opts;
  const now = opts.now ?? (() => new Date());

  /** 403 unless the person may `verb` assignments (named `name`) and teaches the Template. */
  const authorizeTeacher = (
    request: FastifyRequest,
    verb: "get" | "list" | "create" | "update",
    templateName: string,
    namespace: string,
    name?: string,
  ) => authorizeFor(request, ASSIGNMENT_RESOURCE, verb, templateName, namespace, name);

  /** The Template's Assignment `name`; 404 when there is none (or it is another Template's). */
  async function assignmentOf(namespace: string, templateName: string, name: string): Promise<Assignment> {
    const a = await coursework.getAssignment(namespace, name);
    if (!a || a.spec.templateName !== templateName)
      throw notFound(`Template "${templateName}" has no assignment "${name}"`, "name", "params");
    return a;
  }

  app.get(
    "/api/v1/templates/:template/assignments",
    {
      schema: {
        tags: ["assignments"],
        summary: "List a Template's assignments (teachers)",
        description:
          "Needs list on assignments.userland.dev and update on templates/coursework (the Template) in its namespace.",
        params: TemplateParams,
        response: { 200: AssignmentList, ...errors },
      },
    },
    async (request) => {
      const { template: name } = request.params;
      const { namespace } = await store.templateOrNotFound(name);
      await authorizeTeacher(request, "list", name, namespace);
      const items = await coursework.assignmentsOf(namespace, name);
      items.sort((a, b) =>
        String(b.metadata.creationTimestamp ?? "").localeCompare(String(a.metadata.creationTimestamp ?? "")),
      );
      return { items: items.map(toAssignmentView) };
    },
  );

  app.post(
    "/api/v1/templates/:template/assignments",
    {
      schema: {
        tags: ["assignments"],
        summary: "Create an assignment (teachers)",
        description:
          "Hands out source.path of the course folder source.folder to every student of the Template (or of its class). Needs create on assignments.userland.dev and update on templates/coursework (the Template). " +
          "400 when the folder is not one of the Template's course folders, the Template has no collection, or the times do not fit; 409 when the name is taken.",
        params: TemplateParams,
        body: CreateAssignmentBody,
        response: { 201: AssignmentView, ...errors, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const { template: templateName } = request.params;
      const body = request.body;
      const { template, namespace } = await store.templateOrNotFound(templateName);
      await authorizeTeacher(request, "create", templateName, namespace);
      const work = template.spec.coursework;
      if (!work?.collection)
        throw badRequest(
          `Template "${templateName}" keeps no coursework: an admin must set spec.coursework.collection (where hand-ins are kept) first`,
          "template",
          "params",
        );
      const folders = (work.folders ?? []).map((f) => f.name);
      if (!folders.includes(body.source.folder))
        throw badRequest(
          folders.length === 0
            ? `Template "${templateName}" has no course folders (spec.coursework.folders)`
            : `source.folder "${body.source.folder}" is not a course folder of Template "${templateName}": choose one of ${folders.map((f) => `"${f}"`).join(", ")}`,
          "source.folder",
        );
      const pathProblem = badSourcePath(body.source.path);
      if (pathProblem) throw badRequest(`source.path ${pathProblem}`, "source.path");
      const deadline = timeField(body.deadline, "deadline");
      const lateUntil = timeField(body.lateUntil, "lateUntil");
      if (deadline && deadline.getTime() <= now().getTime())
        throw badRequest("deadline is in the past", "deadline");
      if (lateUntil && !deadline) throw badRequest("lateUntil needs a deadline before it", "lateUntil");
      if (lateUntil && deadline && lateUntil.getTime() <= deadline.getTime())
        throw badRequest("lateUntil must be after the deadline", "lateUntil");
      const spec: AssignmentSpec = {
        templateName,
        title: body.title,
        source: { folder: body.source.folder, path: body.source.path.replace(/\/+$/, "") },
        ...(body.class === undefined ? {} : { class: body.class }),
        ...(deadline ? { deadline: deadline.toISOString() } : {}),
        ...(lateUntil ? { lateUntil: lateUntil.toISOString() } : {}),
        ...(body.limits ? { limits: body.limits } : {}),
      };
      let created: Assignment;
      try {
        created = await coursework.createAssignment(
          namespace,
          body.name,
          spec,
          request.caller?.username ?? "",
        );
      } catch (error) {
        if (isConflict(error))
          throw new HttpError(
            409,
            "Conflict",
            `an assignment named "${body.name}" already exists in namespace "${namespace}"`,
            {
              field: "name",
              in: "body",
            },
          );
        throw error;
      }
      request.log.info(
        { by: request.caller?.username, template: templateName, assignment: body.name },
        "created Assignment",
      );
      return reply
        .code(201)
        .header("location", `/api/v1/templates/${templateName}/assignments/${body.name}`)
        .send(toAssignmentView(created));
    },
  );

  app.get(
    "/api/v1/templates/:template/assignments/:name",
    {
      schema: {
        tags: ["assignments"],
        summary: "One assignment's hand-in table (teachers)",
        description:
          "Every student of the class (the Template's Userlands, of its class when the assignment names one, but not its teachers, and anyone holding a Submission) with their state, receipt and the files they kept their own version of. " +
          "Needs get on the assignment, list on submissions.userland.dev and update on templates/coursework (the Template).",
        params: AssignmentParams,
        response: { 200: HandInTable, ...errors },
      },
    },
    async (request) => {
      const { template: templateName, name } = request.params;
      const { namespace } = await store.templateOrNotFound(templateName);
      await authorizeTeacher(request, "get", templateName, namespace, name);
      await request.authorize("list", undefined, namespace, SUBMISSION_RESOURCE);
      const a = await assignmentOf(namespace, templateName, name);
      const [userlands, submissions] = await Promise.all([
        store.list({ templateName, namespaces: [namespace] }),
        coursework.submissionsOf(a),
      ]);
      const klass = a.spec.class;
      const byUser = new Map<string, { userland?: Userland; submission?: Submission }>();
      for (const u of userlands) {
        if (u.spec.templateName !== templateName) continue;
        if (klass !== undefined && u.metadata.labels?.[LABELS.class] !== klass) continue;
        byUser.set(u.spec.user, { ...byUser.get(u.spec.user), userland: u });
      }
      for (const s of submissions) byUser.set(s.spec.user, { ...byUser.get(s.spec.user), submission: s });
      // A Userland without a Submission is a student the operator has not reached yet, or a
      // teacher, who gets none: asked of RBAC for these few only (the real-node test found the
      // teacher listed as a student "not yet distributed").
      if (opts.teaches)
        for (const [user, entry] of [...byUser.entries()])
          if (!entry.submission && (await opts.teaches(user, templateName, namespace))) byUser.delete(user);
      const at = now();
      const students = [...byUser.entries()]
        .map(([user, { userland, submission }]) => toHandInRow(a, user, userland, submission, at))
        .sort((x, y) => x.user.localeCompare(y.user));
      const counts: Record<string, number> = {};
      for (const row of students) counts[row.state] = (counts[row.state] ?? 0) + 1;
      return { assignment: toAssignmentView(a), counts, students };
    },
  );

  /** Publish again and Return feedback: one counter of the spec raised by one, never twice for one click. */
  const raiseRoute = (
    action: "publish" | "feedback",
    field: "release" | "feedbackRelease",
    summary: string,
    description: string,
  ) =>
    app.post(
      `/api/v1/templates/:template/assignments/:name/${action}`,
      {
        // No body is an empty one (Publish again without `from`).
        preValidation: (request, _reply, next) => {
          request.body ??= {};
          next();
        },
        schema: {
          tags: ["assignments"],
          summary,
          description: `${description} Needs update on the assignment and on templates/coursework (the Template). With from (the value the teacher saw), 409 when it changed meanwhile.`,
          params: AssignmentParams,
          body: ReleaseBody,
          response: { 200: AssignmentView, ...errors, 409: ErrorBody },
        },
      },
      async (request) => {
        const { template: templateName, name } = request.params;
        const from = request.body?.from;
        const { namespace } = await store.templateOrNotFound(templateName);
        await authorizeTeacher(request, "update", templateName, namespace, name);
        await assignmentOf(namespace, templateName, name);
        const current = (a: Assignment) =>
          field === "release" ? (a.spec.release ?? 1) : (a.spec.feedbackRelease ?? 0);
        const result = await coursework.changeAssignment<AssignmentView>(
          namespace,
          name,
          (a) => {
            if (a.spec.templateName !== templateName)
              throw notFound(`Template "${templateName}" has no assignment "${name}"`);
            const value = current(a);
            if (from !== undefined && from !== value)
              throw conflict(
                `${field} is ${value} now, not ${from}: someone else ${action === "publish" ? "published again" : "returned feedback"} meanwhile; reload and decide again`,
                { field: "from", [field]: value },
              );
            return { write: { ...a, spec: { ...a.spec, [field]: value + 1 } } };
          },
          toAssignmentView,
        );
        if (!result) throw notFound(`Template "${templateName}" has no assignment "${name}"`);
        request.log.info(
          { by: request.caller?.username, template: templateName, assignment: name, [field]: result[field] },
          action === "publish" ? "published Assignment again" : "returned feedback",
        );
        return result;
      },
    );
  raiseRoute(
    "publish",
    "release",
    "Publish again (teachers)",
    "Raises spec.release by one: the platform takes a new snapshot of the source and updates every student's files they have not changed (their own edits are kept and listed).",
  );
  raiseRoute(
    "feedback",
    "feedbackRelease",
    "Return feedback (teachers)",
    "Raises spec.feedbackRelease by one: the platform copies what teachers put in the collection's feedback/<assignment>/<student>/ into each student's assignments/<name>/feedback/.",
  );

  app.get(
    "/api/v1/users/:user/assignments",
    {
      schema: {
        tags: ["assignments"],
        summary: "A student's assignments",
        description:
          "Every assignment the user (exact identity, URL-encoded) has a Submission of, soonest closing first, with its state and receipt. " +
          "Needs get on submissions/handin (the proxy's home page holds it and asks only for the signed-in student).",
        params: UserParams,
        response: { 200: StudentAssignmentList, ...errors },
      },
    },
    async (request) => {
      await request.authorize("get", undefined, undefined, HANDIN_RESOURCE);
      const { user } = request.params;
      const submissions = (await coursework.submissionsOfUser(user)).filter((s) => s.spec.user === user);
      const at = now();
      const items = [];
      for (const s of submissions) {
        const a = await coursework.getAssignment(s.metadata.namespace ?? "", s.spec.assignment);
        if (a && submissionIsOf(s, a)) items.push(toStudentView(a, s, at));
      }
      const order = (v: { closesAt: string | null }) => v.closesAt ?? "9999";
      items.sort((x, y) => order(x).localeCompare(order(y)) || x.name.localeCompare(y.name));
      return { items };
    },
  );

  /** The student's Submission of the Template's Assignment, and the Assignment; 404 when they are not in it. */
  async function studentOf(templateName: string, name: string, user: string) {
    const { namespace } = await store.templateOrNotFound(templateName);
    const a = await coursework.getAssignment(namespace, name);
    const notIn = notFound(`user "${user}" has no assignment "${name}" of Template "${templateName}"`);
    if (!a || a.spec.templateName !== templateName) throw notIn;
    const find = () => coursework.submissionOf(a, user);
    return { namespace, assignment: a, find, notIn };
  }

  app.get(
    "/api/v1/templates/:template/assignments/:name/submissions/:user",
    {
      schema: {
        tags: ["assignments"],
        summary: "A student's assignment and receipt",
        description: "Needs get on submissions/handin. 404 when the user is not in the assignment.",
        params: SubmissionParams,
        response: { 200: StudentAssignmentView, ...errors },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      await request.authorize(
        "get",
        undefined,
        (await store.templateOrNotFound(template)).namespace,
        HANDIN_RESOURCE,
      );
      const { assignment, find, notIn } = await studentOf(template, name, user);
      const s = await find();
      if (!s) throw notIn;
      return toStudentView(assignment, s, now());
    },
  );

  app.post(
    "/api/v1/templates/:template/assignments/:name/submissions/:user/handin",
    {
      schema: {
        tags: ["assignments"],
        summary: "Hand in (for the student)",
        description:
          "Sets the student's own Submission's spec.handInRequestedAt (now) and handInRequestedBy: student; the platform then collects and writes the receipt. " +
          "Until their closing time a student may hand in again, up to the assignment's maxVersions; every version is kept. While a hand-in is being collected the answer is the existing state (200, nothing written). 409 after the student's closing time (lateUntil, else the deadline; their extension's if they have one), after a collection at the closing time, or when every version is used; 404 when the user is not in the assignment. Needs update on submissions/handin.",
        params: SubmissionParams,
        response: { 200: StudentAssignmentView, ...errors, 409: ErrorBody },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      await request.authorize(
        "update",
        undefined,
        (await store.templateOrNotFound(template)).namespace,
        HANDIN_RESOURCE,
      );
      const { namespace, assignment, find, notIn } = await studentOf(template, name, user);
      const result = await coursework.changeSubmission(
        namespace,
        find,
        (s) => {
          const at = now();
          // A second click while the first is collected: the same answer, nothing written.
          if (pendingHandIn(s)) return { answer: toStudentView(assignment, s, at) };
          if (isClosed(assignment, user, at))
            throw conflict(
              `assignment "${name}" closed at ${closesAt(assignment, user)?.toISOString() ?? ""}: hand-ins are no longer accepted`,
              { closesAt: closesAt(assignment, user)?.toISOString() ?? null },
            );
          const refused = handInRefusal(assignment, s);
          if (refused) throw conflict(`no more hand-ins of assignment "${name}": ${refused}`);
          return {
            write: { spec: { handInRequestedAt: at.toISOString(), handInRequestedBy: "student" } },
          };
        },
        (s) => toStudentView(assignment, s, now()),
      );
      if (!result) throw notIn;
      request.log.info(
        { by: request.caller?.username, user, template, assignment: name },
        "hand-in requested",
      );
      return result;
    },
  );
  done();
};
