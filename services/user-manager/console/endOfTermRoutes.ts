/**
 * The console's end-of-term routes: each a request to the REST API as the teacher
 * (classArchives.ts), so the same access reviews decide and the API logs the teacher.
 */
import type { FastifyInstance } from "fastify";
import type { ClassArchiveView } from "../classArchives.ts";
import { WHOLE_TEMPLATE } from "../../../api/v1alpha1/index.ts";
import { badRequest } from "../errors.ts";
import type { AssignmentConsoleDeps } from "./assignmentRoutes.ts";
import { refused } from "./assignmentRoutes.ts";
import { classArchivePage, classArchiveUrl, endOfTermPage } from "./endOfTermPages.ts";
import { formOf, templateField } from "./forms.ts";
import { CONSOLE_PATH } from "./layout.ts";

/** What an action's redirect says, while the steps it started are still under way (a refresh later would repeat it as news). */
const NOTICES: Record<string, { text: string; until: ReadonlyArray<ClassArchiveView["phase"]> }> = {
  created: {
    text: "Planned: nothing is stopped. Read the list, then Stop and archive, or Cancel.",
    until: [null, "Planned"],
  },
  stop: {
    text: "Archiving. The class's environments stop now; refresh to follow the steps.",
    until: ["Planned", "Stopping", "Archiving", "Verifying"],
  },
  cancel: {
    text: "Cancelled: the environments the archive stopped start again.",
    until: ["Cancelled"],
  },
  ending: {
    text: "Ending the class: the listed environments and their volumes are being deleted.",
    until: ["DryRun", "Ending"],
  },
};

export function endOfTermConsoleRoutes(
  app: FastifyInstance,
  deps: Omit<AssignmentConsoleDeps, "store">,
): void {
  const { api, send, viewerOf } = deps;
  const hidden = { hide: true } as const;
  const base = (template: string) => `/api/v1/templates/${encodeURIComponent(template)}/classarchives`;

  app.get(`${CONSOLE_PATH}/end-of-term`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const template = templateField(query.template, "query");
    const klass = query.class || undefined;
    const answer = await api<{ items: ClassArchiveView[] }>(request, "GET", base(template));
    if (answer.status !== 200) throw refused(answer);
    // The Template's own page lists the archives of all of it ("*", or none before spec.class was required).
    const items = answer.body.items.filter((c) => (c.class ?? WHOLE_TEMPLATE) === (klass ?? WHOLE_TEMPLATE));
    return send(reply, 200, endOfTermPage(viewerOf(request), template, klass, items));
  });

  app.post(`${CONSOLE_PATH}/end-of-term/create`, { schema: hidden }, async (request, reply) => {
    const form = formOf(request.body);
    const template = templateField(form.get("template"), "body");
    const klass = form.get("class") || undefined;
    // No class on the page: the whole Template, which the page says.
    const answer = await api<ClassArchiveView>(request, "POST", base(template), {
      class: klass ?? WHOLE_TEMPLATE,
    });
    if (answer.status !== 201) throw refused(answer);
    request.log.info(
      { by: request.caller?.username, template, class: klass, classArchive: answer.body.name },
      "console: class archive created",
    );
    return reply.redirect(classArchiveUrl(template, answer.body.name, { done: "created" }), 303);
  });

  app.get(`${CONSOLE_PATH}/class-archive`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const template = templateField(query.template, "query");
    const answer = await api<ClassArchiveView>(
      request,
      "GET",
      `${base(template)}/${encodeURIComponent(query.name ?? "")}`,
    );
    if (answer.status !== 200) throw refused(answer);
    const notice = NOTICES[query.done ?? ""];
    const current = notice?.until.includes(answer.body.phase) ? notice.text : undefined;
    return send(reply, 200, classArchivePage(viewerOf(request), answer.body, current));
  });

  for (const action of ["stop", "cancel"] as const)
    app.post(`${CONSOLE_PATH}/class-archive/${action}`, { schema: hidden }, async (request, reply) => {
      const form = formOf(request.body);
      const template = templateField(form.get("template"), "body");
      const name = form.get("name") ?? "";
      const answer = await api<ClassArchiveView>(
        request,
        "POST",
        `${base(template)}/${encodeURIComponent(name)}/${action}`,
        {},
      );
      if (answer.status !== 200) throw refused(answer);
      request.log.info(
        { by: request.caller?.username, template, classArchive: name },
        `console: class archive ${action}`,
      );
      return reply.redirect(classArchiveUrl(template, name, { done: action }), 303);
    });

  app.post(`${CONSOLE_PATH}/class-archive/end`, { schema: hidden }, async (request, reply) => {
    const form = formOf(request.body);
    const template = templateField(form.get("template"), "body");
    const name = form.get("name") ?? "";
    if (form.get("understood") !== "yes")
      throw badRequest("tick the box to say you understand what ending the class deletes", "understood");
    const path = `${base(template)}/${encodeURIComponent(name)}`;
    const answer = await api<ClassArchiveView>(request, "POST", `${path}/end`, {
      confirm: form.get("confirm") ?? "",
    });
    if (answer.status === 200) {
      request.log.info(
        { by: request.caller?.username, template, classArchive: name },
        "console: class end confirmed",
      );
      return reply.redirect(classArchiveUrl(template, name, { done: "ending" }), 303);
    }
    // The list changed since the page was read: show it as it is now, saying so.
    if (answer.status === 409) {
      const now = await api<ClassArchiveView>(request, "GET", path);
      if (now.status !== 200) throw refused(now);
      return send(reply, 409, classArchivePage(viewerOf(request), now.body, answer.body.message));
    }
    throw refused(answer);
  });
}
