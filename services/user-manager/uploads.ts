/**
 * Uploads (docs/decisions/0011-coursework.md, "Uploads"): a teacher's files into a course folder
 * (an assignment's materials) or into an assignment's feedback, streamed from the request through
 * this service into an upload pod the operator makes from an Archive with a `target` (the pod alone
 * mounts the folder, read-write at only that folder). Nothing is held in memory: each file of the
 * multipart body is piped to the pod as it arrives (@fastify/multipart, busboy), with backpressure.
 *
 * Authorization as the other coursework routes: a Template's course folders are written by its
 * teachers (`update templates/coursework`); feedback needs `update` on the assignment as well, as
 * Return feedback does.
 */
import multipart from "@fastify/multipart";
import { TypeBoxValidatorCompiler, type FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest, FastifySchemaCompiler } from "fastify";
import type { TSchema } from "../../api/v1alpha1/schema.ts";
import { formatBytes } from "../../lib/formatBytes.ts";
import { COURSE_FOLDER_NAME_PATTERN, type ArchiveSpec } from "../../api/v1alpha1/index.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { DEFAULT_LIMITS, type UploadSummary } from "../../api/copyPrograms.ts";
import { ASSIGNMENT_RESOURCE } from "./assignments.ts";
import { authorizeTeaches } from "./auth/teaches.ts";
import { AssignmentNameSchema } from "./assignmentSchemas.ts";
import type { ArchiveTransfers, UploadSession } from "./archiveTransfer.ts";
import type { CourseworkStore } from "./courseworkStore.ts";
import { HttpError, badRequest, notFound } from "./errors.ts";
import { ErrorBody, TemplateNameSchema, UserSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export interface UploadRouteOptions {
  store: UserlandStore;
  coursework: CourseworkStore;
  transfers: ArchiveTransfers;
}

/** The upload pod's limits (copy.ts's defaults): refused here already, before a byte more is sent. */
export const UPLOAD_LIMITS = { maxFiles: DEFAULT_LIMITS.maxFiles, maxBytes: DEFAULT_LIMITS.maxBytes };

const Summary = Type.Object(
  {
    files: Type.Integer({ description: "Files written." }),
    bytes: Type.Integer(),
    sha256: Type.String({
      description: "SHA-256 of the written files' manifest (sha256sum's lines, sorted).",
    }),
    students: Type.Array(Type.Object({ name: Type.String(), folder: Type.String(), files: Type.Integer() }), {
      description: "A zip laid out by student: each top-level folder that named a student.",
    }),
    unknown: Type.Array(Type.Object({ name: Type.String(), files: Type.Integer() }), {
      description: "A zip laid out by student: top-level names that match no student (not written).",
    }),
  },
  { additionalProperties: false },
);

const errors = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  413: ErrorBody,
  422: ErrorBody,
  503: ErrorBody,
};

/**
 * The multipart body, for the OpenAPI document: the parts are read as a stream by the handler, so
 * fastify validates no body here (the per-route validator below leaves the body alone).
 */
const FilesBody = Type.Object({
  files: Type.Array(Type.Unsafe<unknown>({ type: "string", format: "binary" }), {
    description: "The files (any part name); each .zip is unpacked.",
  }),
});
const validateAllButBody: FastifySchemaCompiler<TSchema> = (route) =>
  route.httpPart === "body" ? () => true : TypeBoxValidatorCompiler(route);

const MULTIPART = {
  consumes: ["multipart/form-data"],
  description:
    "multipart/form-data: any number of file parts (a file input with `multiple`); each file goes in by its name (a name with folders, as a folder input sends it, keeps them), each .zip is unpacked (its links, FIFOs, devices, encrypted entries and names such as ../x are refused). " +
    `At most ${UPLOAD_LIMITS.maxFiles} files and ${formatBytes(UPLOAD_LIMITS.maxBytes)} in all (413). Files replace files of the same path; nothing is deleted. The upload is taken whole or not at all (422 with the reason).`,
};

/** A limit passed in the multipart body itself, in the same words as the pod's. */
function multipartError(error: unknown): unknown {
  const code = (error as { code?: string }).code;
  if (code === "FST_REQ_FILE_TOO_LARGE")
    return new HttpError(
      413,
      "PayloadTooLarge",
      `Too much data: a file is larger than ${formatBytes(UPLOAD_LIMITS.maxBytes)}, the limit.`,
    );
  if (code === "FST_FILES_LIMIT" || code === "FST_PARTS_LIMIT")
    return new HttpError(
      413,
      "PayloadTooLarge",
      `Too many files: the upload holds more than ${UPLOAD_LIMITS.maxFiles}, the limit.`,
    );
  return error;
}

/**
 * Streams the request's files into a new upload pod for `target` and commits them; the Archive
 * (and its pod) is deleted whatever happens. On a refusal the rest of the body is read and
 * dropped, so the browser gets the answer rather than a reset connection.
 */
