/**
 * Authentication and authorization of every API call by Kubernetes itself: the bearer token is
 * checked with a TokenReview (or, for the teachers' console, the auth service's session cookie is
 * verified and its user and groups prefixed), and the caller's right to act on Userlands with a
 * LocalSubjectAccessReview. Admins, teachers' tools and other services use their own Kubernetes
 * identities (a ServiceAccount token, `kubectl create token`, an OIDC token the API server accepts),
 * and RBAC Roles decide who may do what; this service keeps no user list of its own.
 *
 * LocalSubjectAccessReview rather than the cluster-scoped SubjectAccessReview: it answers the same
 * question for one namespace and needs only a namespaced Role, so the service cannot probe anyone's
 * permissions elsewhere in the cluster. TokenReview has no namespaced form.
 */
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { LRUCache, type Perf } from "lru-cache";
import pLimit from "p-limit";
import { GROUP, USERLANDS } from "../../api/v1alpha1/index.ts";
import { formFromOwnSite } from "../../lib/formOrigin.ts";
import type { KubeRest } from "../../lib/kubeRest.ts";
import { ALL_NAMESPACES } from "../../lib/namespaces.ts";
import { SESSION_COOKIE, type Session } from "../../lib/session.ts";
import type { RequestSessions } from "../../lib/requestSessions.ts";
import { HttpError } from "./errors.ts";
import type { Metrics } from "./metrics.ts";

export type Verb = "get" | "list" | "create" | "update" | "patch" | "delete";

/**
 * What an access review asks about: a resource of userland.dev and, optionally, a subresource.
 * Userlands unless a route says otherwise (the coursework routes ask about assignments,
 * submissions and the Template's coursework).
 */
export interface Resource {
  resource: string;
  subresource?: string;
}

const USERLAND_RESOURCE: Resource = { resource: USERLANDS };

/** `assignments` or `templates/coursework`, as RBAC rules spell a resource. */
export const resourceName = (r: Resource): string =>
  r.subresource ? `${r.resource}/${r.subresource}` : r.resource;

export interface Caller {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  /** The auth service's session the caller signed in with (the console), absent for bearer tokens. */
  session?: Session;
}

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

/** Most entries a review cache holds; the least recently used go first beyond it. */
const REVIEW_CACHE_MAX = 10_000;

/**
 * A cache whose entries each expire after the time-to-live given when set, at most `max` of them.
 * `clock` replaces the real one (tests); it is then read on every access.
 */
export function reviewCache<V extends NonNullable<unknown>>(
  max = REVIEW_CACHE_MAX,
  clock?: Perf,
): LRUCache<string, V> {
  return new LRUCache<string, V>({ max, ...(clock ? { perf: clock, ttlResolution: 0 } : {}) });
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
  error?: string;
}

export interface AuthenticatorOptions {
  rest: KubeRest;
  ttlMs: number;
  /** Unknown tokens waiting for (or in) a review beyond which more are refused with 429. */
  backlog: number;
  audiences: string[];
  metrics: Metrics;
}

/** TokenReviews asked of the API server at once. */
const REVIEW_CONCURRENCY = 8;

/** Bearer tokens → Kubernetes identities via TokenReview, cached by a hash of the token. */
export class TokenAuthenticator {
  private readonly opts: AuthenticatorOptions;
  // Keyed by a SHA-256 of the token so the cache never holds a usable credential.
  private readonly cache = reviewCache<Promise<Caller | undefined>>();
  private readonly reviews = pLimit(REVIEW_CONCURRENCY);

  constructor(opts: AuthenticatorOptions) {
    this.opts = opts;
  }

  /** The caller, or undefined for a token Kubernetes does not accept. Throws when Kubernetes cannot be asked. */
  authenticate(token: string): Promise<Caller | undefined> {
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = this.cache.get(key);
    if (cached) return cached;
    // The API is reachable from the internet with the console on, and every token never seen
    // before costs the API server a TokenReview: random tokens must not become a way to load it.
    // Known tokens (the cache above) are never refused.
    if (this.reviews.activeCount + this.reviews.pendingCount >= this.opts.backlog) {
      this.opts.metrics.tokenReviews.inc({ result: "refused_busy" });
      return Promise.reject(
        new HttpError(
          429,
          "TooManyRequests",
          "too many unknown bearer tokens are being checked at once; try again in a moment",
        ),
      );
    }
    const pending = this.reviews(() => this.review(token));
    // In-flight requests with the same token share one review; a failed review is not remembered.
    this.cache.set(key, pending, { ttl: Math.max(this.opts.ttlMs, 1_000) });
    pending.then(
      () => {
        const ttl = Math.min(this.opts.ttlMs, (jwtExpiry(token) ?? Infinity) - Date.now());
        if (ttl > 0) this.cache.set(key, pending, { ttl });
        else this.cache.delete(key);
      },
      () => this.cache.delete(key),
    );
    return pending;
  }

