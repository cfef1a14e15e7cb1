/**
 * Every API call authenticated and authorized by Kubernetes itself: a bearer token by TokenReview
 * (tokenReview.ts) or the console's session cookie (sessionCaller.ts), then the route's rights by
 * access review (accessReview.ts) in the namespace they apply to: a named Userland's, the
 * Template's for a new one (once the body is read), or each served namespace. The request gets
 * `caller`, `authorize`, `may`, `mayAnywhere` and `namespaces` for the handlers.
 */
import type { FastifyPluginCallback, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { ALL_NAMESPACES } from "../../../lib/namespaces.ts";
import { HttpError } from "../errors.ts";
import { forbidden, type AccessReviewer } from "./accessReview.ts";
import {
  bearerToken,
  callerKey,
  reviewCache,
  USERLAND_RESOURCE,
  type Caller,
  type Resource,
  type Verb,
} from "./caller.ts";
import { callerFromSession, type SessionAuth } from "./sessionCaller.ts";
import type { TokenAuthenticator } from "./tokenReview.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The authenticated caller; null only on public routes. */
    caller: Caller | null;
    /**
     * Throws 403 unless the caller may `verb` Userlands (or `resource`; named `name`, if given) in
     * `namespace`; without one, in the named Userland's namespace, or for no name in every
     * namespace served.
     */
    authorize(verb: Verb, name?: string, namespace?: string, resource?: Resource): Promise<void>;
    /** Whether the caller may `verb` Userlands (or `resource`; named `name`, if given); false without a caller. */
    may(verb: Verb, name?: string, namespace?: string, resource?: Resource): Promise<boolean>;
    /**
     * Whether the caller may `verb` `resource` (no name) in at least one served namespace: the
     * console's door, asked before a body is read.
     */
    mayAnywhere(verb: Verb, resource?: Resource): Promise<boolean>;
    /**
     * Several namespaces served, on a route of scope "each": the namespaces where the caller has
     * the route's rights (at least one); null for every namespace served, or one namespace served.
     */
    namespaces: readonly string[] | null;
  }
  interface FastifyContextConfig {
    /** Served without authentication (probes, metrics, the OpenAPI document). */
    public?: boolean;
    /** What the caller must be allowed to do on userlands.userland.dev before the handler runs. */
    permissions?: Verb[];
    /** The route parameter holding the Userland name, so Roles with resourceNames apply. */
    nameParam?: string;
    /**
     * With several namespaces served, where a route that names no Userland is checked: "template"
     * in the namespace of the body's templateName (once the body is read), "each" in every served
     * namespace, the route then working in those where the caller has the rights
     * (request.namespaces); default: every served namespace must grant them.
     */
    scope?: "template" | "each";
  }
}

/**
 * How long a caller's namespaces (the scan below) are reused, denials included: a signed-in
 * student, with rights nowhere, would otherwise make every list cost a review per course
 * namespace. A namespace newly granted or revoked shows in lists within this time.
 */
const NAMESPACE_SCAN_TTL_MS = 5_000;

export interface AuthOptions {
  authenticator: TokenAuthenticator;
  reviewer: AccessReviewer;
  /**
   * Where a call that names no Userland is checked: the one namespace served, each of a list (the
   * caller needs the right in all of them), or "*" (cluster-wide).
   */
  namespaces: readonly string[];
  /** Several namespaces served: the namespace of a named Userland (undefined: none of that name). */
  locate?: ((name: string) => Promise<string | undefined>) | undefined;
  /** Several namespaces served: the namespace of the Template a new Userland would use. */
  templateNamespace?: ((templateName: string) => Promise<string | undefined>) | undefined;
  /**
   * Every namespace served: where a caller without the right cluster-wide may have it in a Role
   * (the namespaces holding Templates), for routes of scope "each".
   */
  candidateNamespaces?: (() => Promise<readonly string[]>) | undefined;
  /** Session sign-in, when the console is on. */
  sessions?: SessionAuth | undefined;
}

/**
 * Deny by default: every route, including unknown ones, needs a valid token unless its config says
 * `public: true`. Runs in onRequest, before the body is read, so anonymous callers cannot make the
 * service parse large uploads.
 */
