/**
 * The grading routes (docs/decisions/0015-grading.md): a class's grade book (JSON, and CSV files
 * Canvas's and Moodle's importers take) and one student's extension. Teachers only, decided as every
 * coursework route decides it (auth/teaches.ts): the verb on the objects read or written, and
 * teaching the Template. The service's own ServiceAccount then reads and writes.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { Assignment } from "../../api/v1alpha1/index.ts";
import { StringEnum, Type, type Static } from "../../api/v1alpha1/schema.ts";
import { AssignmentNameSchema } from "./assignmentSchemas.ts";
import { Nullable } from "../../api/studentAssignmentView.ts";
import { ASSIGNMENT_RESOURCE, SUBMISSION_RESOURCE, timeField } from "./assignments.ts";
import { authorizeTeacher } from "./auth/teaches.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import { badRequest, notFound } from "./errors.ts";
import { gradeBook, gradeBookCsv } from "./gradebook.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";
import { kubeTime } from "../../api/times.ts";

export interface GradingRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  now?: () => Date;
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

const Extension = Type.Object({
  user: Type.String(),
  deadline: Type.String(),
  lateUntil: Nullable(Type.String()),
  note: Nullable(Type.String()),
});

const GradeBookCell = Type.Object({
  state: Type.String(),
  score: Nullable(Type.Number({ description: "After the late penalty; null: not graded." })),
  autograderScore: Nullable(Type.Number()),
  latePenaltyPercent: Type.Number(),
  late: Type.Boolean(),
  missing: Type.Boolean(),
  extended: Type.Boolean(),
  versions: Type.Integer({ description: "Hand-ins kept." }),
  countedVersion: Nullable(Type.Integer({ description: "The version that counts." })),
  summary: Type.String(),
  regradedFrom: Nullable(
    Type.Number({ description: "The autograder's score before the last autograder change regraded it." }),
  ),
});

const GradeBookSchema = Type.Object({
  template: Type.String(),
  assignments: Type.Array(
    Type.Object({
      name: Type.String(),
      title: Type.String(),
      points: Nullable(Type.Number()),
      deadline: Nullable(Type.String()),
      released: Type.Boolean({ description: "Students see their grades." }),
      extensions: Type.Array(Extension),
    }),
  ),
  students: Type.Array(
    Type.Object({ user: Type.String(), cells: Type.Record(Type.String(), GradeBookCell) }),
  ),
});

const CsvQuery = Type.Object(
  {
    format: StringEnum(["canvas", "moodle"], {
      description: "canvas: Canvas's gradebook import; moodle: Moodle's CSV grade import.",
    }),
  },
  { additionalProperties: false },
);

const ExtensionParams = Type.Object({
  template: TemplateNameSchema,
  name: AssignmentNameSchema,
  user: UserSchema,
});

const ExtensionBody = Type.Object(
  {
    deadline: Type.String({ description: "The student's own deadline (RFC 3339)." }),
    lateUntil: Type.Optional(
      Type.String({ description: "Their late hand-ins are accepted until then; after deadline." }),
    ),
    note: Type.Optional(Type.String({ maxLength: 200, description: "Why, for teachers only." })),
  },
  { additionalProperties: false },
);

const ExtensionsView = Type.Object({
  assignment: Type.String(),
  extensions: Type.Array(Extension),
});
type ExtensionsView = Static<typeof ExtensionsView>;

const extensionsView = (a: Assignment): ExtensionsView => ({
  assignment: a.metadata.name ?? "",
  extensions: (a.spec.extensions ?? []).map((e) => ({
    user: e.user,
    deadline: e.deadline,
    lateUntil: e.lateUntil ?? null,
    note: e.note ?? null,
  })),
});

/** A time from a request as the API server keeps it (whole seconds); 400 naming the field. */
const time = (value: string, field: string): string => kubeTime(timeField(value, field));