  private async review(token: string): Promise<Caller | undefined> {
    const { rest, audiences, metrics } = this.opts;
    let status: TokenReviewStatus | undefined;
    try {
      const body = {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token, ...(audiences.length > 0 ? { audiences } : {}) },
      };
      const review = await rest.create<{ status?: TokenReviewStatus }>(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body,
      );
      status = review.status;
    } catch (error) {
      metrics.tokenReviews.inc({ result: "error" });
      throw error;
    }
    const username = status?.user?.username;
    const audienceOk = audiences.length === 0 || (status?.audiences ?? []).some((a) => audiences.includes(a));
    if (!status?.authenticated || !username || !audienceOk) {
      metrics.tokenReviews.inc({ result: "rejected" });
      return undefined;
    }
    metrics.tokenReviews.inc({ result: "authenticated" });
    const user = status.user ?? {};
    return {
      username,
      groups: user.groups ?? [],
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    };
  }
}

/** The `exp` of a JWT (ServiceAccount and OIDC tokens are JWTs), so a cached token never outlives itself. */
function jwtExpiry(token: string): number | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export interface AccessReviewerOptions {
  rest: KubeRest;
  /** Where a review without a namespace of its own asks. */
  namespace: string;
  ttlMs: number;
  metrics: Metrics;
}

export interface Decision {
  allowed: boolean;
  reason?: string;
}

/** "May this caller do `verb` on userlands.userland.dev (or `resource`) here?", asked of Kubernetes RBAC. */
export class AccessReviewer {
  private readonly opts: AccessReviewerOptions;
  // Only grants are cached: a newly granted permission works at once, a revoked one within the TTL.
  private readonly allowed = reviewCache<true>();

  constructor(opts: AccessReviewerOptions) {
    this.opts = opts;
  }

  /**
   * `namespace` "*" asks about every namespace at once (a cluster-wide SubjectAccessReview: with
   * every namespace served, only that answers for a call that names no Userland).
   */
  async review(
    caller: Caller,
    verb: Verb,
    name?: string,
    namespace = this.opts.namespace,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<Decision> {
    const { rest, ttlMs, metrics } = this.opts;
    const all = namespace === ALL_NAMESPACES;
    const keyOf = (ns: string, n: string) =>
      JSON.stringify([ns, callerKey(caller), verb, n, resourceName(resource)]);
    const key = keyOf(namespace, name ?? "");
    if (this.allowed.get(key)) return { allowed: true };
    // RBAC grants a verb without a name only by a rule naming no resourceNames, which grants it
    // for every name: one review answers a bulk action over a whole class (issue 29).
    if (name && (this.allowed.get(keyOf(namespace, "")) || this.allowed.get(keyOf(ALL_NAMESPACES, ""))))
      return { allowed: true };
    let status:
      { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } | undefined;
    try {
      const review = await rest.create<{ status?: typeof status }>(
        all
          ? "/apis/authorization.k8s.io/v1/subjectaccessreviews"
          : `/apis/authorization.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/localsubjectaccessreviews`,
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: all ? "SubjectAccessReview" : "LocalSubjectAccessReview",
          ...(all ? {} : { metadata: { namespace } }),
          spec: {
            user: caller.username,
            groups: caller.groups,
            ...(caller.uid ? { uid: caller.uid } : {}),
            ...(caller.extra ? { extra: caller.extra } : {}),
            resourceAttributes: {
              ...(all ? {} : { namespace }),
              verb,
              group: GROUP,
              resource: resource.resource,
              ...(resource.subresource ? { subresource: resource.subresource } : {}),
              ...(name ? { name } : {}),
            },
          },
        },
      );
      status = review.status;
    } catch (error) {
      metrics.accessReviews.inc({ verb, result: "error" });
      throw error;
    }
    const allowed = status?.allowed === true;
    metrics.accessReviews.inc({ verb, result: allowed ? "allowed" : "denied" });
    if (allowed && ttlMs > 0) this.allowed.set(key, true, { ttl: ttlMs });
    return { allowed, ...(status?.reason ? { reason: status.reason } : {}) };
  }
}

