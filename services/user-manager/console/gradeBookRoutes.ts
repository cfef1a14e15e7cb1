/**
 * The console's grade book (docs/decisions/0015-grading.md): the page, its CSV files and the
 * extension form. As every console action, each is a request to the REST API as the teacher
 * (gradingRoutes.ts), so the same access reviews decide and the API logs the teacher.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HttpError, badRequest } from "../errors.ts";
import { gradeBookCsv, type GradeBook } from "../gradebook.ts";
import { localTime, refused, type AssignmentConsoleDeps } from "./assignmentRoutes.ts";
import { formOf, templateField } from "./forms.ts";
import { gradeBookPage } from "./gradeBookPages.ts";
import { CONSOLE_PATH, gradeBookUrl } from "./layout.ts";

type GradeBookConsoleDeps = Omit<AssignmentConsoleDeps, "store">;

const NOTICES: Record<string, (value: string) => string> = {
  extended: (v) => `Extension given: ${v}.`,
  taken: (v) => `Extension taken back: ${v}.`,
  released: (v) => `Grades of ${v} released: each student sees their score and the tests they may see.`,
  hidden: (v) => `Grades of ${v} hidden from students again.`,
};

export function gradeBookConsoleRoutes(app: FastifyInstance, deps: GradeBookConsoleDeps): void {
  const { api, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  const bookPath = (template: string) => `/api/v1/templates/${encodeURIComponent(template)}/gradebook`;
  const extensionPath = (template: string, assignment: string, user: string) =>
    `/api/v1/templates/${encodeURIComponent(template)}/assignments/${encodeURIComponent(assignment)}/extensions/${encodeURIComponent(user)}`;

  async function bookOf(request: FastifyRequest, template: string): Promise<GradeBook> {
    const answer = await api<GradeBook>(request, "GET", bookPath(template));
    if (answer.status !== 200) throw refused(answer);
    return answer.body;
  }

  async function page(
    request: FastifyRequest,
    reply: FastifyReply,
    template: string,
    status = 200,
    notice?: string,
  ) {
    const query = request.query as Record<string, string | undefined>;
    const book = await bookOf(request, template);
    return send(
      reply,
      status,
      gradeBookPage(viewerOf(request), {
        template,
        book,
        sort: { by: query.sort ?? "user", descending: query.dir === "desc" },
        notice,
      }),
    );
  }

  app.get(`${CONSOLE_PATH}/gradebook`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const done = query.done && NOTICES[query.done];
    return page(
      request,
      reply,
      templateField(query.template, "query"),
      200,
      done ? done(query.value ?? "") : undefined,
    );
  });

  app.get(`${CONSOLE_PATH}/gradebook.csv`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const template = templateField(query.template, "query");
    if (query.format !== "canvas" && query.format !== "moodle")
      throw badRequest("format must be canvas or moodle", "format", "query");
    const file = gradeBookCsv(await bookOf(request, template), template, query.format);
    return reply
      .header("content-type", "text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="${file.filename}"`)
      .send(file.text);
  });

  app.post(`${CONSOLE_PATH}/gradebook/extension`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const assignment = fields.get("assignment") ?? "";
    const user = (fields.get("user") ?? "").trim();
    const zone = (fields.get("zone") ?? "").trim() || "UTC";
    let body: Record<string, string>;
    try {
      if (!user) throw badRequest("name the student", "user");
      const deadline = localTime(fields.get("deadline") ?? "", zone, "deadline");
      if (!deadline) throw badRequest("deadline: a date and time are needed", "deadline");
      const lateUntil = localTime(fields.get("lateUntil") ?? "", zone, "lateUntil");
      const note = (fields.get("note") ?? "").trim();
      body = { deadline, ...(lateUntil ? { lateUntil } : {}), ...(note ? { note } : {}) };
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      return page(request, reply, template, 400, error.message);
    }
    const answer = await api(request, "PUT", extensionPath(template, assignment, user), body);
    if (answer.status === 400 || answer.status === 404)
      return page(request, reply, template, answer.status, answer.body.message ?? "refused");
    if (answer.status !== 200) throw refused(answer);
    return reply.redirect(gradeBookUrl(template, { done: "extended", value: `${user}, ${assignment}` }), 303);
  });

  app.post(`${CONSOLE_PATH}/gradebook/release`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const assignment = fields.get("assignment") ?? "";
    const released = fields.get("released") === "true";
    const answer = await api(
      request,
      "PUT",
      `/api/v1/templates/${encodeURIComponent(template)}/assignments/${encodeURIComponent(assignment)}/grades-released`,
      { released },
    );
    if (answer.status !== 200) throw refused(answer);
    return reply.redirect(
      gradeBookUrl(template, { done: released ? "released" : "hidden", value: assignment }),
      303,
    );
  });

  app.post(`${CONSOLE_PATH}/gradebook/extension/remove`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const assignment = fields.get("assignment") ?? "";
    const user = fields.get("user") ?? "";
    const answer = await api(request, "DELETE", extensionPath(template, assignment, user));
    if (answer.status !== 200) throw refused(answer);
    return reply.redirect(gradeBookUrl(template, { done: "taken", value: `${user}, ${assignment}` }), 303);
  });
}
