/**
 * The teachers' console under /console: a class (the Userlands of one Template, optionally one
 * class label value) as a table with Start / Stop / Delete, and roster upload with a preview of
 * every change before anything is written.
 *
 * The console has no powers of its own. A teacher signs in through the auth service (the session
 * cookie); installAuth turns the session into a prefixed Kubernetes user and groups, and every
 * action is a request to the REST API itself (`inject`, with the teacher's cookie and the browser's
 * Origin/Sec-Fetch-Site), so RBAC decides, the CSRF check applies and the API logs the teacher as
 * for any other caller. Only reading a class goes to the store directly, after the same access
 * review, because the API's view has no labels and no last activity.
 */
import { isStalled, progressText, startDuration } from "../../../lib/startProgress.ts";
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import pLimit from "p-limit";
import type { Gauge } from "prom-client";
import { USERLANDS, UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { html } from "../../../lib/html.ts";
import { ALL_NAMESPACES } from "../../../lib/namespaces.ts";
import { KubeError } from "../../../lib/kubeRest.ts";
import { forbidden } from "../auth/accessReview.ts";
import { USERLAND_RESOURCE, callerKey, reviewCache, type Resource, type Verb } from "../auth/caller.ts";
import type { ConsoleConfig } from "../config.ts";
import { HttpError, badRequest, fromKubeError } from "../errors.ts";
import { invalidTemplateReason, invalidUserlandNameReason } from "../schemas.ts";
import type { UserlandFilter, UserlandStore } from "../store.ts";
import { assignmentConsoleRoutes, type AssignmentConsoleDeps } from "./assignmentRoutes.ts";
import { endOfTermConsoleRoutes } from "./endOfTermRoutes.ts";
import { examConsoleRoutes } from "./examRoutes.ts";
import { gradeBookConsoleRoutes } from "./gradeBookRoutes.ts";
import { reviewConsoleRoutes } from "./reviewRoutes.ts";
import { visitUrl } from "./visitLink.ts";
import { bodyStream, uploadConsoleRoutes } from "./uploadRoutes.ts";
import { formOf, installFormParsers } from "./forms.ts";
import {
  actionFailedPage,
  classPage,
  confirmDeletePage,
  indexPage,
  type ActionOutcome,
  type ClassSummary,
  type Row,
} from "./classPages.ts";
import { CONSOLE_PATH, PAGE_HEADERS, classUrl, errorPage, type Viewer } from "./layout.ts";
import { forbiddenPage } from "./forbiddenPage.ts";
import { rosterFormPage, rosterPreviewPage, rosterResultPage, type ImportReport } from "./rosterPages.ts";

export interface ConsoleOptions {
  store: UserlandStore;
  /** Counts the requests in flight (the per-caller cap's state). */
  inFlightGauge?: Gauge | undefined;
  config: ConsoleConfig;
  rosterMaxBytes: number;
  /** Parallel API calls of one bulk action. */
  concurrency: number;
  now?: () => Date;
}

const ACTIONS = ["start", "stop", "delete", "end-sessions"] as const;
type Action = (typeof ACTIONS)[number];
const DONE: Record<Action, string> = {
  start: "Started",
  stop: "Stopped",
  delete: "Deleted",
  // A stolen laptop: every session of the student issued until now is refused (api/sessions.ts).
  "end-sessions": "Signed out (everywhere) the students of",
};
/** Most environments one bulk action names (a class is far smaller). */
const MAX_SELECTED = 2000;
/** The console's own right, which also marks the namespaces where a Role names single Userlands. */
const CONSOLE_RIGHT: Resource = { resource: USERLANDS, subresource: "console" };
/**
 * The console's door (issue 29): before a console route reads a body or lists anything, the caller
 * must hold one of these rights without a name in some served namespace: `list` Userlands (a
 * namespace's teacher), `list` Assignments (a course teacher), or `get` on the made-up subresource
 * `userlands/console`, for a teacher whose Role names their class's Userlands (resourceNames),
 * docs/decisions/0009-teachers.md.
 */
const DOOR: readonly [Verb, Resource][] = [
  ["list", { resource: USERLANDS }],
  ["list", { resource: "assignments" }],
  ["get", CONSOLE_RIGHT],
];
/**
 * How long the door's answer is kept for a caller, refusals too: a student reloading the console
 * costs no review within it; a new RoleBinding opens it within this time.
 */
const DOOR_TTL_MS = 5_000;
/** Console requests one caller may have in flight; more are answered 429 (a teacher needs one or two). */
const MAX_IN_FLIGHT_PER_CALLER = 4;
/**
 * The body limit of a console form that is not a roster: the largest, a bulk action naming
 * MAX_SELECTED Userlands, is under 160 KiB. Only the roster forms take more, and only once the
 * door has let the caller in (nothing is read before it).
 */
const FORM_MAX_BYTES = 256 * 1024;
/** Headers an action's API request takes from the teacher's: who it is and where the form came from. */
const FORWARDED = ["cookie", "authorization", "origin", "sec-fetch-site", "user-agent"] as const;

const isAction = (value: unknown): value is Action => (ACTIONS as readonly unknown[]).includes(value);

export const consoleRoutes: FastifyPluginCallback<ConsoleOptions> = (app, opts, done) => {
  const { store, config } = opts;
  const now = opts.now ?? (() => new Date());
  const limit = pLimit(opts.concurrency);
  // A roster travels in a form field twice at most (file and text box), percent-encoded at worst.
  const bodyLimit = opts.rosterMaxBytes * 3 + 64 * 1024;
  installFormParsers(app, FORM_MAX_BYTES);

  const doors = reviewCache<Promise<boolean>>();
  /** Whether the caller may use the console at all (DOOR), remembered for DOOR_TTL_MS; shared while asked. */
  function mayEnter(request: FastifyRequest, key: string): Promise<boolean> {
    let answer = doors.get(key);
    if (!answer) {
      answer = (async () => {
        for (const [verb, resource] of DOOR) if (await request.mayAnywhere(verb, resource)) return true;
        return false;
      })();
      doors.set(key, answer, { ttl: DOOR_TTL_MS });
      answer.catch(() => doors.delete(key));
    }
    return answer;
  }
  const inFlight = new Map<string, number>();
  // Refusals of a class table's rows, kept briefly (grants are kept by the reviewer): a teacher
  // whose Role names their class does not cost a review per other student on every reload.
  const refusals = reviewCache<true>();
  async function mayBriefly(
    request: FastifyRequest,
    verb: Verb,
    name?: string,
    ns?: string,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<boolean> {
    const key = JSON.stringify([
      request.caller ? callerKey(request.caller) : "",
      verb,
      name ?? "",
      ns ?? "",
      resource.subresource ?? "",
    ]);
    if (refusals.get(key)) return false;
    const allowed = await request.may(verb, name, ns, resource);
    if (!allowed) refusals.set(key, true, { ttl: DOOR_TTL_MS });
    return allowed;
  }

  // Authorize first: installAuth's onRequest has authenticated the caller; no console route reads
  // its body, lists Userlands or renders a name before the door has let the caller in.
  app.addHook("onRequest", async (request, reply) => {
    const caller = request.caller;
    if (!caller) return;
    const key = callerKey(caller);
    if (!(await mayEnter(request, key)))
      throw forbidden(caller, "list", store.served.single ?? store.served.names[0] ?? ALL_NAMESPACES, {
        resource: USERLANDS,
      });
    const busy = inFlight.get(key) ?? 0;
    if (busy >= MAX_IN_FLIGHT_PER_CALLER) {
      void reply.header("retry-after", "5");
      throw new HttpError(
        429,
        "TooManyRequests",
        `you have ${busy} console requests in progress: wait for them to finish, then try again`,
      );
    }
    inFlight.set(key, busy + 1);
    opts.inFlightGauge?.inc();
    reply.raw.once("close", () => {
      opts.inFlightGauge?.dec();
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left > 0) inFlight.set(key, left);
      else inFlight.delete(key);
    });
  });

  const signOutUrl = (() => {
    const url = new URL("logout", config.loginUrl);
    url.searchParams.set("rd", config.url.href);
    return url.href;
  })();

  const viewerOf = (request: FastifyRequest): Viewer => {
    const caller = request.caller;
    return {
      user: caller?.session?.user ?? caller?.username ?? "",
      kubernetesUser: caller?.username ?? "",
      groups: caller?.groups ?? [],
      signOutUrl,
    };
  };

  const send = (reply: FastifyReply, status: number, page: string) =>
    reply.code(status).headers(PAGE_HEADERS).send(page);

  app.setErrorHandler((thrown: Error & { statusCode?: number }, request, reply) => {
    // The API server's own answers mean what they mean at the API (a 403 there is the service's).
    const error = thrown instanceof KubeError ? fromKubeError(thrown) : thrown;
    const status = error instanceof HttpError ? error.statusCode : (error.statusCode ?? 500);
    if (status === 401) {
      const login = new URL(config.loginUrl);
      login.searchParams.set("rd", new URL(request.url, config.url).href);
      if (request.method === "GET") return reply.redirect(login.href, 302);
      return send(
        reply,
        401,
        errorPage(
          undefined,
          "Sign in again",
          error.message,
          html`<p><a href="${login.href}">Sign in</a></p>`,
        ),
      );
    }
    const viewer = request.caller ? viewerOf(request) : undefined;
    if (status === 403) {
      const refusedIn = error instanceof HttpError ? error.extra.permission : undefined;
      return send(reply, 403, forbiddenPage(viewer, error.message, refusedIn, store.served.single));
    }
    if (status >= 500) request.log.error({ err: thrown }, "console request failed");
    // Our own errors say what went wrong as the API would; anything else stays in the log.
    const message =
      status < 500 || error instanceof HttpError
        ? error.message
        : "Something went wrong; the service log has the details.";
    return send(reply, status, errorPage(viewer, status >= 500 ? "Error" : "Cannot do that", message));
  });

  /**
   * The Userlands the caller may see among those `wanted` keeps, for a number of access reviews
   * that grows with the namespaces, never with the Userlands (issue 31): all of them with `list`;
   * with several namespaces served, all of those in the namespaces where it may list (a course's
   * teacher); and one by one (`get`, each asked of RBAC where the Userland is) only in the
   * namespaces where it holds the console's right `get userlands/console`, the rule a Role naming
   * single Userlands (resourceNames, 0009 B) carries. Elsewhere nothing is listed or shown.
   * `complete`: every one of them was listable.
   */
  async function visible(
    request: FastifyRequest,
    filter: UserlandFilter,
    wanted: (u: Userland) => boolean = () => true,
  ): Promise<{ items: Userland[]; complete: boolean }> {
    if (await mayBriefly(request, "list"))
      return { items: (await store.list(filter)).filter(wanted), complete: true };
    const { single } = store.served;
    // The namespaces where a caller without the right everywhere may hold one: as the API's lists.
    const candidates = single !== undefined ? [single] : await store.templateNamespaces();
    const how = await Promise.all(
      candidates.map(async (ns) => {
        if (single === undefined && (await mayBriefly(request, "list", undefined, ns))) return "all";
        return (await mayBriefly(request, "get", undefined, ns, CONSOLE_RIGHT)) ? "each" : "none";
      }),
    );
    const listable = candidates.filter((_, i) => how[i] === "all");
    const byName = candidates.filter((_, i) => how[i] === "each");
    const wherever = [...listable, ...byName];
    const all =
      wherever.length === 0 ? [] : (await store.list({ ...filter, namespaces: wherever })).filter(wanted);
    const namespaceOf = (u: Userland) => u.metadata.namespace ?? "";
    const listed = new Set(listable);
    const one = all.filter((u) => !listed.has(namespaceOf(u)));
    const allowed = await Promise.all(
      one.map((u) => limit(() => mayBriefly(request, "get", u.metadata.name ?? "", namespaceOf(u)))),
    );
    const gettable = new Set(one.filter((_, i) => allowed[i]));
    const items = all.filter((u) => listed.has(namespaceOf(u)) || gettable.has(u));
    // Nothing to show and no right to list: the standard 403, naming the missing verb.
    if (items.length === 0) await request.authorize("list");
    return { items, complete: one.length === 0 };
  }

  /** One request to the REST API as the teacher; its answer, parsed. */
  async function api<T>(
    request: FastifyRequest,
    method: "GET" | "POST" | "PUT" | "DELETE",
    url: string,
    payload?: { contentType: string; body: string },
  ): Promise<{ status: number; body: T & { message?: string } }> {
    const headers: Record<string, string> = {};
    for (const name of FORWARDED) {
      const value = request.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    if (payload) headers["content-type"] = payload.contentType;
    const response = await app.inject({
      method,
      url,
      headers,
      ...(payload ? { payload: payload.body } : {}),
    });
    const text = response.body;
    return {
      status: response.statusCode,
      body: (text ? JSON.parse(text) : {}) as T & { message?: string },
    };
  }

  const template = (value: string | null | undefined, where: "query" | "body"): string => {
    const reason = invalidTemplateReason(value ?? "");
    if (reason) throw badRequest(`template ${reason}`, "template", where);
    return value ?? "";
  };
  const classOf = (value: string | null | undefined): string | undefined =>
    value && value.length <= 63 ? value : undefined;

  const hidden = { hide: true } as const;

  app.get(CONSOLE_PATH, { schema: hidden }, (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));

  app.get(`${CONSOLE_PATH}/`, { schema: hidden }, async (request, reply) => {
    const { items } = await visible(request, {});
    const byTemplate = new Map<string, ClassSummary>();
    for (const u of items) {
      const t = u.spec.templateName;
      const summary = byTemplate.get(t) ?? { template: t, classes: new Map<string, number>(), total: 0 };
      const klass = u.metadata.labels?.[config.classLabel] ?? "";
      summary.classes.set(klass, (summary.classes.get(klass) ?? 0) + 1);
      summary.total++;
      byTemplate.set(t, summary);
    }
    const summaries = [...byTemplate.values()].sort((a, b) => a.template.localeCompare(b.template));
    return send(reply, 200, indexPage(viewerOf(request), store.where, summaries, config.classLabel));
  });

  app.get(`${CONSOLE_PATH}/class`, { schema: hidden }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const name = template(query.template, "query");
    const klass = classOf(query.class);
    const { items, complete } = await visible(
      request,
      { templateName: name },
      (u) =>
        u.spec.templateName === name &&
        (klass === undefined || u.metadata.labels?.[config.classLabel] === klass),
    );
    if (items.length === 0 && !(await store.getTemplate(name)))
      throw new HttpError(404, "NotFound", `Template "${name}" does not exist in ${store.where}`);
    const rows: Row[] = items
      .map((u) => ({ ...rowOf(u), openUrl: visitUrl(config.visitUrl, u) }))
      .sort((a, b) => a.user.localeCompare(b.user) || a.name.localeCompare(b.name));
    const done = query.done;
    const count = Number(query.count);
    const notice =
      isAction(done) && Number.isInteger(count) && count >= 0
        ? `${DONE[done]} ${count} environment${count === 1 ? "" : "s"}.`
        : undefined;
    return send(
      reply,
      200,
      classPage(viewerOf(request), {
        template: name,
        klass,
        rows,
        query: {
          search: (query.q ?? "").slice(0, 256),
          state: (query.state ?? "").slice(0, 64),
          page: Number(query.page ?? "1"),
        },
        notice,
        complete,
        now: now(),
      }),
    );
  });

  app.post(`${CONSOLE_PATH}/class/actions`, { schema: hidden }, async (request, reply) => {
    const form = formOf(request.body);
    const name = template(form.get("template"), "body");
    const klass = classOf(form.get("class"));
    let action: unknown = form.get("action");
    let names = form.getAll("name");
    const row = form.get("row");
    if (row) {
      const colon = row.indexOf(":");
      action = row.slice(0, colon);
      names = [row.slice(colon + 1)];
    }
    if (!isAction(action)) throw badRequest("choose Start, Stop, Delete or Sign out", "action");
    names = [...new Set(names)];
    if (names.length === 0) throw badRequest("select at least one student first", "name");
    if (names.length > MAX_SELECTED)
      throw badRequest(`select at most ${MAX_SELECTED} students at once`, "name");
    for (const n of names) {
      const reason = invalidUserlandNameReason(n);
      if (reason) throw badRequest(`name ${reason}`, "name");
    }

    // One review for a teacher of the whole namespace; the API's per-name checks then use its grant.
    await request.may(action === "delete" ? "delete" : "patch");
    if (action === "delete" && form.get("confirm") !== "yes") {
      // Who owns each named environment only for a caller who may delete it (as the delete
      // itself would check): otherwise the page was an oracle of who takes which class.
      await Promise.all(names.map((n) => limit(() => request.authorize("delete", n))));
      const users = new Map(
        (await store.list({ templateName: name })).map((u): [string, string] => [
          u.metadata.name ?? "",
          u.spec.user,
        ]),
      );
      const targets = names.map((n) => ({ name: n, user: users.get(n) ?? n }));
      return send(reply, 200, confirmDeletePage(viewerOf(request), name, klass, targets));
    }

    const outcomes: ActionOutcome[] = await Promise.all(
      names.map((n) =>
        limit(async () => {
          const path = `/api/v1/userlands/${encodeURIComponent(n)}`;
          const answer =
            action === "delete"
              ? await api(request, "DELETE", path)
              : await api(request, "POST", `${path}/${action}`);
          return { name: n, status: answer.status, message: answer.body.message ?? "" };
        }),
      ),
    );
    const failed = outcomes.filter((o) => o.status >= 400);
    request.log.info(
      {
        by: request.caller?.username,
        action,
        template: name,
        class: klass,
        count: names.length,
        failed: failed.length,
      },
      "console: class action",
    );
    if (failed.length === 0)
      return reply.redirect(classUrl(name, klass, { done: action, count: String(names.length) }), 303);
    const [first] = failed;
    const status =
      first && failed.every((f) => f.status === first.status) && failed.length === names.length
        ? first.status
        : 200;
    return send(reply, status, actionFailedPage(viewerOf(request), name, klass, action, outcomes));
  });

  app.get(`${CONSOLE_PATH}/roster`, { schema: hidden }, async (request, reply) => {
    const name = template((request.query as Record<string, string | undefined>).template, "query");
    // The upload creates Userlands: a teacher who may not is told now, not after choosing a file
    // (where the Template is, with several namespaces served).
    await request.authorize("create", undefined, (await store.getTemplate(name))?.metadata.namespace);
    return send(reply, 200, rosterFormPage(viewerOf(request), name, opts.rosterMaxBytes));
  });

  /** The roster import, previewed or applied, as the teacher. */
  async function importRoster(
    request: FastifyRequest,
    name: string,
    roster: { text: string; format: "csv" | "json"; prune: boolean },
    mode: "preview" | "apply",
  ) {
    const query = new URLSearchParams({ template: name });
    if (mode === "preview") query.set("preview", "true");
    if (roster.prune) query.set("prune", "true");
    if (roster.prune && mode === "apply") query.set("dryRun", "false");
    const answer = await api<ImportReport>(request, "POST", `/api/v1/rosters/import?${query.toString()}`, {
      contentType: roster.format === "json" ? "application/json" : "text/csv",
      body: roster.text,
    });
    if (answer.status !== 200)
      throw new HttpError(
        answer.status,
        "RosterRefused",
        answer.body.message ?? `the import answered ${answer.status}`,
      );
    return answer.body;
  }

  app.post(`${CONSOLE_PATH}/roster/preview`, { schema: hidden, bodyLimit }, async (request, reply) => {
    const form = formOf(request.body);
    const name = template(form.get("template"), "body");
    const file = form.get("file") ?? "";
    const text = file.trim() !== "" ? file : (form.get("text") ?? "");
    if (text.trim() === "") throw badRequest("choose a roster file or paste the roster", "file");
    const filename = file.trim() !== "" ? (form.get("file.filename") ?? "") : "";
    const format = /\.json$/i.test(filename) || text.trimStart().startsWith("{") ? "json" : "csv";
    const roster = { text, format, prune: form.get("prune") === "true" } as const;
    const report = await importRoster(request, name, roster, "preview");
    return send(reply, 200, rosterPreviewPage(viewerOf(request), name, report, roster));
  });

  app.post(`${CONSOLE_PATH}/roster/apply`, { schema: hidden, bodyLimit }, async (request, reply) => {
    const form = formOf(request.body);
    const name = template(form.get("template"), "body");
    const text = form.get("roster") ?? "";
    if (text.trim() === "") throw badRequest("the roster is empty", "roster");
    const roster = {
      text,
      format: form.get("format") === "json" ? "json" : "csv",
      prune: form.get("prune") === "true",
    } as const;
    const report = await importRoster(request, name, roster, "apply");
    request.log.info(
      {
        by: request.caller?.username,
        template: name,
        created: report.created.length,
        deleted: report.deleted.length,
        failed: report.failed.length,
      },
      "console: roster applied",
    );
    return send(reply, 200, rosterResultPage(viewerOf(request), name, report));
  });
  // Uploads stream through: a context of their own, whose multipart parser leaves the body alone.
  app.register((child, _opts, next) => {
    uploadConsoleRoutes(child, {
      send,
      viewerOf,
      get: (request, url) => api(request, "GET", url),
      forward: async (request, url) => {
        const headers: Record<string, string> = {};
        for (const name of [...FORWARDED, "content-type"] as const) {
          const value = request.headers[name];
          if (typeof value === "string") headers[name] = value;
        }
        const response = await app.inject({ method: "POST", url, headers, payload: bodyStream(request) });
        return {
          status: response.statusCode,
          body: (response.body ? JSON.parse(response.body) : {}) as never,
        };
      },
    });
    next();
  });
  const teacherApi: AssignmentConsoleDeps["api"] = (request, method, url, json) =>
    api(
      request,
      method,
      url,
      json === undefined ? undefined : { contentType: "application/json", body: JSON.stringify(json) },
    );
  assignmentConsoleRoutes(app, { store, send, viewerOf, api: teacherApi });
  endOfTermConsoleRoutes(app, { send, viewerOf, api: teacherApi });
  examConsoleRoutes(app, { send, viewerOf, api: teacherApi });
  gradeBookConsoleRoutes(app, { send, viewerOf, api: teacherApi });
  reviewConsoleRoutes(app, { send, viewerOf, api: teacherApi });
  done();
};

/** "started in 23 s" for a Ready environment whose last start the operator followed. */
function startedIn(u: Userland): string {
  const took = startDuration(u.status?.progress);
  return took ? `started in ${took}` : "";
}

/** A table row: the state a teacher cares about (a stopped environment is Stopped whatever its phase). */
function rowOf(u: Userland): Row {
  const annotations = u.metadata.annotations ?? {};
  const stopped = u.spec.enabled === false;
  const reason = annotations[UserlandAnnotations.stoppedReason];
  const activity = annotations[UserlandAnnotations.lastActivity];
  const at = activity ? new Date(activity) : undefined;
  return {
    name: u.metadata.name ?? "",
    user: u.spec.user,
    state: stopped ? "Stopped" : (u.status?.phase ?? "Pending"),
    detail: stopped
      ? reason === "IdleTimeout"
        ? "stopped after a while without use"
        : (reason ?? "")
      : u.status?.phase === "Ready"
        ? startedIn(u)
        : [u.status?.message ?? "", progressText(u.status?.progress, new Date())].filter(Boolean).join(" — "),
    stalled: !stopped && isStalled(u.status),
    lastActivity: at && !Number.isNaN(at.getTime()) ? at : undefined,
  };
}
