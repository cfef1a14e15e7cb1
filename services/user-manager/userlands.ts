/**
 * The Userland routes: create, list, get (by name, by identity), start, stop, delete.
 *
 * A Userland's name is always userlandNameFor(user), so the API server itself refuses a second
 * Userland for the same identity even under concurrent requests; the lookup by identity still
 * searches spec.user, because a hand-made Userland may have any name.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { userlandNameFor } from "../../api/naming.ts";
import { activityStamp, UserlandAnnotations, type Userland } from "../../api/v1alpha1/index.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { isConflict } from "../../lib/kube.ts";
import { conflict, notFound, type HttpError } from "./errors.ts";
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
}

const NameParams = Type.Object({ name: UserlandNameSchema });
const UserParams = Type.Object({ user: UserSchema });
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
  const ns = store.namespace;

  const existsFor = (user: string, found: Userland[]): HttpError => {
    const [first] = found;
    if (found.length === 0) return conflict(`user "${user}" already has a Userland`, { field: "user" });
    if (found.length === 1 && first) {
      return conflict(
        `user "${user}" already has Userland "${first.metadata.name ?? ""}" (template "${first.spec.templateName}")`,
        {
          field: "user",
          userland: toView(first),
        },
      );
    }
    return conflict(`user "${user}" has ${found.length} Userlands; remove all but one`, {
      field: "user",
      names: found.map((u) => u.metadata.name ?? ""),
    });
  };

  /**
   * The Userlands of a 409 the caller may see: creating needs only `create` (the auth service's
   * provisioning token has nothing else), and a conflict must not tell such a caller which
   * Userland, Template and state another user has; reading them needs `get` on each.
   */
  const visible = async (request: FastifyRequest, found: Userland[]): Promise<Userland[]> => {
    for (const u of found) if (!(await request.may("get", u.metadata.name))) return [];
    return found;
  };

  app.post(
    "/api/v1/userlands",
    {
      config: { permissions: ["create"] },
      schema: {
        tags: ["userlands"],
        summary: "Create a user's Userland",
        description:
          "The name is derived from the identity (a readable part and a hash of the exact identity). 409 if the user already has a Userland.",
        body: CreateUserlandBody,
        response: { 201: UserlandView, ...errors, 409: ConflictBody },
      },
    },
    async (request, reply) => {
      const { user, templateName, enabled } = request.body;
      if (!(await store.getTemplate(templateName))) {
        throw notFound(
          `Template "${templateName}" does not exist in namespace "${ns}"`,
          "templateName",
          "body",
        );
      }
      const found = await store.findByUser(user);
      if (found.length > 0) throw existsFor(user, await visible(request, found));
      const name = userlandNameFor(user);
      let created: Userland;
      try {
        created = await store.create(user, templateName, enabled, request.caller?.username ?? "");
      } catch (error) {
        if (!isConflict(error)) throw error;
        const other = await store.get(name);
        if (other?.spec.user === user) throw existsFor(user, await visible(request, [other]));
        throw conflict(`the name "${name}" is taken by a Userland of another user`, { field: "user" });
      }
      metrics.created.inc({ source: "api" });
      request.log.info({ by: request.caller?.username, user, name, templateName }, "created Userland");
      return reply.code(201).header("location", `/api/v1/userlands/${name}`).send(toView(created));
    },
  );

  app.get(
    "/api/v1/userlands",
    {
      config: { permissions: ["list"] },
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
      const items = (await store.listAll()).filter(
        (u) =>
          (template === undefined || u.spec.templateName === template) &&
          (user === undefined || u.spec.user === user) &&
          (phase === undefined || u.status?.phase === phase),
      );
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
        params: NameParams,
        response: { 200: UserlandView, ...errors },
      },
    },
    async (request) => {
      const u = await store.get(request.params.name);
      if (!u) throw notFound(`Userland "${request.params.name}" does not exist in namespace "${ns}"`);
      return toView(u);
    },
  );

  app.get(
    "/api/v1/users/:user/userland",
    {
      config: { permissions: ["list"] },
      schema: {
        tags: ["userlands"],
        summary: "Find a user's Userland by identity",
        description:
          "Searches spec.user for the exact identity (URL-encode it). Needs the list permission: it searches every Userland.",
        params: UserParams,
        response: { 200: UserlandView, ...errors, 409: ConflictBody },
      },
    },
    async (request) => {
      const { user } = request.params;
      const found = await store.findByUser(user);
      const [first] = found;
      if (!first) throw notFound(`user "${user}" has no Userland in namespace "${ns}"`);
      if (found.length > 1) throw existsFor(user, found);
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
          response: { 200: UserlandView, ...errors },
        },
      },
      async (request) => {
        const { name } = request.params;
        const u = await store.patch(name, patch());
        if (!u) throw notFound(`Userland "${name}" does not exist in namespace "${ns}"`);
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
    "Sets spec.enabled=true, clears the stopped reason and counts now as activity, so the idle culler does not stop it again at once.",
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
      if (!(await store.delete(name)))
        throw notFound(`Userland "${name}" does not exist in namespace "${ns}"`);
      metrics.deleted.inc({ source: "api" });
      request.log.info({ by: request.caller?.username, name }, "deleted Userland");
      return reply.code(204).send(null);
    },
  );
  done();
};
