/**
 * The end of a term (docs/decisions/0011-coursework.md, "End of term"): a teacher archives a class
 * (a ClassArchive the operator runs: stop, archive, read back, dry run), reads the dry run, downloads
 * the class's zip, and ends the class by confirming the dry run's hash. The user-manager deletes
 * nothing: the operator deletes exactly the list whose hash was confirmed.
 *
 * Who may: as the other coursework routes, the person's own RBAC in the Template's namespace: the
 * verb on `classarchives` and `update templates/coursework` on the Template (the course teacher's
 * right; the chart's userland-course-teacher role holds both).
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { CLASS_ARCHIVE_PHASES, CLASS_ARCHIVES, type ClassArchive } from "../../api/v1alpha1/index.ts";
import { StringEnum, Type, type Static } from "../../api/v1alpha1/schema.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import { authorizeTeacher as authorizeFor } from "./auth/teaches.ts";
import type { Resource, Verb } from "./auth/caller.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import type { DownloadSender } from "./downloads.ts";
import { conflict, notFound } from "./errors.ts";
import { ErrorBody, TemplateNameSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export const CLASS_ARCHIVE_RESOURCE: Resource = { resource: CLASS_ARCHIVES };

const SHA256 = Type.String({ pattern: "^[0-9a-f]{64}$" });
const Listed = Type.Object({
  user: Type.String(),
  userland: Type.String(),
  claims: Type.Array(Type.String()),
  reason: Type.Optional(Type.String()),
});

export const ClassArchiveView = Type.Object({
  name: Type.String(),
  templateName: Type.String(),
  class: Type.Union([Type.String(), Type.Null()]),
  phase: Type.Union([StringEnum([...CLASS_ARCHIVE_PHASES]), Type.Null()]),
  message: Type.Union([Type.String(), Type.Null()]),
  students: Type.Integer({ minimum: 0 }),
  plan: Type.Array(
    Type.Object({
      user: Type.String(),
      userland: Type.String(),
      claims: Type.Array(Type.String(), { description: "The volumes read into the zip." }),
      running: Type.Boolean({ description: "Running when the plan was made: stopped by Stop and archive." }),
    }),
    {
      description:
        "The class: whose environments are stopped and whose volumes read (before Stop and archive, nothing is).",
    },
  ),
  verified: Type.Integer({ minimum: 0 }),
  toDelete: Type.Array(Listed, {
    description: "What ending the class deletes: students the read-back verified.",
  }),
  kept: Type.Array(Listed, { description: "What ending the class keeps, and why." }),
  dryRunHash: Type.Union([SHA256, Type.Null()], {
    description: "Send it back as confirm to end the class: a list that changed since ends nothing.",
  }),
  archive: Type.Union([
    Type.Object({
      path: Type.String({ description: "In the Template's collection claim." }),
      bytes: Type.Union([Type.Integer(), Type.Null()]),
      sha256: Type.Union([SHA256, Type.Null()]),
      verified: Type.Boolean(),
    }),
    Type.Null(),
  ]),
  end: Type.Boolean({ description: "Ending was asked for (spec.end)." }),
  deleted: Type.Union([Type.Integer(), Type.Null()]),
  endedAt: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.Union([Type.String(), Type.Null()]),
});
export type ClassArchiveView = Static<typeof ClassArchiveView>;
const ClassArchiveList = Type.Object({ items: Type.Array(ClassArchiveView) });

export function toClassArchiveView(c: ClassArchive): ClassArchiveView {
  const s = c.status ?? {};
  const listed = (l: NonNullable<typeof s.toDelete>) =>
    l.map((x) => ({
      user: x.user,
      userland: x.userland,
      claims: x.claims,
      ...(x.reason ? { reason: x.reason } : {}),
    }));
  return {
    name: c.metadata.name ?? "",
    templateName: c.spec.templateName,
    class: c.spec.class ?? null,
    phase: s.phase ?? null,
    message: s.message ?? null,
    students: s.studentCount ?? 0,
    plan: (s.students ?? []).map((x) => ({
      user: x.user,
      userland: x.userland,
      claims: x.claims,
      running: x.enabledBefore !== false,
    })),
    verified: s.verifiedCount ?? 0,
    toDelete: listed(s.toDelete ?? []),
    kept: listed(s.kept ?? []),
    dryRunHash: s.dryRunHash ?? null,
    archive: s.archive
      ? {
          path: s.archive.path,
          bytes: s.archive.bytes ?? null,
          sha256: s.archive.sha256 ?? null,
          verified: s.archive.verifiedAt !== undefined,
        }
      : null,
    end: c.spec.end === true,
    deleted: s.deleted ?? null,
    endedAt: s.endedAt ?? null,
    createdAt: c.metadata.creationTimestamp ? String(c.metadata.creationTimestamp) : null,
  };
}

export interface ClassArchiveRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  download: DownloadSender;
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const TemplateParams = Type.Object({ template: TemplateNameSchema });
const NameParams = Type.Object({
  template: TemplateNameSchema,
  name: Type.String({ minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" }),
});

export const classArchiveRoutes: FastifyPluginCallbackTypebox<ClassArchiveRouteOptions> = (
  app,
  opts,
  done,
) => {
  const { store, coursework, download } = opts;

  /** 403 unless the person may `verb` classarchives and teaches the Template. */
  const authorizeTeacher = (
    request: FastifyRequest,
    verb: Verb,
    templateName: string,
    namespace: string,
    name?: string,
  ) => authorizeFor(request, CLASS_ARCHIVE_RESOURCE, verb, templateName, namespace, name);

  async function classArchiveOf(
    namespace: string,
    templateName: string,
    name: string,
  ): Promise<ClassArchive> {
    const c = await coursework.getClassArchive(namespace, name);
    if (!c || c.spec.templateName !== templateName)
      throw notFound(`Template "${templateName}" has no class archive "${name}"`, "name", "params");
    return c;
  }

  app.get(
    "/api/v1/templates/:template/classarchives",
    {
      schema: {
        tags: ["end of term"],
        summary: "A Template's class archives, newest first (teachers)",
        description:
          "Needs list on classarchives.userland.dev and update on templates/coursework (the Template) in its namespace.",
        params: TemplateParams,
        response: { 200: ClassArchiveList, ...errors },
      },
    },
    async (request) => {
      const { namespace } = await store.templateOrNotFound(request.params.template);
      await authorizeTeacher(request, "list", request.params.template, namespace);
      const items = await coursework.classArchivesOf(namespace, request.params.template);
      return { items: items.map(toClassArchiveView) };
    },
  );

  app.post(
    "/api/v1/templates/:template/classarchives",
    {
      schema: {
        tags: ["end of term"],
        summary: "Plan a class's archive (teachers): whose environments it stops and whose volumes it reads",
        description:
          "Creates a ClassArchive (409 while another of the same class is not Ended, Cancelled or Failed) as a plan: the operator lists the class's students, their environments (running or not) and volumes, and stops nothing. POST …/stop then stops the class's environments, writes every student's volumes and the hand-ins into one zip in the collection, reads it back and lists what an end would delete; POST …/cancel at any step before the end starts every environment it stopped again. Nothing is deleted until the class is ended with the dry run's hash. Needs create on classarchives and update on templates/coursework.",
        params: TemplateParams,
        body: Type.Object(
          {
            class: Type.String({
              minLength: 1,
              maxLength: 63,
              description:
                'Only the Userlands labelled with this class; "*": every environment of the Template, said on purpose (a request without a class is refused, 400).',
            }),
          },
          { additionalProperties: false },
        ),
        response: { 201: ClassArchiveView, ...errors },
      },
    },
    async (request, reply) => {
      const { template } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "create", template, namespace);
      // A second click would stop and archive the same class twice: one at a time per class.
      const running = (await coursework.classArchivesOf(namespace, template)).find(
        (c) =>
          c.spec.class === request.body.class &&
          !["Ended", "Cancelled", "Failed"].includes(c.status?.phase ?? ""),
      );
      if (running)
        throw conflict(`this class is being archived already: ${running.metadata.name}`, {
          name: running.metadata.name,
        });
      const created = await coursework.createClassArchive(
        namespace,
        template,
        request.body.class,
        request.caller?.username ?? "",
      );
      request.log.info(
        {
          by: request.caller?.username,
          template,
          class: request.body.class,
          classArchive: created.metadata.name,
        },
        "class archive created",
      );
      return reply.code(201).send(toClassArchiveView(created));
    },
  );

  app.get(
    "/api/v1/templates/:template/classarchives/:name",
    {
      schema: {
        tags: ["end of term"],
        summary: "One class archive: its step, the dry run (what will be deleted, what is kept and why)",
        description: "Needs get on the classarchive and update on templates/coursework.",
        params: NameParams,
        response: { 200: ClassArchiveView, ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "get", template, namespace, name);
      return toClassArchiveView(await classArchiveOf(namespace, template, name));
    },
  );

  /** Sets one of spec's one-way switches (archive, cancel) on the resourceVersion read. */
  const switchOn = (
    action: "stop" | "cancel",
    field: "archive" | "cancel",
    summary: string,
    description: string,
    allowed: (phase: string) => boolean,
  ) =>
    app.post(
      `/api/v1/templates/:template/classarchives/:name/${action}`,
      {
        schema: {
          tags: ["end of term"],
          summary,
          description: `${description} Needs patch on the classarchive and update on templates/coursework.`,
          params: NameParams,
          response: { 200: ClassArchiveView, ...errors },
        },
      },
      async (request) => {
        const { template, name } = request.params;
        const { namespace } = await store.templateOrNotFound(template);
        await authorizeTeacher(request, "patch", template, namespace, name);
        const current = await classArchiveOf(namespace, template, name);
        const phase = current.status?.phase ?? "Planned";
        if (current.spec[field] === true) return toClassArchiveView(current);
        if (current.spec.end) throw conflict("the end of the class was confirmed: nothing can change now");
        if (!allowed(phase)) throw conflict(`the class archive is ${phase}: it cannot ${action} now`);
        try {
          const updated = await coursework.switchClassArchive(current, field);
          request.log.info(
            { by: request.caller?.username, template, classArchive: name },
            `class archive ${action}`,
          );
          return toClassArchiveView(updated);
        } catch (error) {
          if (isConflict(error)) throw conflict("the class archive changed meanwhile: read it again");
          throw error;
        }
      },
    );
  switchOn(
    "stop",
    "archive",
    "Stop the planned class and archive it (teachers)",
    "Sets spec.archive: the operator stops the environments the plan lists, writes the zip, reads it back and lists the dry run. 409 unless the archive is Planned.",
    (phase) => phase === "Planned",
  );
  switchOn(
    "cancel",
    "cancel",
    "Cancel a class archive and start its environments again (teachers)",
    "Sets spec.cancel: the operator starts every environment the archive stopped again, as it was, and deletes nothing (a written zip stays in the collection). 409 once the end was confirmed.",
    (phase) => !["Ending", "Ended", "Cancelled"].includes(phase),
  );

  app.post(
    "/api/v1/templates/:template/classarchives/:name/end",
    {
      schema: {
        tags: ["end of term"],
        summary: "End the class: delete the dry run's Userlands and claims (teachers)",
        description:
          "confirm must be the dry run's hash as last read (409 otherwise, and the operator would refuse it too): a list that changed since ends nothing. The operator deletes exactly the listed Userlands and their claims, never an unverified one. Needs patch on the classarchive and update on templates/coursework.",
        params: NameParams,
        body: Type.Object({ confirm: SHA256 }, { additionalProperties: false }),
        response: { 200: ClassArchiveView, ...errors },
      },
    },
    async (request) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "patch", template, namespace, name);
      const current = await classArchiveOf(namespace, template, name);
      const hash = current.status?.dryRunHash;
      if (current.status?.phase !== "DryRun" || !hash)
        throw conflict(
          `the class archive is ${current.status?.phase ?? "starting"}: there is no dry run to confirm`,
        );
      if (request.body.confirm !== hash)
        throw conflict("the dry run changed since you read it: read it again and confirm the new list", {
          dryRunHash: hash,
        });
      try {
        const updated = await coursework.endClassArchive(current, request.body.confirm);
        request.log.info(
          { by: request.caller?.username, template, classArchive: name, toDelete: hash },
          "class end confirmed",
        );
        return toClassArchiveView(updated);
      } catch (error) {
        if (isConflict(error)) throw conflict("the class archive changed meanwhile: read it again");
        throw error;
      }
    },
  );

  app.get(
    "/api/v1/templates/:template/classarchives/:name/archive",
    {
      schema: {
        tags: ["end of term", "downloads"],
        summary: "The class's zip as it was written and read back (teachers)",
        description:
          "Served as it is by an archive pod and streamed. 409 until the zip was read back. Needs get on the classarchive and update on templates/coursework.",
        params: NameParams,
        response: {
          200: Type.Unsafe<unknown>({ type: "string", format: "binary", description: "application/zip" }),
          ...errors,
          413: ErrorBody,
          422: ErrorBody,
          503: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { template, name } = request.params;
      const { namespace } = await store.templateOrNotFound(template);
      await authorizeTeacher(request, "get", template, namespace, name);
      const c = await classArchiveOf(namespace, template, name);
      if (!c.status?.archive?.verifiedAt)
        throw conflict("the class's zip has not been read back yet: wait for the dry run");
      return download(
        request,
        reply,
        namespace,
        { classArchive: { templateName: template, name } },
        `${name}.zip`,
      );
    },
  );

  done();
};
