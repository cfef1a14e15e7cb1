/**
 * The console's coursework pages (docs/decisions/0011-coursework.md): a Template's assignments and
 * a form for a new one, one assignment's hand-in table with Publish again and Return feedback.
 * Like every console action, each is a request to the REST API as the teacher (assignments.ts), so
 * the same access reviews decide and the API logs the teacher.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AssignmentList, HandInTable, AssignmentView } from "../assignmentSchemas.ts";
import { HttpError, badRequest } from "../errors.ts";
import type { UserlandStore } from "../store.ts";
import {
  EMPTY_FORM,
  assignmentPage,
  assignmentUrl,
  assignmentsPage,
  type CreateForm,
} from "./assignmentPages.ts";
import { formOf, templateField } from "./forms.ts";
import { CONSOLE_PATH, type Viewer } from "./layout.ts";
import type { Static } from "../../../api/v1alpha1/schema.ts";

type ApiAnswer<T> = { status: number; body: T & { message?: string; permission?: unknown } };

export interface AssignmentConsoleDeps {
  store: UserlandStore;
  /** One request to the REST API as the teacher. */
  api: <T>(
    request: FastifyRequest,
    method: "GET" | "POST" | "PUT" | "DELETE",
    url: string,
    json?: unknown,
  ) => Promise<ApiAnswer<T>>;
  send: (reply: FastifyReply, status: number, page: string) => FastifyReply;
  viewerOf: (request: FastifyRequest) => Viewer;
}

/** The API's refusal as the console's error (a 403 keeps what was refused, for the page's hint). */
export function refused(answer: ApiAnswer<unknown>): HttpError {
  return new HttpError(
    answer.status,
    answer.status === 403 ? "Forbidden" : "Refused",
    answer.body.message ?? `the API answered ${answer.status}`,
    {
      extra: answer.body.permission ? { permission: answer.body.permission } : {},
    },
  );
}

/** The offset of `zone` from UTC at `at`, in ms (Intl knows the zone's rules). */
function zoneOffsetMs(at: Date, zone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(at);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return (
    Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second")) -
    at.getTime()
  );
}

/**
 * A form's `datetime-local` value ("2026-12-01T09:00") in the teacher's time zone, as RFC 3339 UTC;
 * undefined when empty. The browser sends no zone, so the form asks for one.
 */
export function localTime(value: string, zone: string, field: string): string | undefined {
  if (value.trim() === "") return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value))
    throw badRequest(`${field}: expected a date and time like 2026-12-01T09:00`, field);
  const naive = new Date(`${value}Z`);
  let offset: number;
  try {
    // Twice: the offset at the guessed instant, which differs from the naive one across a DST change.
    offset = zoneOffsetMs(new Date(naive.getTime() - zoneOffsetMs(naive, zone)), zone);
  } catch {
    throw badRequest(`unknown time zone "${zone}": use a name like UTC, Europe/Berlin or Asia/Tokyo`, "zone");
  }
  return new Date(naive.getTime() - offset).toISOString();
}

