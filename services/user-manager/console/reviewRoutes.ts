/**
 * The console's review pages (docs/decisions/0015-grading.md): one hand-in's review and an
 * assignment's rubric. As every console action, each is a request to the REST API as the teacher
 * (reviewRoutes.ts), so the same access reviews decide and the API logs the teacher.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { RUBRIC_ITEM_ID_PATTERN } from "../../../api/v1alpha1/index.ts";
import { badRequest } from "../errors.ts";
import { refused, type AssignmentConsoleDeps } from "./assignmentRoutes.ts";
import { formOf, templateField } from "./forms.ts";
import { CONSOLE_PATH } from "./layout.ts";
import { reviewPage, reviewUrl, rubricPage, rubricText, rubricUrl } from "./reviewPages.ts";
import type { HandInReviewView, RubricItemView } from "../reviewRoutes.ts";

type ReviewConsoleDeps = Omit<AssignmentConsoleDeps, "store">;

/** `id | points | description` per line (empty lines skipped); 400 naming the line that is not. */
export function parseRubric(text: string): RubricItemView[] {
  return text
    .split(/\r?\n/)
    .map((line, i) => ({ line: line.trim(), number: i + 1 }))
    .filter(({ line }) => line !== "")
    .map(({ line, number }) => {
      const [id = "", points = "", ...words] = line.split("|").map((p) => p.trim());
      const description = words.join(" | ");
      if (!new RegExp(RUBRIC_ITEM_ID_PATTERN).test(id) || !/^-?\d+(\.\d+)?$/.test(points) || !description)
        throw badRequest(
          `line ${number}: expected "id | points | description" (id: lowercase letters, digits and '-'), got "${line}"`,
          "items",
        );
      return { id, points: Number(points), description };
    });
}

export function reviewConsoleRoutes(app: FastifyInstance, deps: ReviewConsoleDeps): void {
  const { api, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  const assignmentPath = (template: string, name: string) =>
    `/api/v1/templates/${encodeURIComponent(template)}/assignments/${encodeURIComponent(name)}`;
  const reviewPath = (template: string, name: string, user: string) =>
    `${assignmentPath(template, name)}/submissions/${encodeURIComponent(user)}/review`;

  async function showReview(
    request: FastifyRequest,
    reply: FastifyReply,
    template: string,
    name: string,
    user: string,
    status = 200,
    notice?: string,
  ) {
    const answer = await api<HandInReviewView>(request, "GET", reviewPath(template, name, user));
    if (answer.status !== 200) throw refused(answer);
    return send(reply, status, reviewPage(viewerOf(request), template, answer.body, notice));
  }

  app.get(`${CONSOLE_PATH}/review`, { schema: hidden }, async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    return showReview(
      request,
      reply,
      templateField(q.template, "query"),
      q.name ?? "",
      q.user ?? "",
      200,
      q.done === "saved" ? "Review saved." : undefined,
    );
  });

  app.post(`${CONSOLE_PATH}/review`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const name = fields.get("name") ?? "";
    const user = fields.get("user") ?? "";
    const raw = (fields.get("autograderScore") ?? "").trim();
    if (raw !== "" && !/^-?\d+(\.\d+)?$/.test(raw))
      return showReview(
        request,
        reply,
        template,
        name,
        user,
        400,
        `The autograder's part must be a number, got "${raw}"`,
      );
    const comment = (fields.get("comment") ?? "").trim();
    const counted = fields.get("countedVersion") ?? "";
    const answer = await api(request, "PUT", reviewPath(template, name, user), {
      items: fields.getAll("item"),
      ...(comment ? { comment } : {}),
      autograderScore: raw === "" ? null : Number(raw),
      countedVersion: /^\d+$/.test(counted) ? Number(counted) : null,
    });
    if (answer.status === 400)
      return showReview(request, reply, template, name, user, 400, answer.body.message ?? "refused");
    if (answer.status !== 200) throw refused(answer);
    return reply.redirect(reviewUrl(template, name, user, { done: "saved" }), 303);
  });

  async function showRubric(
    request: FastifyRequest,
    reply: FastifyReply,
    template: string,
    name: string,
    status = 200,
    notice?: string,
    text?: string,
  ) {
    const answer = await api<{ rubric: RubricItemView[] } & Record<string, unknown>>(
      request,
      "GET",
      `${assignmentPath(template, name)}/rubric`,
    );
    if (answer.status !== 200) throw refused(answer);
    return send(
      reply,
      status,
      rubricPage(viewerOf(request), template, name, text ?? rubricText(answer.body.rubric), notice),
    );
  }

  app.get(`${CONSOLE_PATH}/rubric`, { schema: hidden }, async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    return showRubric(
      request,
      reply,
      templateField(q.template, "query"),
      q.name ?? "",
      200,
      q.done === "saved"
        ? "Rubric saved: every hand-in's total counts the items as they are now."
        : undefined,
    );
  });

  app.post(`${CONSOLE_PATH}/rubric`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const name = fields.get("name") ?? "";
    const text = fields.get("items") ?? "";
    let items: RubricItemView[];
    try {
      items = parseRubric(text);
    } catch (error) {
      return showRubric(request, reply, template, name, 400, (error as Error).message, text);
    }
    const answer = await api(request, "PUT", `${assignmentPath(template, name)}/rubric`, { items });
    if (answer.status === 400)
      return showRubric(request, reply, template, name, 400, answer.body.message, text);
    if (answer.status !== 200) throw refused(answer);
    return reply.redirect(rubricUrl(template, name, { done: "saved" }), 303);
  });
}
