/**
 * The console's uploads (docs/decisions/0011-coursework.md, "Uploads"): an assignment's materials
 * into a course folder, and feedback (one student's files from their row of the hand-in table, or
 * one zip laid out by student). Plain multipart forms, no script; each is forwarded as it arrives,
 * as a stream, to the REST API as the teacher (uploads.ts), so the same access reviews decide and
 * nothing is held in memory here. Registered in a context of their own, whose multipart parser
 * hands the body on untouched (the console's other forms are small and parsed whole).
 */
import type { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { UploadSummary } from "../../../api/copyPrograms.ts";
import type { HandInTable } from "../assignmentSchemas.ts";
import { HttpError, badRequest } from "../errors.ts";
import { invalidTemplateReason } from "../schemas.ts";
import { assignmentPage, assignmentUrl, assignmentsUrl, materialsPage } from "./assignmentPages.ts";
import { CONSOLE_PATH, type Viewer } from "./layout.ts";

type ApiAnswer<T> = { status: number; body: T & { message?: string; permission?: unknown } };

export interface UploadConsoleDeps {
  /** One GET to the REST API as the teacher. */
  get: <T>(request: FastifyRequest, url: string) => Promise<ApiAnswer<T>>;
  /** The request's multipart body, streamed to the REST API as the teacher. */
  forward: <T>(request: FastifyRequest, url: string) => Promise<ApiAnswer<T>>;
  send: (reply: FastifyReply, status: number, page: string) => FastifyReply;
  viewerOf: (request: FastifyRequest) => Viewer;
}

function refused(answer: ApiAnswer<unknown>): HttpError {
  return new HttpError(
    answer.status,
    answer.status === 403 ? "Forbidden" : "Refused",
    answer.body.message ?? `the API answered ${answer.status}`,
    answer.body.permission ? { extra: { permission: answer.body.permission } } : {},
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** What a feedback upload did, in a sentence or two for the notice. */
export function feedbackNotice(summary: UploadSummary, user: string | undefined): string {
  const saved = user
    ? `${plural(summary.files, "file")} saved as ${user}'s feedback.`
    : `Feedback saved for ${plural(summary.students.length, "student")}: ${summary.students
        .map((s) => `${s.name} (${plural(s.files, "file")})`)
        .join(", ")}.`;
  const unknown =
    summary.unknown.length > 0
      ? ` Not saved, as they name no student of this assignment: ${summary.unknown
          .map((u) => `${u.name} (${plural(u.files, "file")})`)
          .join(", ")}.`
      : "";
  return `${saved}${unknown} Press Return feedback to hand it back.`;
}

export function uploadConsoleRoutes(app: FastifyInstance, deps: UploadConsoleDeps): void {
  const { get, forward, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  // The body goes on untouched, as a stream, to the API's own multipart parser.
  app.removeContentTypeParser("multipart/form-data");
  app.addContentTypeParser("multipart/form-data", (_request, payload, done) => done(null, payload));

  const query = (request: FastifyRequest) => {
    const q = request.query as Record<string, string | undefined>;
    const template = q.template ?? "";
    const reason = invalidTemplateReason(template);
    if (reason) throw badRequest(`template ${reason}`, "template", "query");
    const get = (key: string) => q[key] ?? "";
    return {
      template,
      folder: get("folder"),
      path: get("path").trim(),
      name: get("name"),
      user: get("user"),
    };
  };
  const base = (template: string) => `/api/v1/templates/${encodeURIComponent(template)}`;

  // Step two of "upload materials" from the assignments page: the folder is chosen, now the files.
  app.get(`${CONSOLE_PATH}/materials`, { schema: hidden }, (request, reply) => {
    const q = query(request);
    const { folder, path } = q;
    if (folder === "") throw badRequest("choose a course folder", "folder", "query");
    // No folder inside it: the course folder's root.
    return send(
      reply,
      200,
      materialsPage(viewerOf(request), { template: q.template, folder, path: path || "." }),
    );
  });

  app.post(`${CONSOLE_PATH}/materials/upload`, { schema: hidden }, async (request, reply) => {
    const q = query(request);
    const { folder, path } = q;
    const url = `${base(q.template)}/folders/${encodeURIComponent(folder)}/files?${new URLSearchParams({ path }).toString()}`;
    const answer = await forward<UploadSummary>(request, url);
    if (answer.status !== 200) throw refused(answer);
    request.log.info(
      { by: request.caller?.username, template: q.template, folder, path, files: answer.body.files },
      "console: materials uploaded",
    );
    const value = `${plural(answer.body.files, "file")} into ${folder}/${path}`;
    // From an assignment's page: back there (Publish again hands them out); else to the new
    // assignment's form, its folder filled in.
    return reply.redirect(
      q.name
        ? assignmentUrl(q.template, q.name, { done: "uploaded", value })
        : `${assignmentsUrl(q.template, { folder, path, done: "uploaded", value })}#new`,
      303,
    );
  });

  app.post(`${CONSOLE_PATH}/assignment/feedback/upload`, { schema: hidden }, async (request, reply) => {
    const q = query(request);
    const name = q.name;
    const user = q.user || undefined;
    const answer = await forward<UploadSummary>(
      request,
      `${base(q.template)}/assignments/${encodeURIComponent(name)}/feedback/files${user ? `?${new URLSearchParams({ user }).toString()}` : ""}`,
    );
    if (answer.status !== 200) throw refused(answer);
    request.log.info(
      {
        by: request.caller?.username,
        template: q.template,
        assignment: name,
        user,
        files: answer.body.files,
      },
      "console: feedback uploaded",
    );
    const table = await get<HandInTable>(
      request,
      `${base(q.template)}/assignments/${encodeURIComponent(name)}`,
    );
    if (table.status !== 200) throw refused(table);
    // The page itself, not a redirect: the list of what was not saved can be long.
    return send(reply, 200, assignmentPage(viewerOf(request), table.body, feedbackNotice(answer.body, user)));
  });
}

/** The body a forwarding route received: the request's own stream. */
export const bodyStream = (request: FastifyRequest): Readable => request.body as Readable;
