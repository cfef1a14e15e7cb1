/**
 * A teacher's review (docs/decisions/0015-grading.md): an Assignment's rubric, and one hand-in's
 * review (rubric items applied, a comment for the student, the autograder's part set by hand, the
 * version that counts). A
 * review lives in the Submission's spec.review and names rubric items by id, so a changed item's
 * points change every hand-in it was applied to (api/scores.ts adds them up when read). Who may
 * write either is RBAC: update on the Assignment, and update on submissions/review (no handler:
 * it exists so RBAC can name "grades this class"), both with teaching the Template.
 */
import { collectionFolderOf } from "../../api/assignmentIdentity.ts";
import { collectionUserFolder } from "../../api/naming.ts";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import {
  MAX_HAND_IN_VERSIONS,
  RUBRIC_ITEM_ID_PATTERN,
  SUBMISSIONS,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { Type, type Static } from "../../api/v1alpha1/schema.ts";
import { versionsOf } from "../../api/handIns.ts";
import { AssignmentNameSchema, receiptView } from "./assignmentSchemas.ts";
import { ReceiptView } from "../../api/studentAssignmentView.ts";
import { ASSIGNMENT_RESOURCE } from "./assignments.ts";
import type { Resource } from "./auth/caller.ts";
import { authorizeTeacher } from "./auth/teaches.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import { badRequest, notFound } from "./errors.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";
import { kubeTime } from "../../api/times.ts";

export interface ReviewRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  now?: () => Date;
}

/** "Grades this class": the course teacher's right on hand-ins. */
export const REVIEW_RESOURCE: Resource = { resource: SUBMISSIONS, subresource: "review" };

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

const RubricItem = Type.Object(
  {
    id: Type.String({ pattern: RUBRIC_ITEM_ID_PATTERN, maxLength: 40 }),
    points: Type.Number({ minimum: -1000, maximum: 1000 }),
    description: Type.String({ minLength: 1, maxLength: 500 }),
  },
  { additionalProperties: false },
);
const RubricBody = Type.Object(
  { items: Type.Array(RubricItem, { maxItems: 50 }) },
  { additionalProperties: false },
);
const ReviewBody = Type.Object(
  {
    items: Type.Array(Type.String({ pattern: RUBRIC_ITEM_ID_PATTERN, maxLength: 40 }), { maxItems: 50 }),
    comment: Type.Optional(Type.String({ maxLength: 4000 })),
    autograderScore: Type.Optional(
      Type.Union([Type.Number({ minimum: -1000, maximum: 100000 }), Type.Null()], {
        description: "The autograder's part by hand; null: the autograder's own again.",
      }),
    ),
    countedVersion: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: MAX_HAND_IN_VERSIONS }), Type.Null()], {
        description: "The version of the hand-in that counts (one of its versions); null: the last one.",
      }),
    ),
  },
  { additionalProperties: false },
);
const ReviewView = Type.Object({
  user: Type.String(),
  items: Type.Array(Type.String()),
  comment: Type.Union([Type.String(), Type.Null()]),
  autograderScore: Type.Union([Type.Number(), Type.Null()]),
  countedVersion: Type.Union([Type.Integer(), Type.Null()]),
});

const reviewOf = (s: Submission, user: string): Static<typeof ReviewView> => ({
  user,
  items: s.spec.review?.items ?? [],
  comment: s.spec.review?.comment ?? null,
  autograderScore: s.spec.review?.autograderScore ?? null,
  countedVersion: s.spec.review?.countedVersion ?? null,
});

/** What a teacher reviews: the hand-in's receipt, every test (hidden ones too), the rubric, the review. */
const HandInReview = Type.Object({
  user: Type.String(),
  assignment: Type.String(),
  folder: Type.String({
    description:
      "The student's hand-ins in teachers' environments: <collection>/handins/<folder>/<student>/<version>/.",
  }),
  title: Type.String(),
  rubric: Type.Array(RubricItem),
  review: ReviewView,
  receipt: Type.Union([ReceiptView, Type.Null()], { description: "The version that counts." }),
  versions: Type.Array(ReceiptView, { description: "Every version handed in, oldest first." }),
  grade: Type.Union([
    Type.Object({
      score: Type.Number(),
      maxScore: Type.Union([Type.Number(), Type.Null()]),
      results: Type.String({ description: "Its results.json and stdout, in the collection." }),
      tests: Type.Array(
        Type.Object({
          name: Type.String(),
          score: Type.Union([Type.Number(), Type.Null()]),
          maxScore: Type.Union([Type.Number(), Type.Null()]),
          status: Type.Union([Type.String(), Type.Null()]),
          visibility: Type.String(),
        }),
      ),
    }),
    Type.Null(),
  ]),
  attempt: Type.Union([
    Type.Object({ ok: Type.Boolean(), reason: Type.String(), message: Type.String(), time: Type.String() }),
    Type.Null(),
  ]),
});

export type RubricItemView = Static<typeof RubricItem>;
export type HandInReviewView = Static<typeof HandInReview>;