export const gradingRoutes: FastifyPluginCallbackTypebox<GradingRouteOptions> = (app, opts, done) => {
  const { store, coursework } = opts;
  const now = opts.now ?? (() => new Date());

  /** The book of the Template's assignments, oldest first (the order they were set). */
  async function bookOf(templateName: string, namespace: string) {
    const assignments = (await coursework.assignmentsOf(namespace, templateName)).sort((a, b) =>
      String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")),
    );
    const submissions = (await Promise.all(assignments.map((a) => coursework.submissionsOf(a)))).flat();
    return gradeBook(assignments, submissions, now());
  }

  const authorizeReader = async (
    request: Parameters<typeof authorizeTeacher>[0],
    template: string,
    namespace: string,
  ) => {
    await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "list", template, namespace);
    await request.authorize("list", undefined, namespace, SUBMISSION_RESOURCE);
  };

  app.get(
    "/api/v1/templates/:template/gradebook",
    {
      schema: {
        tags: ["grading"],
        summary: "A class's grade book (teachers)",
        description:
          "Every student with a Submission × the Template's assignments: score (after the late penalty), late, missing, extension, the autograder's summary. " +
          "Needs list on assignments and submissions.userland.dev and update on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema }),
        response: { 200: GradeBookSchema, ...errors },
      },
    },
    async (request) => {
      const { template } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeReader(request, template, namespace);
      return { template, ...(await bookOf(template, namespace)) };
    },
  );

  app.get(
    "/api/v1/templates/:template/gradebook.csv",
    {
      schema: {
        tags: ["grading"],
        summary: "The grade book as a CSV file for Canvas or Moodle (teachers)",
        description:
          "format=canvas: Student, ID, SIS User ID, SIS Login ID (the sign-in identity), Section, one `Title (name)` column per assignment, a Points Possible row. " +
          "format=moodle: Email address, ID number, and per assignment a grade column and a feedback column. An ungraded cell is empty. Needs what the grade book needs.",
        params: Type.Object({ template: TemplateNameSchema }),
        querystring: CsvQuery,
        response: { 200: Type.String(), ...errors },
      },
    },
    async (request, reply) => {
      const { template } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeReader(request, template, namespace);
      const file = gradeBookCsv(await bookOf(template, namespace), template, request.query.format);
      return reply
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="${file.filename}"`)
        .send(file.text);
    },
  );

  /** Writes the Assignment's extension for `user` (undefined: removes it); 404 for another Template's. */
  async function changeExtension(
    namespace: string,
    template: string,
    name: string,
    user: string,
    extension: { deadline: string; lateUntil?: string; note?: string } | undefined,
  ): Promise<ExtensionsView> {
    const result = await coursework.changeAssignment<ExtensionsView>(
      namespace,
      name,
      (a) => {
        if (a.spec.templateName !== template)
          throw notFound(`Template "${template}" has no assignment "${name}"`);
        const others = (a.spec.extensions ?? []).filter((e) => e.user !== user);
        const extensions = extension ? [...others, { user, ...extension }] : others;
        if (!extension && others.length === (a.spec.extensions ?? []).length)
          return { answer: extensionsView(a) };
        const { extensions: _old, ...rest } = a.spec;
        return { write: { ...a, spec: extensions.length > 0 ? { ...rest, extensions } : rest } };
      },
      extensionsView,
    );
    if (!result) throw notFound(`Template "${template}" has no assignment "${name}"`);
    return result;
  }

  app.put(
    "/api/v1/templates/:template/assignments/:name/extensions/:user",
    {
      schema: {
        tags: ["grading"],
        summary: "Give one student their own deadline (teachers)",
        description:
          "Sets the student's entry in spec.extensions: their deadline (and lateUntil) replace the assignment's for them alone; they are collected at their own closing time and their receipt names it. " +
          "Needs update on the assignment and on templates/coursework (the Template).",
        params: ExtensionParams,
        body: ExtensionBody,
        response: { 200: ExtensionsView, ...errors },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "update", template, namespace, name);
      const deadline = time(request.body.deadline, "deadline");
      const lateUntil =
        request.body.lateUntil === undefined ? undefined : time(request.body.lateUntil, "lateUntil");
      if (lateUntil !== undefined && Date.parse(lateUntil) <= Date.parse(deadline))
        throw badRequest("lateUntil must be after the deadline", "lateUntil");
      const view = await changeExtension(namespace, template, name, user, {
        deadline,
        ...(lateUntil !== undefined ? { lateUntil } : {}),
        ...(request.body.note ? { note: request.body.note } : {}),
      });
      request.log.info(
        { by: request.caller?.username, template, assignment: name, user, deadline, lateUntil },
        "extension given",
      );
      return view;
    },
  );

  app.delete(
    "/api/v1/templates/:template/assignments/:name/extensions/:user",
    {
      schema: {
        tags: ["grading"],
        summary: "Take a student's own deadline back (teachers)",
        description: "The assignment's deadline applies to them again. Needs what giving one needs.",
        params: ExtensionParams,
        response: { 200: ExtensionsView, ...errors },
      },
    },
    async (request) => {
      const { template, name, user } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "update", template, namespace, name);
      const view = await changeExtension(namespace, template, name, user, undefined);
      request.log.info(
        { by: request.caller?.username, template, assignment: name, user },
        "extension removed",
      );
      return view;
    },
  );
  app.put(
    "/api/v1/templates/:template/assignments/:name/grades-released",
    {
      schema: {
        tags: ["grading"],
        summary: "Release grades to students, or take them back (teachers)",
        description:
          "Sets spec.gradesReleased: each student then sees their score (after the late penalty) and the tests the autograder lets them see on their home page. Needs update on the assignment and on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema }),
        body: Type.Object({ released: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: Type.Object({ assignment: Type.String(), released: Type.Boolean() }), ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, ASSIGNMENT_RESOURCE, "update", template, namespace, name);
      const released = request.body.released;
      const result = await coursework.changeAssignment(
        namespace,
        name,
        (a) => {
          if (a.spec.templateName !== template)
            throw notFound(`Template "${template}" has no assignment "${name}"`);
          if ((a.spec.gradesReleased ?? false) === released)
            return { answer: { assignment: name, released } };
          return { write: { ...a, spec: { ...a.spec, gradesReleased: released } } };
        },
        () => ({ assignment: name, released }),
      );
      if (!result) throw notFound(`Template "${template}" has no assignment "${name}"`);
      request.log.info(
        { by: request.caller?.username, template, assignment: name, released },
        released ? "grades released" : "grades taken back",
      );
      return result;
    },
  );
  done();
};
