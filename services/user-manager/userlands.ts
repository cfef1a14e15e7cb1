/**
 * The Userland routes: create, list, get (by name, by identity), start, stop, delete.
 *
 * A student holds at most one Userland per Template: the pair (spec.user, spec.templateName) is
 * the key. A new Userland's name is userlandNameFor(user, templateName), so the API server itself
 * refuses a second one for the same pair even under concurrent requests; lookups still search
 * spec.user and spec.templateName (field selectors), because Userlands named by the older
 * one-per-user rule, or by hand, may have any name.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { userlandNameFor } from "../../api/naming.ts";
import { SESSION_ID, type EndSessions } from "../../api/sessions.ts";
import {
  activityStamp,
  examRefText,
  ExamMarks,
  parseExamNotice,
  UserlandAnnotations,
  type Userland,
  USERLANDS,
} from "../../api/v1alpha1/index.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import type { Session, SessionVerifier } from "../../lib/session.ts";
import type { Resource } from "./auth/caller.ts";
import { badRequest, conflict, HttpError, notFound } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import {
  ConflictBody,
  CreateUserlandBody,
  ErrorBody,
  PhaseSchema,
  TemplateNameSchema,
  UserSchema,
  UserlandList,
  UserlandNameSchema,
  UserlandView,
  toView,
} from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export interface UserlandRouteOptions {
  store: UserlandStore;
  metrics: Metrics;
  now?: () => Date;
  /** The auth service's session keys (the console's): POST /api/v1/sessions/end verifies with them. */
  verifier?: SessionVerifier | undefined;
  /** Writes the mark that ends `what` of `user` in their session record (sessionRecordWriter.ts). */
  endSessions(user: string, what: EndSessions): Promise<void>;
  /** Records the groups of `user`'s latest session in their session record. */
  recordGroups(user: string, groups: readonly string[]): Promise<void>;
}

/**
 * "Ends the session whose token it presents" (the auth service's sign-out): a subresource without
 * a handler, so RBAC can name this right alone, without patch on Userlands (start and stop).
 */
export const SESSIONS_RESOURCE: Resource = { resource: USERLANDS, subresource: "sessions" };

