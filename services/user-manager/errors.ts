/**
 * One error shape for every failure: `{error, message, field?, in?}`. Bad input is always a 4xx
 * naming the field at fault; only our own faults (and the API server's) are 5xx.
 */
import type { FastifyError, FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { isConflict, isNotFound, statusCode, KubeError } from "../../lib/kubeRest.ts";
import { invalidTemplateReason, invalidUserReason, invalidUserlandNameReason } from "./schemas.ts";

export type ErrorLocation = "body" | "query" | "params" | "headers";

export class HttpError extends Error {
  readonly statusCode: number;
  readonly error: string;
  readonly field: string | undefined;
  readonly location: ErrorLocation | undefined;
  readonly extra: Record<string, unknown>;
  constructor(
    statusCode: number,
    error: string,
    message: string,
    opts: { field?: string; in?: ErrorLocation; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.statusCode = statusCode;
    this.error = error;
    this.field = opts.field;
    this.location = opts.in;
    this.extra = opts.extra ?? {};
  }

  body(): Record<string, unknown> {
    return {
      error: this.error,
      message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
      ...(this.location === undefined ? {} : { in: this.location }),
      ...this.extra,
    };
  }
}

export const badRequest = (message: string, field?: string, location: ErrorLocation = "body") =>
  new HttpError(400, "BadRequest", message, field === undefined ? {} : { field, in: location });
export const notFound = (message: string, field?: string, location?: ErrorLocation) =>
  new HttpError(
    404,
    "NotFound",
    message,
    field === undefined ? {} : { field, ...(location ? { in: location } : {}) },
  );
export const conflict = (message: string, extra: Record<string, unknown> = {}) =>
  new HttpError(409, "Conflict", message, { extra });

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  413: "PayloadTooLarge",
  415: "UnsupportedMediaType",
  429: "TooManyRequests",
  500: "InternalError",
  502: "BadGateway",
  503: "ServiceUnavailable",
};

const LOCATIONS: Record<string, ErrorLocation> = {
  body: "body",
  querystring: "query",
  params: "params",
  headers: "headers",
};

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Turns a schema validation failure into the most useful single message and the field it concerns. */
export function describeValidation(
  issues: readonly ValidationIssue[],
  context: string | undefined,
  data: unknown,
): HttpError {
  const location = LOCATIONS[context ?? "body"] ?? "body";
  // An unknown field is reported twice by TypeBox ("schema is false" and additionalProperties): prefer the latter.
  const issue =
    issues.find((i) => i.keyword === "additionalProperties") ??
    issues.find((i) => i.keyword === "required") ??
    issues[0];
  if (!issue) return badRequest(`invalid ${location}`, undefined, location);
  const path = issue.instancePath.split("/").slice(1).map(unescapePointer);
  const where = location === "body" ? "" : ` (${location})`;
  if (issue.keyword === "additionalProperties") {
    const extra = [issue.params.additionalProperties].flat()[0];
    const field = [...path, String(extra)].join(".");
    return badRequest(`unknown field "${field}"${where}`, field, location);
  }
  if (issue.keyword === "required") {
    const missing = [issue.params.requiredProperties ?? issue.params.missingProperty].flat()[0];
    const field = [...path, String(missing)].join(".");
    return badRequest(`${field} is required${where}`, field, location);
  }
  const field = path.join(".");
  const last = path[path.length - 1];
  const value = valueAt(data, path);
  let reason: string | undefined;
  if (last === "user") reason = invalidUserReason(value);
  else if (last === "templateName" || last === "template") reason = invalidTemplateReason(value);
  else if (last === "name" && location === "params") reason = invalidUserlandNameReason(value);
  if (!reason && issue.keyword === "enum" && Array.isArray(issue.params.allowedValues)) {
    reason = `must be one of ${issue.params.allowedValues.map(String).join(", ")}`;
  }
  reason ??= issue.message ?? "is invalid";
  return badRequest(`${field || location} ${reason}${where}`, field || undefined, location);
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function valueAt(data: unknown, path: string[]): unknown {
  let v = data;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

const errorHandlers: FastifyPluginCallback = (app, _options, done) => {
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    return reply.code(404).send({
      error: "NotFound",
      message: `no such endpoint: ${request.method} ${request.url.split("?")[0] ?? ""}`,
    });
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    let http: HttpError;
    if (error instanceof HttpError) {
      http = error;
    } else if (error.validation) {
      http = describeValidation(
        error.validation,
        error.validationContext,
        dataFor(request, error.validationContext),
      );
    } else if (error instanceof KubeError) {
      http = fromKubeError(error);
      if (http.statusCode >= 500) request.log.error({ err: error }, "Kubernetes API request failed");
    } else if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
      // fastify's own client errors: malformed JSON, body too large, unsupported media type.
      http = new HttpError(
        error.statusCode,
        REASONS[error.statusCode] ?? "BadRequest",
        clientErrorMessage(error),
      );
    } else {
      request.log.error({ err: error }, "request failed");
      http = new HttpError(500, "InternalError", "internal error; the service log has the details");
    }
    if (http.statusCode === 401) reply.header("www-authenticate", 'Bearer realm="userland"');
    return reply.code(http.statusCode).type("application/json").send(http.body());
  });
  done();
};

/**
 * The one error shape for every route and for unknown ones, as a plugin without encapsulation so
 * it covers the whole app; plugins whose hooks throw HttpErrors declare it as a dependency.
 */
export const errorsPlugin = fastifyPlugin(errorHandlers, { name: "userland-errors" });

function dataFor(request: FastifyRequest, context: string | undefined): unknown {
  if (context === "querystring") return request.query;
  if (context === "params") return request.params;
  if (context === "headers") return request.headers;
  return request.body;
}

function clientErrorMessage(error: FastifyError): string {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return "request body is too large";
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return "unsupported Content-Type: send application/json (or text/csv for roster imports)";
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return `${error.message}`;
    default:
      return error.message;
  }
}

/** The API server's answer, as the caller should see it. */
export function fromKubeError(error: KubeError): HttpError {
  const code = statusCode(error) ?? 0;
  const kubeMessage = (error.body as { message?: string } | undefined)?.message ?? error.message;
  if (code === 422 || code === 400)
    return new HttpError(400, "BadRequest", `rejected by Kubernetes: ${kubeMessage}`);
  if (isNotFound(error)) return notFound(kubeMessage);
  if (isConflict(error)) return conflict(`conflict in Kubernetes: ${kubeMessage}`);
  if (code === 401 || code === 403) {
    // The service's own credentials are at fault, not the caller's: a deployment problem.
    return new HttpError(
      500,
      "InternalError",
      `the user-manager's ServiceAccount was refused by Kubernetes: ${kubeMessage}`,
    );
  }
  if (code === 429 || code === 0 || code >= 500)
    return new HttpError(503, "ServiceUnavailable", `the Kubernetes API is unavailable: ${kubeMessage}`);
  return new HttpError(502, "BadGateway", `unexpected answer from Kubernetes: ${kubeMessage}`);
}