function positive(value: string, field: string, scale = 1): number | undefined {
  if (value.trim() === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw badRequest(`${field} must be a whole number of at least 1`, field);
  return n * scale;
}

/** The API's create body from the console's form. */
function createBody(form: CreateForm): Record<string, unknown> {
  const zone = form.zone.trim() || "UTC";
  const deadline = localTime(form.deadline, zone, "deadline");
  const lateUntil = localTime(form.lateUntil, zone, "lateUntil");
  const maxFiles = positive(form.maxFiles, "maxFiles");
  const maxBytes = positive(form.maxMiB, "maxMiB", 1024 * 1024);
  return {
    name: form.name.trim(),
    title: form.title.trim(),
    source: { folder: form.folder, path: form.path.trim() },
    ...(deadline ? { deadline } : {}),
    ...(lateUntil ? { lateUntil } : {}),
    ...(form.class.trim() ? { class: form.class.trim() } : {}),
    ...(maxFiles || maxBytes
      ? { limits: { ...(maxFiles ? { maxFiles } : {}), ...(maxBytes ? { maxBytes } : {}) } }
      : {}),
  };
}

const NOTICES: Record<string, (v: string) => string> = {
  created: () => "Created. The platform hands it out to every student of the class.",
  publish: (v) => `Published again: release ${v}.`,
  feedback: (v) => `Feedback returned (${v}).`,
  uploaded: (v) => `Uploaded ${v}. Publish again to hand them out.`,
};

export function assignmentConsoleRoutes(app: FastifyInstance, deps: AssignmentConsoleDeps): void {
  const { store, api, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  const base = (template: string) => `/api/v1/templates/${encodeURIComponent(template)}/assignments`;

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    template: string,
    notice: string | undefined,
    problem?: { status: number; message: string; form: CreateForm },
    prefill?: { folder: string; path: string },
  ) {
    const answer = await api<Static<typeof AssignmentList>>(request, "GET", base(template));
    if (answer.status !== 200) throw refused(answer);
    const t = await store.getTemplate(template);
    const folders = (t?.spec.coursework?.folders ?? []).map((f) => f.name);
    return send(
      reply,
      problem?.status ?? 200,
      assignmentsPage(viewerOf(request), {
        template,
        items: answer.body.items,
        folders,
        hasCollection: t?.spec.coursework?.collection !== undefined,
        notice,
        problem,
        ...(prefill ? { prefill } : {}),
      }),
    );
  }

  app.get(`${CONSOLE_PATH}/assignments`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    // After an upload of materials: the new assignment's form names that folder.
    const uploaded = query.done === "uploaded" && query.folder && query.path;
    return listPage(
      request,
      reply,
      templateField(query.template, "query"),
      uploaded ? `Uploaded ${query.value ?? ""}. Create the assignment from that folder below.` : undefined,
      undefined,
      uploaded ? { folder: query.folder ?? "", path: query.path ?? "" } : undefined,
    );
  });

  app.post(`${CONSOLE_PATH}/assignments/create`, { schema: hidden }, async (request, reply) => {
    const fields = formOf(request.body);
    const template = templateField(fields.get("template"), "body");
    const form = { ...EMPTY_FORM };
    for (const key of Object.keys(form) as (keyof CreateForm)[]) form[key] = fields.get(key) ?? "";
    let body: Record<string, unknown>;
    try {
      body = createBody(form);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      return listPage(request, reply, template, undefined, { status: 400, message: error.message, form });
    }
    const answer = await api<AssignmentView>(request, "POST", base(template), body);
    if (answer.status === 201) {
      request.log.info(
        { by: request.caller?.username, template, assignment: answer.body.name },
        "console: assignment created",
      );
      return reply.redirect(assignmentUrl(template, answer.body.name, { done: "created" }), 303);
    }
    if (answer.status === 400 || answer.status === 409)
      return listPage(request, reply, template, undefined, {
        status: answer.status,
        message: answer.body.message ?? "refused",
        form,
      });
    throw refused(answer);
  });

  async function tablePage(
    request: FastifyRequest,
    reply: FastifyReply,
    template: string,
    name: string,
    notice: string | undefined,
    status = 200,
  ) {
    const answer = await api<HandInTable>(request, "GET", `${base(template)}/${encodeURIComponent(name)}`);
    if (answer.status !== 200) throw refused(answer);
    return send(reply, status, assignmentPage(viewerOf(request), answer.body, notice));
  }

  app.get(`${CONSOLE_PATH}/assignment`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const template = templateField(query.template, "query");
    const name = query.name ?? "";
    const done = query.done;
    const notice = done && NOTICES[done] ? NOTICES[done](query.value ?? "") : undefined;
    return tablePage(request, reply, template, name, notice);
  });

  app.post(`${CONSOLE_PATH}/assignment/actions`, { schema: hidden }, async (request, reply) => {
    const form = formOf(request.body);
    const template = templateField(form.get("template"), "body");
    const name = form.get("name") ?? "";
    const action = form.get("action");
    if (action !== "publish" && action !== "feedback")
      throw badRequest("choose Publish again or Return feedback", "action");
    const field = action === "publish" ? "release" : "feedbackRelease";
    const from = Number(form.get(field));
    if (!Number.isInteger(from))
      throw badRequest(`${field} is missing from the form: reload the page`, field);
    const answer = await api<AssignmentView>(
      request,
      "POST",
      `${base(template)}/${encodeURIComponent(name)}/${action}`,
      {
        from,
      },
    );
    if (answer.status === 200) {
      request.log.info(
        { by: request.caller?.username, template, assignment: name, action },
        "console: assignment action",
      );
      return reply.redirect(
        assignmentUrl(template, name, { done: action, value: String(answer.body[field]) }),
        303,
      );
    }
    // Someone else pressed it meanwhile: show the page as it is now, saying so.
    if (answer.status === 409) return tablePage(request, reply, template, name, answer.body.message, 409);
    throw refused(answer);
  });
}