/** Who a caller is, for caches of what it may do: everything RBAC decides by. */
export function callerKey(caller: Caller): string {
  return JSON.stringify([caller.username, caller.uid ?? "", [...caller.groups].sort(), caller.extra ?? {}]);
}

/**
 * How long a caller's namespaces (the scan below) are reused, denials included: a signed-in
 * student, with rights nowhere, would otherwise make every list cost a review per course
 * namespace. A namespace newly granted or revoked shows in lists within this time.
 */
const NAMESPACE_SCAN_TTL_MS = 5_000;

/** RBAC's refusal of `verb` on `resource` (named `name`) in `ns`, saying what a Role must grant. */
export function forbidden(
  caller: Caller,
  verb: Verb,
  ns: string,
  resource: Resource,
  name?: string,
): HttpError {
  const plural = resourceName(resource);
  const what = name ? `${plural}.${GROUP} "${name}"` : `${plural}.${GROUP}`;
  const all = ns === ALL_NAMESPACES;
  return new HttpError(
    403,
    "Forbidden",
    `${caller.username} may not ${verb} ${what} ${all ? "in every namespace" : `in namespace "${ns}"`}: ` +
      `a ${all ? "ClusterRole" : "Role"} bound to the caller must grant verb "${verb}" on resource "${plural}" in API group "${GROUP}"`,
    {
      extra: {
        permission: { verb, group: GROUP, resource: plural, namespace: ns, ...(name ? { name } : {}) },
      },
    },
  );
}

/** The bearer token of a request, undefined without one; 401 for a malformed Authorization header. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!match?.[1] || match[1].length > 16_384) {
    throw new HttpError(401, "Unauthorized", 'malformed Authorization header: expected "Bearer <token>"');
  }
  return match[1];
}

/**
 * Sign-in with the auth service's session cookie (the teachers' console). The session's user and
 * groups become Kubernetes subjects under prefixes, so RBAC decides exactly as for a token: an admin
 * appoints a teacher with a RoleBinding to `<userPrefix><user>` or `<groupPrefix><group>`.
 */
export interface SessionAuth {
  sessions: RequestSessions;
  userPrefix: string;
  groupPrefix: string;
  /** The console's origin: the only one whose pages may send cookie-authenticated writes. */
  origin: string;
  /**
   * Whether the session was ended before its expiry (sign-out, sign out everywhere, a teacher:
   * api/sessions.ts); such a cookie signs nobody in.
   */
  ended?: ((session: Session) => Promise<boolean>) | undefined;
}

/** The Kubernetes identity of a session: prefixed, and nothing else (no system:authenticated). */
export function sessionCaller(
  session: Session,
  auth: Pick<SessionAuth, "userPrefix" | "groupPrefix">,
): Caller {
  return {
    username: auth.userPrefix + session.user,
    groups: session.groups.map((g) => auth.groupPrefix + g),
    session,
  };
}

/** Methods that change nothing; every other one sent with a cookie must come from the console's own pages. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

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
export function installAuth(app: FastifyInstance, opts: AuthOptions): void {
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

  /** The caller of a request without a bearer token: its session, when sessions are on and it sends one. */
  async function sessionCallerOf(request: FastifyRequest): Promise<Caller> {
    if (!sessions || !request.headers.cookie?.includes(`${SESSION_COOKIE}=`))
      throw new HttpError(
        401,
        "Unauthorized",
        sessions
          ? "authentication required: send Authorization: Bearer <Kubernetes token>, or sign in (the console)"
          : "authentication required: send Authorization: Bearer <Kubernetes token>",
      );
    const found = await sessions.sessions.fromRequest(request.raw);
    if (!found.session)
      throw new HttpError(
        401,
        "Unauthorized",
        found.conflicting
          ? "the browser sent sessions of different users: sign out and sign in again"
          : "the session is not valid (expired, or signed by another installation): sign in again",
      );
    if (await sessions.ended?.(found.session))
      throw new HttpError(401, "Unauthorized", "the session was ended (signed out): sign in again");
    // A cookie goes with every request the browser makes, whoever's page asks for it (another
    // Template's host is the same site): a write counts only from the console's own pages.
    if (!SAFE_METHODS.has(request.method) && !formFromOwnSite(request.headers, (o) => o === sessions.origin))
      throw new HttpError(
        403,
        "Forbidden",
        "cross-site request refused: a request signed in with the session cookie must come from the console's own pages (send a bearer token instead)",
      );
    return sessionCaller(found.session, sessions);
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
    } else request.caller = await sessionCallerOf(request);
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
}