const NameParams = Type.Object({ name: UserlandNameSchema });
const UserParams = Type.Object({ user: UserSchema });
const UserQuery = Type.Object(
  {
    template: Type.Optional({
      ...TemplateNameSchema,
      description:
        "The Template whose Userland to return. Without it the answer is 409 when the user has Userlands of several Templates, never one picked for you.",
    }),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object(
  {
    template: Type.Optional(TemplateNameSchema),
    user: Type.Optional(UserSchema),
    phase: Type.Optional(PhaseSchema),
  },
  { additionalProperties: false },
);

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

export const userlandRoutes: FastifyPluginCallbackTypebox<UserlandRouteOptions> = (app, opts, done) => {
  const { store, metrics } = opts;
  const now = opts.now ?? (() => new Date());
  const where = store.where;

  /** The 409 of a create: the pair has a Userland (`found`: those the caller may see, possibly none). */
  const pairExists = (user: string, templateName: string, found: Userland[]): HttpError => {
    const [first] = found;
    if (found.length === 1 && first) {
      return conflict(
        `user "${user}" already has Userland "${first.metadata.name ?? ""}" (template "${first.spec.templateName}")`,
        { field: "user", userland: toView(first) },
      );
    }
    if (found.length > 1) return several(user, found, `of template "${templateName}"`);
    return conflict(`user "${user}" already has a Userland of template "${templateName}"`, {
      field: "user",
    });
  };

  /** More than one Userland where the caller asked for one: list them, pick none. */
  const several = (user: string, found: Userland[], what: string, hint = "remove all but one"): HttpError =>
    conflict(
      `user "${user}" has ${found.length} Userlands ${what} (${found
        .map((u) => `"${u.metadata.name ?? ""}": template "${u.spec.templateName}"`)
        .join(", ")}); ${hint}`,
      { field: "user", names: found.map((u) => u.metadata.name ?? "") },
    );

  /**
   * The Userlands of a 409 the caller may see: creating needs only `create` (the auth service's
   * provisioning token has nothing else), and a conflict must not tell such a caller which
   * Userland, Template and state another user has; reading them needs `get` on each.
   */
  const visible = async (request: FastifyRequest, found: Userland[]): Promise<Userland[]> => {
    for (const u of found) if (!(await request.may("get", u.metadata.name, u.metadata.namespace))) return [];
    return found;
  };

  app.post(
    "/api/v1/userlands",
    {
      config: { permissions: ["create"], scope: "template" },
      schema: {
        tags: ["userlands"],
        summary: "Create a user's Userland of a Template",
        description:
          "One Userland per (user, Template): a student may hold environments of several Templates at once. The name is derived from the pair " +
          "(a readable part and a hash of the exact identity and Template). 409 if the user already has a Userland of that Template " +
          "(under any name, e.g. one named by the older one-per-user rule), or, with ifUserHasNone, of any Template; the existing " +
          "Userland is in the body only when the caller may get it.",
        body: CreateUserlandBody,
        response: { 201: UserlandView, ...errors, 409: ConflictBody },
      },
    },
    async (request, reply) => {
      const { user, templateName, enabled, ifUserHasNone } = request.body;
      // Side by side (a sign-in waits for them): the Template, and one field-selected read of the
      // user's Userlands (any Template) for ifUserHasNone, else the pair's.
      const [template, found] = await Promise.all([
        store.getTemplate(templateName),
        ifUserHasNone ? store.findByUser(user) : store.findPair(user, templateName),
      ]);
      if (!template) {
        throw notFound(`Template "${templateName}" does not exist in ${where}`, "templateName", "body");
      }
      if (found.length > 0 && ifUserHasNone) {
        const [only, ...more] = await visible(request, found);
        if (!only) throw conflict(`user "${user}" already has a Userland`, { field: "user" });
        throw more.length === 0
          ? pairExists(user, only.spec.templateName, [only])
          : several(user, [only, ...more], "already", "ifUserHasNone creates only a user's first");
      }
      if (found.length > 0) throw pairExists(user, templateName, await visible(request, found));
      const name = userlandNameFor(user, templateName);
      let created: Userland;
      try {
        created = await store.create(
          user,
          templateName,
          enabled,
          request.caller?.username ?? "",
          template.metadata.namespace,
        );
      } catch (error) {
        if (!isConflict(error)) throw error;
        const other = await store.get(name);
        if (other?.spec.user === user && other.spec.templateName === templateName)
          throw pairExists(user, templateName, await visible(request, [other]));
        throw conflict(`the name "${name}" is taken by another Userland`, { field: "user" });
      }
      metrics.created.inc({ source: "api" });
      request.log.info({ by: request.caller?.username, user, name, templateName }, "created Userland");
      return reply.code(201).header("location", `/api/v1/userlands/${name}`).send(toView(created));
    },
  );

  app.get(
    "/api/v1/userlands",
    {
      config: { permissions: ["list"], scope: "each" },
      schema: {
        tags: ["userlands"],
        summary: "List Userlands",
        description:
          "Every Userland in the namespace, optionally only those of a template, an identity (exact) or a phase.",
        querystring: ListQuery,
        response: { 200: UserlandList, ...errors },
      },
    },
    async (request) => {
      const { template, user, phase } = request.query;
      // user and template are field selectors (read by the API server); the phase is status, filtered here.
      const items = (
        await store.list({ user, templateName: template, namespaces: request.namespaces ?? undefined })
      ).filter((u) => phase === undefined || u.status?.phase === phase);
      return { items: items.map(toView) };
    },
  );

  app.get(
    "/api/v1/userlands/:name",
    {
      config: { permissions: ["get"], nameParam: "name" },
      schema: {
        tags: ["userlands"],
        summary: "Get a Userland by name",
        description:
          "The Userland of that name in the namespaces this service serves. Needs the get permission.",
        params: NameParams,
        response: { 200: UserlandView, ...errors },
      },
    },
    async (request) => {
      const u = await store.get(request.params.name);
      if (!u) throw notFound(`Userland "${request.params.name}" does not exist in ${where}`);
      return toView(u);
    },
  );

  app.get(
    "/api/v1/users/:user/userlands",
    {
      config: { permissions: ["list"], scope: "each" },
      schema: {
        tags: ["userlands"],
        summary: "List a user's Userlands (one per Template)",
        description:
          "Every Userland whose spec.user is exactly the identity (URL-encode it), ordered by template; an empty list when there is none. Needs the list permission.",
        params: UserParams,
        response: { 200: UserlandList, ...errors },
      },
    },
    async (request) => ({
      items: byTemplate(await store.findByUser(request.params.user, request.namespaces ?? undefined)).map(
        toView,
      ),
    }),
  );

  app.get(
    "/api/v1/users/:user/userland",
    {
      config: { permissions: ["list"], scope: "each" },
      schema: {
        tags: ["userlands"],
        summary: "Find a user's Userland by identity (and Template)",
        description:
          "Searches spec.user for the exact identity (URL-encode it) and, with ?template=, spec.templateName. " +
          "Without ?template= it answers the user's only Userland, or 409 naming them when the user has Userlands of several Templates " +
          "(never one picked silently); /api/v1/users/{user}/userlands lists them all. Needs the list permission.",
        params: UserParams,
        querystring: UserQuery,
        response: { 200: UserlandView, ...errors, 409: ConflictBody },
      },
    },
    async (request) => {
      const { user } = request.params;
      const { template } = request.query;
      const found =
        template === undefined
          ? await store.findByUser(user, request.namespaces ?? undefined)
          : await store.findPair(user, template, request.namespaces ?? undefined);
      const [first] = found;
      if (!first) {
        throw notFound(
          template === undefined
            ? `user "${user}" has no Userland in ${where}`
            : `user "${user}" has no Userland of template "${template}" in ${where}`,
        );
      }
      if (found.length > 1) {
        throw template === undefined && new Set(found.map((u) => u.spec.templateName)).size > 1
          ? several(
              user,
              found,
              "of several templates",
              "pick one with ?template=, or list them at /api/v1/users/{user}/userlands",
            )
          : several(user, found, `of template "${first.spec.templateName}"`);
      }
      return toView(first);
    },
  );

  /** Start and Stop: one patch of the named Userland, answered with its new view. */
  const switchRoute = (
    action: "start" | "stop",
    summary: string,
    description: string,
    patch: () => Record<string, unknown>,
  ) =>
    app.post(
      `/api/v1/userlands/:name/${action}`,
      {
        config: { permissions: ["patch"], nameParam: "name" },
        schema: {
          tags: ["userlands"],
          summary,
          description,
          params: NameParams,
          response: { 200: UserlandView, ...errors, 409: ErrorBody },
        },
      },
      async (request) => {
        const { name } = request.params;
        // Stopped for an exam (docs/decisions/0013-exams.md): it starts again when the exam ends;
        // started now, the operator would stop it again at once.
        if (action === "start") {
          const held = await store.get(name);
          if (held?.metadata.labels?.[ExamMarks.holdLabel] !== undefined) {
            // The exam may be another namespace's: the hold's notice names it in full.
            const notice = parseExamNotice(held.metadata.annotations?.[ExamMarks.holdAnnotation]);
            const exam = notice ? `the exam ${examRefText(notice)}` : "an exam";
            throw conflict(`Userland "${name}" is stopped for ${exam}; it starts again after the exam`, {
              ...(notice
                ? { exam: notice.exam, ...(notice.namespace ? { namespace: notice.namespace } : {}) }
                : {}),
              ...(notice ? { end: notice.end } : {}),
            });
          }
        }
        const u = await store.patch(name, patch());
        if (!u) throw notFound(`Userland "${name}" does not exist in ${where}`);
        request.log.info(
          { by: request.caller?.username, name },
          `${action === "start" ? "started" : "stopped"} Userland`,
        );
        return toView(u);
      },
    );
  switchRoute(
    "start",
    "Start a Userland",
    "Sets spec.enabled=true, clears the stopped reason and counts now as activity, so the idle culler does not stop it again at once. 409 while an exam holds it (label userland.dev/exam-hold).",
    () => ({
      metadata: {
        annotations: {
          [UserlandAnnotations.stoppedReason]: null,
          [UserlandAnnotations.lastActivity]: activityStamp(now()),
        },
      },
      spec: { enabled: true },
    }),
  );
  switchRoute(
    "stop",
    "Stop a Userland",
    "Sets spec.enabled=false: the environment scales to zero and its data is kept.",
    () => ({ spec: { enabled: false } }),
  );

  app.post(
    "/api/v1/userlands/:name/end-sessions",
    {
      config: { permissions: ["patch"], nameParam: "name" },
      schema: {
        tags: ["userlands"],
        summary: "End the user's sessions",
        description:
          'Ends sessions of the Userland\'s user before they expire (api/sessions.ts): with a JSON body {"sessionId": "<sid>", "expires": <exp, seconds since the epoch>}, that one session (sign-out on one browser); without a body, every session issued until now (sign out everywhere, a stolen laptop). Every proxy replica refuses them within seconds. Who may start and stop the Userland may do this.',
        params: NameParams,
        response: { 200: UserlandView, ...errors },
      },
    },
    async (request) => {
      const { name } = request.params;
      const u = await endSessionsOn(name, endWhat(request.body), request);
      return toView(u);
    },
  );

  /** Ends `what` of the user of Userland `name`: the Userland says whose, the record carries it. */
  async function endSessionsOn(name: string, what: EndSessions, request: FastifyRequest): Promise<Userland> {
    const u = await store.get(name);
    if (!u) throw notFound(`Userland "${name}" does not exist in ${where}`);
    await opts.endSessions(u.spec.user, what);
    request.log.info(
      { by: request.caller?.username, name, user: u.spec.user, all: "all" in what },
      "ended sessions",
    );
    return u;
  }

  /**
   * The session whose token the auth service relays: the caller's right on sessions first, before
   * anything about the session is looked up; 403 without it, 501 without the session keys, 401 for
   * a token this installation did not sign.
   */
  async function relayedSession(request: FastifyRequest, token: string, what: string): Promise<Session> {
    if (!(await request.mayAnywhere("delete", SESSIONS_RESOURCE)))
      throw new HttpError(
        403,
        "Forbidden",
        `${request.caller?.username ?? "the caller"} may not ${what} (delete on userlands/sessions)`,
      );
    if (!opts.verifier)
      throw new HttpError(
        501,
        "NotImplemented",
        `the session keys are not set (USER_MANAGER_SESSION_JWKS_URL or USER_MANAGER_SESSION_PUBLIC_KEYS_FILE): this service cannot ${what} by a session's token`,
      );
    const session = await opts.verifier.verify(token);
    if (!session)
      throw new HttpError(
        401,
        "Unauthorized",
        "the session is not valid (expired, or not this installation's)",
      );
    return session;
  }

  app.post(
    "/api/v1/sessions/end",
    {
      schema: {
        tags: ["userlands"],
        summary: "End the session whose token is sent (the auth service's sign-out)",
        description:
          "Ends one session before it expires, everywhere (api/sessions.ts): the session token itself is the proof, so whoever holds the cookie may end it and nobody can name another session or another user. The caller needs delete on userlands/sessions (a subresource without a handler, granted to the auth service). The mark goes into the user's session record, so a user without any Userland is signed out everywhere too.",
        body: Type.Object(
          { session: Type.String({ minLength: 1, maxLength: 8192 }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ user: Type.String() }),
          ...errors,
          501: ErrorBody,
        },
      },
    },
    async (request) => {
      const session = await relayedSession(request, request.body.session, "end sessions");
      // The user is the session's own: nothing in the request names a user or a Userland.
      await opts.endSessions(session.user, { sid: session.sid, exp: session.exp });
      request.log.info({ by: request.caller?.username, user: session.user }, "ended a session");
      return { user: session.user };
    },
  );

  app.post(
    "/api/v1/sessions/seen",
    {
      schema: {
        tags: ["userlands"],
        summary: "Record a new session's groups (the auth service, at each sign-in)",
        description:
          "Records the identity provider's groups the session carries in its user's session record (api/sessions.ts), where the operator and this service read them when they decide, without a session, whether the person teaches a Template (issue 41 item 7). The session token is the proof: the groups are those the auth service signed, and nothing in the request names a user or a group. The caller needs delete on userlands/sessions, the auth service's right on sessions.",
        body: Type.Object(
          { session: Type.String({ minLength: 1, maxLength: 8192 }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ user: Type.String(), groups: Type.Array(Type.String()) }),
          ...errors,
          501: ErrorBody,
        },
      },
    },
    async (request) => {
      const session = await relayedSession(request, request.body.session, "record sessions' groups");
      await opts.recordGroups(session.user, session.groups);
      return { user: session.user, groups: [...session.groups] };
    },
  );

  app.delete(
    "/api/v1/userlands/:name",
    {
      config: { permissions: ["delete"], nameParam: "name" },
      schema: {
        tags: ["userlands"],
        summary: "Delete a Userland",
        description:
          "Deletes the Userland; the operator's children go with it. Volumes follow their Template's reclaimPolicy.",
        params: NameParams,
        response: { 204: Type.Null({ description: "Deleted" }), ...errors },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      if (!(await store.delete(name))) throw notFound(`Userland "${name}" does not exist in ${where}`);
      metrics.deleted.inc({ source: "api" });
      request.log.info({ by: request.caller?.username, name }, "deleted Userland");
      return reply.code(204).send(null);
    },
  );
  done();
};

/** A user's Userlands in a stable order: by Template, then by name (a hand-made second one). */
function byTemplate(userlands: Userland[]): Userland[] {
  const order = (u: Userland) => `${u.spec.templateName}\u0000${u.metadata.name ?? ""}`;
  return userlands.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}

/** What end-sessions ends: no body (or {}) every session, else the one its body names; 400 otherwise. */
function endWhat(body: unknown): EndSessions {
  if (body === undefined || body === null) return { all: true };
  const { sessionId, expires, ...rest } = body as Record<string, unknown>;
  if (typeof body !== "object" || Array.isArray(body) || Object.keys(rest).length > 0)
    throw badRequest('send no body (every session) or {"sessionId": ..., "expires": ...} (one session)');
  if (sessionId === undefined && expires === undefined) return { all: true };
  if (typeof sessionId !== "string" || !SESSION_ID.test(sessionId))
    throw badRequest("sessionId must be a session id (the session's sid)", "sessionId");
  if (typeof expires !== "number" || !Number.isInteger(expires) || expires < 0)
    throw badRequest("expires must be the session's exp (whole seconds since the epoch)", "expires");
  return { sid: sessionId, exp: expires };
}