export const reviewRoutes: FastifyPluginCallbackTypebox<ReviewRouteOptions> = (app, opts, done) => {
  const { store, coursework } = opts;
  const now = opts.now ?? (() => new Date());

  app.get(
    "/api/v1/templates/:template/assignments/:name/submissions/:user/review",
    {
      schema: {
        tags: ["grading"],
        summary: "One hand-in as its teacher reviews it (teachers)",
        description:
          "The receipt, the autograder's result with every test (hidden ones too), the last run's outcome, the rubric and the review. Needs get on submissions.userland.dev and update on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema, user: UserSchema }),
        response: { 200: HandInReview, ...errors },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, { resource: SUBMISSIONS }, "get", template, namespace);
      const a = await coursework.getAssignment(namespace, name);
      if (!a || a.spec.templateName !== template)
        throw notFound(`Template "${template}" has no assignment "${name}"`);
      const s = await coursework.submissionOf(a, user);
      if (!s) throw notFound(`user "${user}" has no hand-in of "${name}"`);
      const r = s.status?.receipt;
      const g = s.status?.grade;
      const attempt = s.status?.gradeAttempt;
      return {
        user,
        assignment: name,
        folder: `${collectionFolderOf(a) ?? name}/${collectionUserFolder(user)}`,
        title: a.spec.title,
        rubric: a.spec.rubric ?? [],
        review: reviewOf(s, user),
        receipt: r ? receiptView(r) : null,
        versions: versionsOf(s).map(receiptView),
        grade: g
          ? {
              score: g.score,
              maxScore: g.maxScore ?? null,
              results: g.results,
              tests: (g.tests ?? []).map((t) => ({
                name: t.name,
                score: t.score ?? null,
                maxScore: t.maxScore ?? null,
                status: t.status ?? null,
                visibility: t.visibility ?? "visible",
              })),
            }
          : null,
        attempt: attempt
          ? { ok: attempt.ok, reason: attempt.reason, message: attempt.message, time: attempt.time }
          : null,
      };
    },
  );

  app.get(
    "/api/v1/templates/:template/assignments/:name/rubric",
    {
      schema: {
        tags: ["grading"],
        summary: "An assignment's rubric (teachers)",
        description: "Needs get on the assignment and update on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema }),
        response: { 200: Type.Object({ rubric: Type.Array(RubricItem) }), ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "get", template, namespace, name);
      const a = await coursework.getAssignment(namespace, name);
      if (!a || a.spec.templateName !== template)
        throw notFound(`Template "${template}" has no assignment "${name}"`);
      return { rubric: a.spec.rubric ?? [] };
    },
  );

  app.put(
    "/api/v1/templates/:template/assignments/:name/rubric",
    {
      schema: {
        tags: ["grading"],
        summary: "Set an assignment's rubric (teachers)",
        description:
          "Replaces spec.rubric. Items keep their id when their points or words change: every review that applied one counts its new points. Ids must be unique. Needs update on the assignment and on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema }),
        body: RubricBody,
        response: { 200: RubricBody, ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "update", template, namespace, name);
      const items = request.body.items;
      const ids = items.map((i) => i.id);
      const twice = ids.find((id, i) => ids.indexOf(id) !== i);
      if (twice) throw badRequest(`rubric item "${twice}" is there twice: ids must be unique`, "items");
      const result = await coursework.changeAssignment(
        namespace,
        name,
        (a) => {
          if (a.spec.templateName !== template)
            throw notFound(`Template "${template}" has no assignment "${name}"`);
          const { rubric: _old, ...rest } = a.spec;
          return { write: { ...a, spec: items.length ? { ...rest, rubric: items } : rest } };
        },
        (a) => ({ items: a.spec.rubric ?? [] }),
      );
      if (!result) throw notFound(`Template "${template}" has no assignment "${name}"`);
      request.log.info(
        { by: request.caller?.username, template, assignment: name, items: ids },
        "rubric set",
      );
      return result;
    },
  );

  app.put(
    "/api/v1/templates/:template/assignments/:name/submissions/:user/review",
    {
      schema: {
        tags: ["grading"],
        summary: "Review one student's hand-in (teachers)",
        description:
          "Sets the Submission's spec.review: the rubric items applied (ids of the Assignment's rubric), a comment for the student, optionally the autograder's part by hand (a new autograder run leaves it alone) and the version that counts (the platform grades that one). Students see it once grades are released. " +
          "Needs update on submissions/review and on templates/coursework (the Template). 400 for an item the rubric does not have or a version the student did not hand in; 404 when the user has no Submission.",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema, user: UserSchema }),
        body: ReviewBody,
        response: { 200: ReviewView, ...errors },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, REVIEW_RESOURCE, "update", template, namespace);
      const a = await coursework.getAssignment(namespace, name);
      if (!a || a.spec.templateName !== template)
        throw notFound(`Template "${template}" has no assignment "${name}"`);
      const known = new Set((a.spec.rubric ?? []).map((i) => i.id));
      const unknown = request.body.items.find((id) => !known.has(id));
      if (unknown) throw badRequest(`the rubric of "${name}" has no item "${unknown}"`, "items");
      const { comment, autograderScore, countedVersion } = request.body;
      const review = {
        items: [...new Set(request.body.items)],
        ...(comment ? { comment } : {}),
        ...(typeof autograderScore === "number" ? { autograderScore } : {}),
        ...(typeof countedVersion === "number" ? { countedVersion } : {}),
        by: request.caller?.username ?? "",
        at: kubeTime(now()),
      };
      const result = await coursework.changeSubmission(
        namespace,
        () => coursework.submissionOf(a, user),
        // A merge patch of the whole review: fields left out are removed (null), not kept.
        (s) => {
          if (countedVersion && !versionsOf(s).some((v) => v.version === countedVersion))
            throw badRequest(`${user} has no version ${countedVersion} of "${name}"`, "countedVersion");
          return {
            write: {
              spec: {
                review: { comment: null, autograderScore: null, countedVersion: null, ...review },
              },
            },
          };
        },
        (s) => reviewOf(s, user),
      );
      if (!result) throw notFound(`user "${user}" has no hand-in of "${name}"`);
      request.log.info(
        { by: request.caller?.username, template, assignment: name, user, items: review.items },
        "hand-in reviewed",
      );
      return result;
    },
  );
  done();
};
