/**
 * Downloads (docs/decisions/0011-coursework.md, "Downloads"): a student's home volume and an
 * assignment's hand-ins, each a zip made by an archive pod and streamed through here to the caller
 * (fastify pipes the pod's answer with backpressure; nothing is held in memory).
 *
 * Students: for the user named in the path, by whoever may `get` the subresource `userlands/archive`
 * (no handler: it exists so RBAC can name "downloads for students"; the chart grants it to the
 * proxy, whose home page names only the session's own user). Teachers: as the hand-in table, `get`
 * the assignment and `update templates/coursework` on the Template.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { collectionUserFolder } from "../../api/naming.ts";
import { USERLANDS, type ArchiveSpec } from "../../api/v1alpha1/index.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { ASSIGNMENT_RESOURCE } from "./assignments.ts";
import { authorizeTeaches } from "./auth/teaches.ts";
import { AssignmentNameSchema } from "./assignmentSchemas.ts";
import type { Resource } from "./auth/caller.ts";
import type { ArchiveTransfers } from "./archiveTransfer.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import { notFound } from "./errors.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

/** "Downloads a student's home for them": no handler, it exists for RBAC to name (the proxy holds it). */
export const ARCHIVE_RESOURCE: Resource = { resource: USERLANDS, subresource: "archive" };

export interface DownloadRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  download: DownloadSender;
}

/** Streams an archive pod's zip of `source` to the caller as `filename`. */
export type DownloadSender = (
  request: FastifyRequest,
  reply: FastifyReply,
  namespace: string,
  source: ArchiveSpec["source"],
  filename: string,
) => Promise<FastifyReply>;

/** The one way a download is sent: the Archive goes once the response ends, whichever way. */
export function downloadSender(transfers: ArchiveTransfers): DownloadSender {
  return async (request, reply, namespace, source, filename) => {
    const transfer = await transfers.start(namespace, source, request.caller?.username ?? "");
    request.log.info({ by: request.caller?.username, archive: transfer.archive, source }, "download started");
    const end = () => {
      // A browser that leaves mid-way closes the pod's connection too: the pod ends, the Archive goes.
      if (!transfer.body.complete) transfer.body.destroy();
      transfer
        .cleanUp()
        .catch((error: unknown) =>
          request.log.warn(
            { err: (error as Error).message, archive: transfer.archive },
            "Archive not deleted",
          ),
        );
    };
    // The caller may have left while the pod started: nobody will read the zip.
    if (reply.raw.destroyed) {
      end();
      return reply;
    }
    reply.raw.once("close", end);
    return reply
      .header("content-type", "application/zip")
      .header("content-disposition", `attachment; filename="${filename}"`)
      .header("cache-control", "no-store")
      .send(transfer.body);
  };
}

const errors = {
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  413: ErrorBody,
  422: ErrorBody,
  503: ErrorBody,
};
const ZIP = {
  200: Type.Unsafe<unknown>({ type: "string", format: "binary", description: "application/zip" }),
};

export const downloadRoutes: FastifyPluginCallbackTypebox<DownloadRouteOptions> = (app, opts, done) => {
  const { store, coursework, download: send } = opts;

  app.get(
    "/api/v1/users/:user/archive",
    {
      schema: {
        tags: ["downloads"],
        summary: "A student's home volume as a zip (the home page's Download my work)",
        description:
          "Made by an archive pod and streamed. Needs get on userlands/archive (the proxy, for the signed-in student only). 404 when the user has no Userland of the Template; 413 over the archive limits; 422 when the volume cannot be read.",
        params: Type.Object({ user: UserSchema }),
        querystring: Type.Object({ template: TemplateNameSchema }),
        response: { ...ZIP, ...errors },
      },
    },
    async (request, reply) => {
      const { user } = request.params;
      const templateName = request.query.template;
      const { namespace } = await store.templateOrNotFound(templateName, undefined);
      await request.authorize("get", undefined, namespace, ARCHIVE_RESOURCE);
      const [userland] = await store.findPair(user, templateName, [namespace]);
      if (!userland) throw notFound(`${user} has no Userland of Template "${templateName}"`, "user");
      return send(
        request,
        reply,
        namespace,
        { home: { user, templateName } },
        `${collectionUserFolder(user)}-${templateName}.zip`,
      );
    },
  );

  app.get(
    "/api/v1/templates/:template/assignments/:name/archive",
    {
      schema: {
        tags: ["downloads"],
        summary: "Every hand-in of an assignment as one zip, a folder per student (teachers)",
        description:
          "The collection's handins/<assignment>/, made by an archive pod and streamed. Needs get on the assignment and update on templates/coursework (the Template).",
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema }),
        response: { ...ZIP, ...errors },
      },
    },
    async (request, reply) => {
      const { template: templateName, name } = request.params;
      const { namespace } = await store.templateOrNotFound(templateName, undefined);
      await request.authorize("get", name, namespace, ASSIGNMENT_RESOURCE);
      await authorizeTeaches(request, templateName, namespace);
      const a = await coursework.getAssignment(namespace, name);
      if (!a || a.spec.templateName !== templateName)
        throw notFound(`Template "${templateName}" has no assignment "${name}"`, "name");
      return send(
        request,
        reply,
        namespace,
        { handins: { templateName, assignment: name } },
        `${templateName}-${name}-handins.zip`,
      );
    },
  );

  done();
};