const plugin: FastifyPluginCallback<AuthOptions> = (app, opts, done) => {
  const { authenticator, reviewer, sessions, locate } = opts;

  /**
   * Where a check applies. A named Userland that does not exist is checked where a call naming
   * none would be, so a caller without the right anywhere learns nothing of what exists.
   */
  async function where(name: string | undefined, namespace: string | undefined): Promise<readonly string[]> {
    if (namespace !== undefined) return [namespace];
    if (name !== undefined && locate) {
      const found = await locate(name);
      if (found !== undefined) return [found];
    }
    return opts.namespaces;
  }

  async function authorize(
    this: FastifyRequest,
    verb: Verb,
    name?: string,
    namespace?: string,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<void> {
    const caller = this.caller;
    if (!caller) throw new HttpError(401, "Unauthorized", "authentication required");
    for (const ns of await where(name, namespace)) {
      const decision = await reviewer.review(caller, verb, name, ns, resource);
      if (!decision.allowed) throw forbidden(caller, verb, ns, resource, name);
    }
  }

  async function may(
    this: FastifyRequest,
    verb: Verb,
    name?: string,
    namespace?: string,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<boolean> {
    const caller = this.caller;
    if (!caller) return false;
    for (const ns of await where(name, namespace))
      if (!(await reviewer.review(caller, verb, name, ns, resource)).allowed) return false;
    return true;
  }

  async function mayAnywhere(
    this: FastifyRequest,
    verb: Verb,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<boolean> {
    const everywhere = opts.namespaces.includes(ALL_NAMESPACES);
    if (everywhere && (await this.may(verb, undefined, ALL_NAMESPACES, resource))) return true;
    const candidates = everywhere ? ((await opts.candidateNamespaces?.()) ?? []) : opts.namespaces;
    const answers = await Promise.all(candidates.map((ns) => this.may(verb, undefined, ns, resource)));
    return answers.some(Boolean);
  }

  app.decorateRequest("caller", null);
  app.decorateRequest("authorize", authorize);
  app.decorateRequest("may", may);
  app.decorateRequest("mayAnywhere", mayAnywhere);
  app.decorateRequest("namespaces", null);
  const scans = reviewCache<Promise<readonly string[]>>();

  async function mayAll(request: FastifyRequest, verbs: readonly Verb[], ns: string): Promise<boolean> {
    for (const verb of verbs) if (!(await request.may(verb, undefined, ns))) return false;
    return true;
  }

  /**
   * Several namespaces: those (at least one) where the caller has every one of `verbs`; null for
   * every namespace (all served, and the caller has them cluster-wide). A caller bound in some
   * namespaces only is asked about each namespace holding a Template, side by side.
   */
  async function grantingNamespaces(
    request: FastifyRequest,
    verbs: readonly Verb[],
  ): Promise<readonly string[] | null> {
    const everywhere = opts.namespaces.includes(ALL_NAMESPACES);
    if (everywhere && (await mayAll(request, verbs, ALL_NAMESPACES))) return null;
    const caller = request.caller;
    if (!caller) throw new HttpError(401, "Unauthorized", "authentication required");
    const key = JSON.stringify([callerKey(caller), verbs]);
    let scan = scans.get(key);
    if (!scan) {
      scan = (async () => {
        const candidates = everywhere ? ((await opts.candidateNamespaces?.()) ?? []) : opts.namespaces;
        const answers = await Promise.all(candidates.map((ns) => mayAll(request, verbs, ns)));
        return candidates.filter((_, i) => answers[i]);
      })();
      // Concurrent requests of one caller share the scan; a failed one is not remembered.
      scans.set(key, scan, { ttl: NAMESPACE_SCAN_TTL_MS });
      scan.catch(() => scans.delete(key));
    }
    const granted = await scan;
    // None: the first refusal, as a call checked everywhere would answer.
    if (granted.length === 0) for (const verb of verbs) await request.authorize(verb);
    return granted;
  }

  app.addHook("onRequest", async (request) => {
    const config = request.routeOptions.config;
    if (config.public) return;
    const token = bearerToken(request.headers.authorization);
    if (token) {
      const caller = await authenticator.authenticate(token);
      if (!caller)
        throw new HttpError(
          401,
          "Unauthorized",
          "the bearer token was not accepted by Kubernetes (invalid, expired or for another audience)",
        );
      request.caller = caller;
    } else request.caller = await callerFromSession(request, sessions);
    const name = config.nameParam
      ? (request.params as Record<string, string | undefined>)[config.nameParam]
      : undefined;
    if (locate && name === undefined && config.scope === "template") return; // preHandler, below
    if (locate && name === undefined && config.scope === "each") {
      request.namespaces = await grantingNamespaces(request, config.permissions ?? []);
      return;
    }
    for (const verb of config.permissions ?? []) await request.authorize(verb, name);
  });

  // Scope "template": the namespace is the Template's, known once the body is read. A Template
  // that does not exist is checked everywhere (the handler then answers 404 to those allowed).
  app.addHook("preHandler", async (request) => {
    const config = request.routeOptions.config;
    if (!locate || config.public || config.scope !== "template") return;
    const templateName = (request.body as { templateName?: unknown } | undefined)?.templateName;
    const ns = typeof templateName === "string" ? await opts.templateNamespace?.(templateName) : undefined;
    for (const verb of config.permissions ?? []) await request.authorize(verb, undefined, ns);
  });
  done();
};

/**
 * Authentication and authorization of every call, as a plugin without encapsulation (its hooks
 * cover every route of the app). Its refusals are HttpErrors: the error handler must be there.
 */
export const authPlugin = fastifyPlugin(plugin, {
  name: "userland-auth",
  dependencies: ["userland-errors"],
});
