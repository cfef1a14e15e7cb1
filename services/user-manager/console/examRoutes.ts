/**
 * The console's exam pages (docs/decisions/0013-exams.md): a Template's exams with a form to
 * schedule one, and one exam's state per student. As every console action, each is a request to
 * the REST API as the teacher (exams.ts), so the same access reviews decide.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Static } from "../../../api/v1alpha1/schema.ts";
import { WHOLE_TEMPLATE } from "../../../api/v1alpha1/index.ts";
import { HttpError, badRequest } from "../errors.ts";
import type { ExamList, ExamView } from "../exams.ts";
import type { AssignmentConsoleDeps } from "./assignmentRoutes.ts";
import { localTime } from "./assignmentRoutes.ts";
import { EMPTY_EXAM_FORM, examPage, examsPage, examUrl, type ExamForm } from "./examPages.ts";
import { formOf, templateField } from "./forms.ts";
import { CONSOLE_PATH } from "./layout.ts";

type ExamConsoleDeps = Omit<AssignmentConsoleDeps, "store">;
type ApiAnswer = { status: number; body: { message?: string; permission?: unknown } };

function refused(answer: ApiAnswer): HttpError {
  return new HttpError(
    answer.status,
    answer.status === 403 ? "Forbidden" : "Refused",
    answer.body.message ?? `the API answered ${answer.status}`,
    { extra: answer.body.permission ? { permission: answer.body.permission } : {} },
  );
}

const list = (value: string) =>
  value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);

/** The API's create body from the console's form (times in the form's zone). */
function createBody(form: ExamForm): Record<string, unknown> {
  const zone = form.zone.trim() || "UTC";
  const start = localTime(form.start, zone, "start");
  const end = localTime(form.end, zone, "end");
  if (!start) throw badRequest("start: a date and time are needed", "start");
  if (!end) throw badRequest("end: a date and time are needed", "end");
  const klass = form.class.trim();
  if (!klass)
    throw badRequest(
      `class: name the class, or ${WHOLE_TEMPLATE} for every environment of the Template`,
      "class",
    );
  return {
    name: form.name.trim(),
    start,
    end,
    ...(form.title.trim() ? { title: form.title.trim() } : {}),
    class: klass,
    ...(form.assignment.trim() ? { assignment: form.assignment.trim() } : {}),
    proctors: { users: list(form.proctors), groups: list(form.proctorGroups) },
  };
}

/** The notice after an action (the page's `done`). */
const DONE_NOTICES: Record<string, string> = {
  created: "Scheduled. The platform starts it at its start time.",
  ended: "Ended: the platform collects the work now, then every environment returns to how it was.",
  extended: "Extended for everyone: the new end is below, and students see it on their home pages.",
};

export function examConsoleRoutes(app: FastifyInstance, deps: ExamConsoleDeps): void {
  const { api, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  const base = (template: string) => `/api/v1/templates/${encodeURIComponent(template)}/exams`;

  async function listPage(
    request: FastifyRequest,
    template: string,
    problem?: { status: number; message: string; form: ExamForm },
  ) {
    const answer = await api<Static<typeof ExamList>>(request, "GET", base(template));
    if (answer.status !== 200) throw refused(answer);
    return {
      status: problem?.status ?? 200,
      page: examsPage(viewerOf(request), { template, items: answer.body.items, notice: undefined, problem }),
    };
  }

  app.get(`${CONSOLE_PATH}/exams`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const { status, page } = await listPage(request, templateField(query.template, "query"));
    return send(reply, status, page);
  });

  app.post(`${CONSOLE_PATH}/exams/create`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const form = { ...EMPTY_EXAM_FORM };
    for (const key of Object.keys(form) as (keyof ExamForm)[]) form[key] = fields.get(key) ?? "";
    let body: Record<string, unknown>;
    try {
      body = createBody(form);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      const { status, page } = await listPage(request, template, {
        status: 400,
        message: error.message,
        form,
      });
      return send(reply, status, page);
    }
    const answer = await api<ExamView>(request, "POST", base(template), body);
    if (answer.status === 201) {
      request.log.info(
        { by: request.caller?.username, template, exam: answer.body.name },
        "console: exam scheduled",
      );
      return reply.redirect(examUrl(template, answer.body.name, { done: "created" }), 303);
    }
    if (answer.status === 400 || answer.status === 409) {
      const { status, page } = await listPage(request, template, {
        status: answer.status,
        message: answer.body.message ?? "refused",
        form,
      });
      return send(reply, status, page);
    }
    throw refused(answer);
  });

  /** One exam's page; `problem`: why a change of its end was refused (with that status). */
  async function onePage(
    request: FastifyRequest,
    template: string,
    name: string,
    notice?: string,
    problem?: ApiAnswer,
  ) {
    const answer = await api<ExamView>(request, "GET", `${base(template)}/${encodeURIComponent(name)}`);
    if (answer.status !== 200) throw refused(answer);
    return examPage(viewerOf(request), answer.body, notice, problem?.body.message ?? undefined);
  }

  app.get(`${CONSOLE_PATH}/exam`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const template = templateField(query.template, "query");
    const notice = query.done ? DONE_NOTICES[query.done] : undefined;
    return send(reply, 200, await onePage(request, template, query.name ?? "", notice));
  });

  // End now, or extend for everyone: the API's end route, as the teacher.
  app.post(`${CONSOLE_PATH}/exams/end`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const name = fields.get("name") ?? "";
    let end = fields.get("end") ?? "";
    if (end !== "now") {
      try {
        end = localTime(fields.get("endAt") ?? "", fields.get("zone")?.trim() || "UTC", "end") ?? "";
        if (!end) throw badRequest("end: a date and time are needed", "end");
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        const problem = { status: 400, body: { message: error.message } };
        return send(reply, 400, await onePage(request, template, name, undefined, problem));
      }
    }
    const from = fields.get("from");
    const answer = await api<ExamView>(request, "POST", `${base(template)}/${encodeURIComponent(name)}/end`, {
      end,
      ...(from ? { from } : {}),
    });
    if (answer.status === 200) {
      request.log.info(
        { by: request.caller?.username, template, exam: name, end },
        "console: exam end moved",
      );
      return reply.redirect(examUrl(template, name, { done: end === "now" ? "ended" : "extended" }), 303);
    }
    if (answer.status === 400 || answer.status === 409)
      return send(reply, answer.status, await onePage(request, template, name, undefined, answer));
    throw refused(answer);
  });
}
