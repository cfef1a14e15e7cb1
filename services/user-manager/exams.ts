/**
 * The exam routes (docs/decisions/0013-exams.md): a Template's Exams, a new one, one Exam with its
 * students' states. Teachers only, decided as for assignments (assignments.ts): the verb on
 * `exams` and `update templates/coursework` on the Template, both the person's own RBAC; only
 * then does the service's ServiceAccount read or write. The operator runs the exam.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import {
  API_VERSION,
  EXAM_MAX_HOURS,
  EXAM_STUDENT_STATES,
  EXAMS,
  ExamConditions,
  examsPath,
  type Exam,
  type ExamSpec,
} from "../../api/v1alpha1/index.ts";
import { StringEnum, Type, type Static } from "../../api/v1alpha1/schema.ts";
import { isConflict, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { AssignmentNameSchema } from "./assignmentSchemas.ts";
import { authorizeTeacher as authorizeFor } from "./auth/teaches.ts";
import type { Resource } from "./auth/caller.ts";
import { HttpError, badRequest, notFound } from "./errors.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export const EXAM_RESOURCE: Resource = { resource: EXAMS };

const Time = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 64,
    description: `${description} (RFC 3339, e.g. 2026-12-01T09:00:00Z)`,
  });

export const CreateExamBody = Type.Object(
  {
    name: AssignmentNameSchema,
    title: Type.Optional(Type.String({ maxLength: 200 })),
    class: Type.String({
      minLength: 1,
      maxLength: 63,
      description:
        'The class label whose environments the exam holds; "*" for every environment of the Template.',
    }),
    start: Time("When the window opens"),
    end: Time("When it closes and work is collected"),
    proctors: Type.Optional(
      Type.Object(
        {
          users: Type.Optional(Type.Array(UserSchema, { maxItems: 50 })),
          groups: Type.Optional(Type.Array(UserSchema, { maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
    assignment: Type.Optional(AssignmentNameSchema),
  },
  { additionalProperties: false },
);

export const EndExamBody = Type.Object(
  {
    end: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'The new end: "now" (end early: collecting starts at once), or an RFC 3339 time (extend, or end earlier), after the start, not in the past, at most the maximum length after the start.',
    }),
    from: Type.Optional(
      Type.String({
        maxLength: 64,
        description: "The end the teacher saw: 409 when it has changed since (someone else moved it).",
      }),
    ),
  },
  { additionalProperties: false },
);

export const ExamView = Type.Object({
  name: Type.String(),
  templateName: Type.String(),
  title: Type.Optional(Type.String()),
  class: Type.Optional(Type.String()),
  start: Type.String(),
  end: Type.String(),
  proctors: Type.Object({ users: Type.Array(Type.String()), groups: Type.Array(Type.String()) }),
  assignment: Type.Optional(Type.String()),
  phase: Type.String({
    description: "Scheduled, Running, Collecting or Over (Pending until the operator saw it).",
  }),
  network: Type.Optional(Type.String({ description: "The NetworkClosed condition's message." })),
  students: Type.Array(
    Type.Object({
      user: Type.String(),
      userland: Type.String(),
      state: StringEnum([...EXAM_STUDENT_STATES]),
      message: Type.Optional(Type.String()),
    }),
  ),
  ready: Type.Integer(),
  collected: Type.Integer(),
});
export type ExamView = Static<typeof ExamView>;
export const ExamList = Type.Object({ items: Type.Array(ExamView) });

export function toExamView(e: Exam): ExamView {
  const network = e.status?.conditions?.find((c) => c.type === ExamConditions.NetworkClosed);
  return {
    name: e.metadata.name ?? "",
    templateName: e.spec.templateName,
    ...(e.spec.title ? { title: e.spec.title } : {}),
    ...(e.spec.class ? { class: e.spec.class } : {}),
    start: e.spec.start,
    end: e.spec.end,
    proctors: { users: e.spec.proctors?.users ?? [], groups: e.spec.proctors?.groups ?? [] },
    ...(e.spec.assignment ? { assignment: e.spec.assignment } : {}),
    phase: e.status?.phase ?? "Pending",
    ...(network ? { network: network.message } : {}),
    students: (e.status?.students ?? []).map((s) => ({
      user: s.user,
      userland: s.userland,
      state: s.state,
      ...(s.message ? { message: s.message } : {}),
    })),
    ready: e.status?.ready ?? 0,
    collected: e.status?.collected ?? 0,
  };
}

export interface ExamRouteOptions {
  store: UserlandStore;
  rest: KubeRest;
  now?: () => Date;
}

const TemplateParams = Type.Object({ template: TemplateNameSchema });
const ExamParams = Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

function timeField(value: string, field: string): Date {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at.getTime()))
    throw badRequest(`${field} must be an RFC 3339 time, e.g. 2026-12-01T09:00:00Z`, field);
  return at;
}

export const examRoutes: FastifyPluginCallbackTypebox<ExamRouteOptions> = (app, opts, done) => {
  const { store, rest } = opts;
  const now = opts.now ?? (() => new Date());

  const authorizeTeacher = (
    request: FastifyRequest,
    verb: "get" | "list" | "create" | "patch",
    template: string,
    namespace: string,
    name?: string,
  ) => authorizeFor(request, EXAM_RESOURCE, verb, template, namespace, name);

  /** The exam `name` of `template`; 404 when there is none (or it is another Template's). */
  async function examOf(namespace: string, template: string, name: string): Promise<Exam> {
    let exam: Exam;
    try {
      exam = await rest.get<Exam>(examsPath(namespace, name));
    } catch (error) {
      if (isNotFound(error)) throw notFound(`Template "${template}" has no exam "${name}"`, "name", "params");
      throw error;
    }
    if (exam.spec.templateName !== template)
      throw notFound(`Template "${template}" has no exam "${name}"`, "name", "params");
    return exam;
  }

  app.get(
    "/api/v1/templates/:template/exams",
    {
      schema: {
        tags: ["exams"],
        summary: "List a Template's exams (teachers)",
        description:
          "Needs list on exams.userland.dev and update on templates/coursework (the Template) in its namespace.",
        params: TemplateParams,
        response: { 200: ExamList, ...errors },
      },
    },
    async (request) => {
      const { template } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "list", template, namespace);
      const all = await rest.list<Exam>(examsPath(namespace));
      const items = all.items.filter((e) => e.spec.templateName === template);
      items.sort((a, b) => b.spec.start.localeCompare(a.spec.start));
      return { items: items.map(toExamView) };
    },
  );

  app.post(
    "/api/v1/templates/:template/exams",
    {
      schema: {
        tags: ["exams"],
        summary: "Schedule an exam (teachers)",
        description:
          "From start to end the class's environments of the Template run with the network closed, reachable only by each student (signed in since the start) and the proctors; at the end the assignment's hand-ins are collected. " +
          `Needs create on exams.userland.dev and update on templates/coursework (the Template). 400 when the times do not fit (end after start and in the future, at most ${EXAM_MAX_HOURS} hours after start); 409 when the name is taken.`,
        params: TemplateParams,
        body: CreateExamBody,
        response: { 201: ExamView, ...errors, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const { template } = request.params;
      const body = request.body;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "create", template, namespace);
      const start = timeField(body.start, "start");
      const end = timeField(body.end, "end");
      if (end.getTime() <= start.getTime()) throw badRequest("end must be after start", "end");
      if (end.getTime() <= now().getTime()) throw badRequest("end is in the past", "end");
      if (end.getTime() - start.getTime() > EXAM_MAX_HOURS * 3_600_000)
        throw badRequest(`an exam lasts at most ${EXAM_MAX_HOURS} hours`, "end");
      const spec: ExamSpec = {
        templateName: template,
        start: start.toISOString(),
        end: end.toISOString(),
        ...(body.title ? { title: body.title } : {}),
        class: body.class,
        ...(body.assignment ? { assignment: body.assignment } : {}),
        proctors: { users: body.proctors?.users ?? [], groups: body.proctors?.groups ?? [] },
      };
      let created: Exam;
      try {
        created = await rest.create<Exam>(examsPath(namespace), {
          apiVersion: API_VERSION,
          kind: "Exam",
          metadata: {
            name: body.name,
            annotations: { "userland.dev/created-by": request.caller?.username ?? "" },
          },
          spec,
        });
      } catch (error) {
        if (isConflict(error))
          throw new HttpError(
            409,
            "Conflict",
            `an exam named "${body.name}" already exists in namespace "${namespace}"`,
            {
              field: "name",
              in: "body",
            },
          );
        throw error;
      }
      request.log.info({ by: request.caller?.username, template, exam: body.name }, "created Exam");
      return reply
        .code(201)
        .header("location", `/api/v1/templates/${template}/exams/${body.name}`)
        .send(toExamView(created));
    },
  );

  app.get(
    "/api/v1/templates/:template/exams/:name",
    {
      schema: {
        tags: ["exams"],
        summary: "One exam and each student's state (teachers)",
        description: "Needs get on the exam and update on templates/coursework (the Template).",
        params: ExamParams,
        response: { 200: ExamView, ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "get", template, namespace, name);
      return toExamView(await examOf(namespace, template, name));
    },
  );
  app.post(
    "/api/v1/templates/:template/exams/:name/end",
    {
      schema: {
        tags: ["exams"],
        summary: "Move an exam's end: end it now, or extend it for everyone (teachers)",
        description:
          "Sets spec.end; the operator follows at once (collecting, then restoring, at the new end). Only before the end: 409 once the exam is collecting or over, or when `from` is not the current end. " +
          `Needs patch on the exam and update on templates/coursework (the Template). 400 when the end is not after the start, is in the past, or is more than ${EXAM_MAX_HOURS} hours after the start.`,
        params: ExamParams,
        body: EndExamBody,
        response: { 200: ExamView, ...errors, 409: ErrorBody },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "patch", template, namespace, name);
      const exam = await examOf(namespace, template, name);
      const phase = exam.status?.phase ?? "Scheduled";
      if (phase === "Collecting" || phase === "Over")
        throw new HttpError(
          409,
          "Conflict",
          `the exam "${name}" is ${phase.toLowerCase()}: its end has passed`,
        );
      if (
        request.body.from !== undefined &&
        timeField(request.body.from, "from").getTime() !== Date.parse(exam.spec.end)
      )
        throw new HttpError(
          409,
          "Conflict",
          `the exam's end changed since (now ${exam.spec.end}): look again`,
          {
            field: "from",
            in: "body",
          },
        );
      const at = now();
      const end = request.body.end === "now" ? at : timeField(request.body.end, "end");
      const start = Date.parse(exam.spec.start);
      if (end.getTime() <= start) throw badRequest(`end must be after the start (${exam.spec.start})`, "end");
      // A second of slack: "now" computed by a browser a moment ago is not the past.
      if (end.getTime() < at.getTime() - 1000) throw badRequest("end is in the past", "end");
      if (end.getTime() - start > EXAM_MAX_HOURS * 3_600_000)
        throw badRequest(`an exam lasts at most ${EXAM_MAX_HOURS} hours from its start`, "end");
      const moved = await rest.patch<Exam>(examsPath(namespace, name), {
        metadata: { resourceVersion: exam.metadata.resourceVersion },
        spec: { end: end.toISOString() },
      });
      request.log.info(
        { by: request.caller?.username, template, exam: name, from: exam.spec.end, end: moved.spec.end },
        "moved an exam's end",
      );
      return toExamView(moved);
    },
  );
  done();
};
