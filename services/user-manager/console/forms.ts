/**
 * The console's form bodies: `application/x-www-form-urlencoded` (every button) and
 * `multipart/form-data` (the roster upload, a file input). Both become one URLSearchParams, a file
 * as its text, so a handler reads either the same way. Multipart is parsed by the runtime's own
 * fetch implementation (undici's Response.formData), not by a parser of ours.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { badRequest } from "../errors.ts";
import { invalidTemplateReason } from "../schemas.ts";

export function installFormParsers(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit },
    (_request, body, done) => done(null, new URLSearchParams(body.toString())),
  );
  app.addContentTypeParser(
    "multipart/form-data",
    { parseAs: "buffer", bodyLimit },
    async (request: FastifyRequest, body: Buffer) => {
      let form: FormData;
      try {
        const headers = { "content-type": request.headers["content-type"] ?? "" };
        form = await new Response(new Uint8Array(body), { headers }).formData();
      } catch {
        throw badRequest("the form could not be read (malformed multipart/form-data)");
      }
      const fields = new URLSearchParams();
      for (const [name, value] of form.entries()) {
        if (typeof value === "string") fields.append(name, value);
        else {
          fields.append(name, await value.text());
          fields.append(`${name}.filename`, value.name);
        }
      }
      return fields;
    },
  );
}

/** The form of a console POST; 400 for any other body. */
export function formOf(body: unknown): URLSearchParams {
  if (body instanceof URLSearchParams) return body;
  throw badRequest("send the console's form (application/x-www-form-urlencoded or multipart/form-data)");
}

/** A console page's `template` field (from its query or its form), checked like the API's path: 400 naming what is wrong. */
export function templateField(value: string | null | undefined, where: "query" | "body"): string {
  const reason = invalidTemplateReason(value ?? "");
  if (reason) throw badRequest(`template ${reason}`, "template", where);
  return value ?? "";
}