export async function receiveFiles(
  request: FastifyRequest,
  transfers: ArchiveTransfers,
  namespace: string,
  target: NonNullable<ArchiveSpec["target"]>,
): Promise<UploadSummary> {
  if (!request.isMultipart()) throw badRequest("send the files as multipart/form-data");
  let session: UploadSession | undefined;
  let failure: unknown;
  try {
    const parts = request.parts({
      limits: {
        files: UPLOAD_LIMITS.maxFiles,
        parts: UPLOAD_LIMITS.maxFiles + 20,
        fileSize: UPLOAD_LIMITS.maxBytes,
        fields: 20,
        fieldSize: 4096,
      },
    });
    for await (const part of parts) {
      if (part.type !== "file") continue;
      // An empty file input sends one part without a name.
      if (failure !== undefined || part.filename === "") {
        part.file.resume();
        continue;
      }
      try {
        session ??= await transfers.upload(namespace, target, request.caller?.username ?? "");
        if (/\.zip$/i.test(part.filename)) await session.zip(part.file);
        else await session.file(part.filename, part.file);
        if (part.file.truncated) throw multipartError({ code: "FST_REQ_FILE_TOO_LARGE" });
      } catch (error) {
        failure = error;
        part.file.resume();
      }
    }
  } catch (error) {
    failure ??= error;
  }
  try {
    if (failure !== undefined) throw multipartError(failure);
    if (!session) throw badRequest("choose at least one file (or a zip)", "files");
    const summary = await session.commit();
    request.log.info(
      { by: request.caller?.username, archive: session.archive, target, files: summary.files },
      "upload committed",
    );
    return summary;
  } finally {
    await session
      ?.cleanUp()
      .catch((error: unknown) =>
        request.log.warn({ err: (error as Error).message, archive: session?.archive }, "Archive not deleted"),
      );
  }
}

export const uploadRoutes: FastifyPluginAsyncTypebox<UploadRouteOptions> = async (app, opts) => {
  const { store, coursework, transfers } = opts;
  // preservePath: a folder input's names keep their folders (the pod checks every name).
  await app.register(multipart, { preservePath: true });

  app.post(
    "/api/v1/templates/:template/folders/:folder/files",
    {
      validatorCompiler: validateAllButBody,
      schema: {
        tags: ["uploads"],
        summary: "Upload files into a course folder (teachers): an assignment's materials",
        description: `Into path (made when missing) of the course folder, through an upload pod that mounts only that folder. Needs update on templates/coursework (the Template). ${MULTIPART.description}`,
        consumes: MULTIPART.consumes,
        body: FilesBody,
        params: Type.Object({
          template: TemplateNameSchema,
          folder: Type.String({ pattern: COURSE_FOLDER_NAME_PATTERN, maxLength: 40 }),
        }),
        querystring: Type.Object({
          path: Type.String({
            minLength: 1,
            maxLength: 1024,
            description: 'The folder inside the course folder, e.g. week1/lab; "." (or "/") for its root.',
          }),
        }),
        response: { 200: Summary, ...errors },
      },
    },
    async (request) => {
      const { template: templateName, folder } = request.params;
      // "." is the course folder's root (issue 44 item 7: materials could not go there).
      const path = request.query.path.replace(/\/+$/, "") || ".";
      const { template, namespace } = await store.templateOrNotFound(templateName);
      await authorizeTeaches(request, templateName, namespace);
      if (!(template.spec.coursework?.folders ?? []).some((f) => f.name === folder))
        throw notFound(
          `"${folder}" is not a course folder of Template "${templateName}"`,
          "folder",
          "params",
        );
      if (path.startsWith("/") || path.split("/").includes("..") || path.includes("\\"))
        throw badRequest(
          "path must be a folder inside the course folder (\".\" for its root), without '..' or a leading '/'",
          "path",
          "query",
        );
      return receiveFiles(request, transfers, namespace, { materials: { templateName, folder, path } });
    },
  );

  app.post(
    "/api/v1/templates/:template/assignments/:name/feedback/files",
    {
      validatorCompiler: validateAllButBody,
      schema: {
        tags: ["uploads"],
        summary: "Upload feedback (teachers): one student's files, or a zip laid out by student",
        description: `With user: the files go to that student's feedback folder. Without: each zip's (or file's) top-level folder names a student (their identity, or their folder as in the hand-ins zip) and its files go to that student; top-level names that match no student of the assignment are listed under unknown and not written. The collection's feedback/<assignment>/<student>/, handed back with the next Return feedback. Needs update on the assignment and on templates/coursework (the Template). ${MULTIPART.description}`,
        consumes: MULTIPART.consumes,
        body: FilesBody,
        params: Type.Object({ template: TemplateNameSchema, name: AssignmentNameSchema }),
        querystring: Type.Object({ user: Type.Optional(UserSchema) }),
        response: { 200: Summary, ...errors },
      },
    },
    async (request) => {
      const { template: templateName, name } = request.params;
      const { user } = request.query;
      const { namespace } = await store.templateOrNotFound(templateName);
      await request.authorize("update", name, namespace, ASSIGNMENT_RESOURCE);
      await authorizeTeaches(request, templateName, namespace);
      const a = await coursework.getAssignment(namespace, name);
      if (!a || a.spec.templateName !== templateName)
        throw notFound(`Template "${templateName}" has no assignment "${name}"`, "name", "params");
      if (user !== undefined && !(await coursework.submissionOf(a, user)))
        throw notFound(`${user} is not a student of assignment "${name}"`, "user", "query");
      return receiveFiles(request, transfers, namespace, {
        feedback: { templateName, assignment: name, ...(user === undefined ? {} : { user }) },
      });
    },
  );
};
