/**
 * POST /api/v1/rosters/import: idempotent bulk import of a class roster (JSON or CSV).
 *
 * Every line names a (user, Template) pair: its own template column or field, else the request's
 * (`?template=` or `templateName`). A student may be on several lines with different Templates.
 *
 * Order matters for "nothing half-done after an error": parse and validate every line, check the
 * templates and the caller's rights (including delete, when pruning), read the current Userlands of
 * the Templates involved (field selectors: never everyone's); only then write. A write that fails is reported for its user and the others go on: a re-run
 * creates exactly what is still missing.
 *
 * Pruning deletes environments (and, with a Template's reclaimPolicy Delete, students' data), so it
 * is a dry run unless `dryRun=false`, never deletes when the roster has invalid lines, and only ever
 * touches the Templates the import covers (roster.ts pruneScope).
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import pLimit from "p-limit";
import { userlandNameFor } from "../../api/naming.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { isConflict } from "../../lib/kubeRest.ts";
import type { Static } from "../../api/v1alpha1/schema.ts";
import { HttpError, badRequest, notFound } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import {
  csvRoster,
  jsonRoster,
  planImport,
  pruneScope,
  validateRoster,
  type RosterEntry,
  type RosterRow,
} from "./roster.ts";
import { CsvRosterBody, ErrorBody, ImportResult, JsonRosterBody, RosterImportQuery } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

export interface RosterRouteOptions {
  store: UserlandStore;
  metrics: Metrics;
  maxRows: number;
  maxBytes: number;
  concurrency: number;
}

const ref = (u: Userland) => ({
  user: u.spec.user,
  name: u.metadata.name ?? "",
  templateName: u.spec.templateName,
});

export const rosterRoutes: FastifyPluginCallbackTypebox<RosterRouteOptions> = (app, opts, done) => {
  const { maxBytes, maxRows } = opts;

  app.addContentTypeParser("text/csv", { parseAs: "string", bodyLimit: maxBytes }, (_request, body, done) =>
    done(null, body),
  );

  app.post(
    "/api/v1/rosters/import",
    {
      bodyLimit: maxBytes,
      // "each": with several namespaces, a teacher bound in some of them imports the lines whose
      // Templates are there; the other lines are invalid, naming the namespace.
      config: { permissions: ["create", "list"], scope: "each" },
      schema: {
        tags: ["rosters"],
        summary: "Import a class roster (idempotent)",
        description:
          "Every line names a (user, Template) pair (its own template, else the request's). Creates a Userland for every valid pair that has none, " +
          "reports the pairs that have one, invalid lines with the reason and pairs listed twice. With prune=true also lists the Userlands of the " +
          "Templates the import covers whose pair is on no line, and deletes them only with dryRun=false. " +
          `At most ${maxRows} lines and ${maxBytes} bytes (413 beyond).`,
        querystring: RosterImportQuery,
        body: {
          content: { "application/json": { schema: JsonRosterBody }, "text/csv": { schema: CsvRosterBody } },
        },
        response: {
          200: ImportResult,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
        },
      },
    },
    async (request) => importRoster(request, opts),
  );
  done();
};

/** What the import reads of its request: the roster, the caller, and the auth plugin's checks. */
type ImportRequest = Pick<FastifyRequest, "namespaces" | "authorize" | "caller" | "log"> & {
  query: Static<typeof RosterImportQuery>;
  body: unknown;
};

/**
 * The import, in the order the header describes: parse and validate every line, check Templates
 * and rights, read the Userlands involved, only then create and (pruning) delete.
 */
async function importRoster(request: ImportRequest, opts: RosterRouteOptions): Promise<ImportResult> {
  const { store, metrics, maxRows, concurrency } = opts;
  const query = request.query;
  const body = request.body as Static<typeof JsonRosterBody> | string;
  let rows: RosterRow[];
  let defaultTemplate = query.template;
  if (typeof body === "string") {
    rows = csvRoster(body);
  } else {
    if (body.templateName && query.template && body.templateName !== query.template) {
      throw badRequest(
        `templateName "${body.templateName}" and ?template=${query.template} differ: give one`,
        "templateName",
      );
    }
    defaultTemplate = body.templateName ?? query.template;
    if (body.users.length > maxRows) throw tooMany(body.users.length, maxRows);
    rows = jsonRoster(body.users);
  }
  if (rows.length > maxRows) throw tooMany(rows.length, maxRows);
  const prune = query.prune === true;
  const dryRun = prune && query.dryRun !== false;
  const validated = validateRoster(rows, defaultTemplate);
  const invalid = [...validated.invalid];
  let entries: RosterEntry[] = validated.entries;

  // Templates: the request's own must exist (404, nothing done); a line's unknown template makes that line invalid.
  // Each one's namespace, looked up once: where its new Userlands go (several namespaces served).
  const namespaceOfTemplate = new Map<string, string | undefined>();
  const templateExists = async (name: string): Promise<boolean> => {
    if (!namespaceOfTemplate.has(name))
      namespaceOfTemplate.set(name, (await store.getTemplate(name))?.metadata.namespace);
    return namespaceOfTemplate.get(name) !== undefined;
  };
  if (defaultTemplate && !(await templateExists(defaultTemplate))) {
    throw notFound(
      `Template "${defaultTemplate}" does not exist in ${store.where}`,
      typeof body === "string" ? "template" : "templateName",
      typeof body === "string" ? "query" : "body",
    );
  }
  /** Moves the lines `reasonOf` finds fault with (a reason) from the entries to the invalid lines. */
  const reject = (reasonOf: (e: RosterEntry) => string | undefined) => {
    const kept: RosterEntry[] = [];
    for (const e of entries) {
      const reason = reasonOf(e);
      if (reason === undefined) kept.push(e);
      else invalid.push({ line: e.line, user: e.user, reason });
    }
    entries = kept;
    invalid.sort((a, b) => a.line - b.line);
  };
  const missing = new Set<string>();
  for (const name of new Set(entries.map((e) => e.templateName))) {
    if (name !== defaultTemplate && !(await templateExists(name))) missing.add(name);
  }
  reject((e) =>
    missing.has(e.templateName) ? `Template "${e.templateName}" does not exist in ${store.where}` : undefined,
  );

  // Several namespaces: the request's Template must be where the caller may create and list
  // (403, nothing done); a line's Template elsewhere makes that line invalid.
  const granted = request.namespaces;
  if (granted && defaultTemplate) {
    const ns = namespaceOfTemplate.get(defaultTemplate);
    if (ns !== undefined && !granted.includes(ns))
      for (const verb of ["create", "list"] as const) await request.authorize(verb, undefined, ns);
  }
  if (granted)
    reject((e) => {
      const ns = namespaceOfTemplate.get(e.templateName);
      return ns !== undefined && !granted.includes(ns)
        ? `${request.caller?.username ?? "the caller"} may not create and list Userlands in namespace "${ns}", where Template "${e.templateName}" is`
        : undefined;
    });

  const scope = prune ? pruneScope(rows, entries, defaultTemplate) : undefined;
  if (scope?.templates.size === 0) {
    throw badRequest(
      "prune needs the roster's template: set templateName (JSON) or ?template=, or name a template on the lines",
      "template",
      "query",
    );
  }

  const preview = query.preview === true;
  const deleting = prune && !dryRun && invalid.length === 0 && !preview;
  if (deleting)
    for (const ns of new Set([...(scope?.templates ?? [])].map((t) => namespaceOfTemplate.get(t))))
      await request.authorize("delete", undefined, ns);

  // The Userlands of every Template involved, one field-selected list each, where it is.
  const templates = new Set([...entries.map((e) => e.templateName), ...(scope?.templates ?? [])]);
  const userlands: Userland[] = [];
  for (const templateName of templates) {
    const ns = namespaceOfTemplate.get(templateName);
    userlands.push(...(await store.list({ templateName, namespaces: ns ? [ns] : undefined })));
  }
  const plan = planImport(entries, userlands, scope);
  const result: ImportResult = {
    created: [],
    existing: plan.existing,
    invalid,
    duplicates: validated.duplicates,
    failed: [],
    ...(scope ? { pruneTemplates: [...scope.templates].sort() } : {}),
    toDelete: plan.toDelete.map(ref),
    deleted: [],
    dryRun: prune && !deleting,
  };
  if (preview) {
    result.toCreate = plan.create.map((e) => ({
      line: e.line,
      user: e.user,
      name: userlandNameFor(e.user, e.templateName),
      templateName: e.templateName,
    }));
    result.dryRun = true;
    return result;
  }
  if (prune && !dryRun && !deleting) {
    result.message = `nothing was deleted: the roster has ${invalid.length} invalid line(s); fix them and import again with dryRun=false`;
  }

  const by = request.caller?.username ?? "";
  const limit = pLimit(concurrency);
  await limit.map(plan.create, async (entry) => {
    const name = userlandNameFor(entry.user, entry.templateName);
    try {
      const created = await store.create(
        entry.user,
        entry.templateName,
        entry.enabled,
        by,
        namespaceOfTemplate.get(entry.templateName),
      );
      metrics.created.inc({ source: "roster" });
      result.created.push({
        line: entry.line,
        user: entry.user,
        name: created.metadata.name ?? name,
        templateName: entry.templateName,
      });
    } catch (error) {
      if (isConflict(error)) {
        // Created concurrently (another import, the auth service's auto-provisioning): it exists now.
        const now = await store.get(name).catch(() => undefined);
        if (now?.spec.user === entry.user && now.spec.templateName === entry.templateName) {
          result.existing.push({
            line: entry.line,
            user: entry.user,
            name,
            templateName: now.spec.templateName,
          });
          return;
        }
        result.failed.push({
          line: entry.line,
          user: entry.user,
          reason: `the name "${name}" is taken by another Userland`,
        });
        return;
      }
      request.log.warn({ err: error, user: entry.user }, "roster import: create failed");
      result.failed.push({ line: entry.line, user: entry.user, reason: (error as Error).message });
    }
  });

  if (deleting) {
    await limit.map(plan.toDelete, async (u) => {
      const name = u.metadata.name ?? "";
      try {
        if (await store.delete(name, u.metadata.uid, u.metadata.namespace)) {
          metrics.deleted.inc({ source: "roster" });
          result.deleted.push(ref(u));
        }
      } catch (error) {
        if (isConflict(error)) return; // re-created since it was listed: not the one we meant
        request.log.warn({ err: error, name }, "roster import: delete failed");
        result.failed.push({ user: u.spec.user, reason: `delete failed: ${(error as Error).message}` });
      }
    });
  }

  const byLine = (a: { line?: number }, b: { line?: number }) =>
    (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER);
  result.created.sort(byLine);
  result.existing.sort(byLine);
  result.failed.sort(byLine);
  request.log.info(
    {
      by,
      template: defaultTemplate,
      created: result.created.length,
      existing: result.existing.length,
      invalid: result.invalid.length,
      failed: result.failed.length,
      toDelete: result.toDelete.length,
      deleted: result.deleted.length,
      dryRun: result.dryRun,
    },
    "roster imported",
  );
  return result;
}

function tooMany(count: number, max: number): HttpError {
  return new HttpError(
    413,
    "PayloadTooLarge",
    `the roster has ${count} users; at most ${max} are accepted in one import (split it)`,
    {
      field: "users",
      in: "body",
    },
  );
}
