/**
 * Class rosters: parsing (CSV or JSON), per-line validation and the import plan. Pure functions;
 * rosterImport.ts does the Kubernetes side.
 *
 * Rules: a roster line names a (user, Template) pair, and a student may be on several lines with
 * different Templates (one environment per Template). A roster never creates two Userlands for one
 * pair and never rewrites an identity. Each line is valid or reported with its reason; a pair listed
 * twice is created once and reported once under duplicates; a pair listed twice with different
 * settings is ambiguous, so the later line is reported invalid and the first one is used.
 */
import { CsvError, parse } from "csv-parse/sync";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { badRequest } from "./errors.ts";
import { invalidTemplateReason, invalidUserReason } from "./schemas.ts";

/** One roster line as written, before validation. */
export interface RosterRow {
  /** CSV: the line the record starts on (the header is line 1). JSON: the 1-based position in `users`. */
  line: number;
  user: string;
  template?: string | undefined;
  /** CSV text ("true", "no", ...) or a JSON boolean. */
  enabled?: string | boolean | undefined;
  /** Why the line cannot be read at all (e.g. more CSV fields than the header). */
  problem?: string | undefined;
}

export interface RosterEntry {
  line: number;
  user: string;
  templateName: string;
  enabled: boolean | undefined;
}

export interface InvalidLine {
  line: number;
  user: string;
  reason: string;
}

export interface Duplicate {
  user: string;
  templateName: string;
  lines: number[];
}

export interface ValidatedRoster {
  entries: RosterEntry[];
  invalid: InvalidLine[];
  duplicates: Duplicate[];
}

const ENABLED_TRUE = /^(true|yes|y|1|on)$/i;
const ENABLED_FALSE = /^(false|no|n|0|off)$/i;

/**
 * RFC 4180 CSV (csv-parse): quoted fields with "" escapes and embedded line breaks, CRLF, LF or CR, a
 * UTF-8 BOM. Unquoted fields are trimmed (spaces after commas are formatting; no valid identity
 * starts or ends with a space, so trimming cannot merge two identities); quoted fields are kept
 * exactly. Returns records with the line each starts on; blank lines are skipped.
 */
export function parseCsv(text: string): { line: number; fields: string[] }[] {
  const records: { line: number; fields: string[] }[] = [];
  // Line breaks become \n first: spreadsheets write CRLF, old ones CR, hand edits mix them, and
  // csv-parse counts lines right only with one record delimiter. No roster value may hold a line
  // break, so no valid line changes.
  const normalized = text.replace(/\r\n?/g, "\n");
  // Where the record being read starts: the line after the previous record and the empty lines since.
  let previous = { lines: 0, emptyLines: 0 };
  const startOf = (emptyLines: number) => previous.lines + 1 + (emptyLines - previous.emptyLines);
  try {
    parse(normalized, {
      bom: true,
      trim: true,
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
      record_delimiter: "\n",
      raw: true,
      // With raw: true the record arrives as { record, raw } (the typings say string[]).
      on_record: (item: unknown, context) => {
        const fields = (item as { record: string[] }).record;
        const line = startOf(context.empty_lines);
        previous = { lines: context.lines, emptyLines: context.empty_lines };
        // A line of only commas and spaces is blank; a quoted empty field ("") is not.
        const blank = fields.every((f) => f === "") && !(context.raw ?? "").includes('"');
        if (!blank) records.push({ line, fields });
        return null;
      },
    });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const lines = typeof error.lines === "number" ? error.lines : 0;
    switch (error.code) {
      case "CSV_QUOTE_NOT_CLOSED": {
        const emptyLines = typeof error.empty_lines === "number" ? error.empty_lines : previous.emptyLines;
        throw badRequest(`CSV line ${startOf(emptyLines)}: a quoted field is not closed`, "body");
      }
      case "CSV_INVALID_CLOSING_QUOTE":
      case "CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE":
        throw badRequest(`CSV line ${lines}: unexpected text after a quoted field`, "body");
      default:
        throw badRequest(`CSV line ${lines}: ${error.message}`, "body");
    }
  }
  return records;
}

const COLUMN_ALIASES: Record<string, "user" | "template" | "enabled"> = {
  user: "user",
  template: "template",
  templatename: "template",
  enabled: "enabled",
};

/** A CSV roster: a header row with a `user` column and optional `template` and `enabled` columns; other columns are ignored. */
export function csvRoster(text: string): RosterRow[] {
  const records = parseCsv(text);
  const header = records.shift();
  if (!header)
    throw badRequest('the CSV roster is empty: expected a header row with a "user" column', "body");
  const columns: Partial<Record<"user" | "template" | "enabled", number>> = {};
  header.fields.forEach((name, index) => {
    const key = COLUMN_ALIASES[name.trim().toLowerCase()];
    if (!key) return;
    if (columns[key] !== undefined) throw badRequest(`the CSV header names the column "${key}" twice`, key);
    columns[key] = index;
  });
  const userColumn = columns.user;
  if (userColumn === undefined) {
    throw badRequest(
      `the CSV header (line ${header.line}) has no "user" column; found: ${header.fields.map((f) => JSON.stringify(f)).join(", ")}`,
      "user",
    );
  }
  const width = header.fields.length;
  return records.map(({ line, fields }) => {
    const at = (column: number | undefined) => (column === undefined ? undefined : fields[column]);
    const row: RosterRow = {
      line,
      user: fields[userColumn] ?? "",
      template: at(columns.template) || undefined,
      enabled: at(columns.enabled) || undefined,
    };
    // More fields than the header usually means an unquoted comma, which shifts the columns.
    if (fields.length > width)
      row.problem = `has ${fields.length} fields but the header has ${width} (quote values that contain commas)`;
    return row;
  });
}

export type JsonRosterItem =
  string | { user: string; templateName?: string | undefined; enabled?: boolean | undefined };

export function jsonRoster(users: readonly JsonRosterItem[]): RosterRow[] {
  return users.map((item, index) =>
    typeof item === "string"
      ? { line: index + 1, user: item }
      : { line: index + 1, user: item.user, template: item.templateName, enabled: item.enabled },
  );
}

/** The key of a (user, Template) pair in maps; NUL is in neither an identity nor a Template name. */
const pairKey = (user: string, templateName: string) => `${templateName}\u0000${user}`;

/** Validates every line; `defaultTemplate` applies to lines without a template of their own. */
export function validateRoster(
  rows: readonly RosterRow[],
  defaultTemplate: string | undefined,
): ValidatedRoster {
  const entries: RosterEntry[] = [];
  const invalid: InvalidLine[] = [];
  const first = new Map<string, RosterEntry>();
  const lines = new Map<string, { user: string; templateName: string; lines: number[] }>();
  for (const row of rows) {
    const fail = (reason: string) => invalid.push({ line: row.line, user: row.user, reason });
    if (row.problem) {
      fail(row.problem);
      continue;
    }
    const userReason = invalidUserReason(row.user);
    if (userReason) {
      fail(`user ${userReason}`);
      continue;
    }
    const templateName = row.template ?? defaultTemplate;
    if (templateName === undefined) {
      fail("no template: give the line a template, or the request a templateName (JSON) or ?template=");
      continue;
    }
    const templateReason = invalidTemplateReason(templateName);
    if (templateReason) {
      fail(`template "${templateName}" ${templateReason}`);
      continue;
    }
    let enabled: boolean | undefined;
    if (typeof row.enabled === "boolean") enabled = row.enabled;
    else if (row.enabled !== undefined && row.enabled !== "") {
      if (ENABLED_TRUE.test(row.enabled)) enabled = true;
      else if (ENABLED_FALSE.test(row.enabled)) enabled = false;
      else {
        fail(`enabled must be true or false, not ${JSON.stringify(row.enabled)}`);
        continue;
      }
    }
    const key = pairKey(row.user, templateName);
    const seen = lines.get(key);
    if (seen) seen.lines.push(row.line);
    else lines.set(key, { user: row.user, templateName, lines: [row.line] });
    const earlier = first.get(key);
    if (earlier) {
      if ((earlier.enabled ?? true) !== (enabled ?? true)) {
        fail(
          `listed again for template "${templateName}" with different settings (line ${earlier.line}: enabled ${String(earlier.enabled ?? true)}); the first line is used`,
        );
      }
      continue;
    }
    const entry = { line: row.line, user: row.user, templateName, enabled };
    first.set(key, entry);
    entries.push(entry);
  }
  const duplicates = [...lines.values()].filter((d) => d.lines.length > 1);
  return { entries, invalid, duplicates };
}

/** What pruning may delete: Userlands of `templates` whose pair is on no line of the roster. */
export interface PruneScope {
  /** The Templates the import covers; other Templates' Userlands are never touched. */
  templates: ReadonlySet<string>;
  /** Whether a line of the roster, valid or not, names this pair (or may: see pruneScope). */
  onRoster: (user: string, templateName: string) => boolean;
}

/**
 * The Templates an import covers: the one the request names (?template= or templateName), so that
 * importing the database class never prunes the programming class even when a line names another
 * Template; a request without one covers the Templates its valid lines name. A line protects its
 * pair whether it is valid or not (a typo in another column must not cost a student their
 * environment); a line that cannot be read, or names no usable Template, protects its user in
 * every Template (it may be the student's line for any of them).
 */
export function pruneScope(
  rows: readonly RosterRow[],
  entries: readonly RosterEntry[],
  requestTemplate: string | undefined,
): PruneScope {
  const templates = new Set(requestTemplate ? [requestTemplate] : entries.map((e) => e.templateName));
  /** Templates some valid line resolved to (the request's too): a line naming another one is garbled. */
  const usable = new Set([
    ...entries.map((e) => e.templateName),
    ...(requestTemplate ? [requestTemplate] : []),
  ]);
  const pairs = new Set<string>();
  const everywhere = new Set<string>();
  for (const row of rows) {
    const template = row.template ?? requestTemplate;
    if (row.problem || template === undefined || !usable.has(template)) everywhere.add(row.user);
    else pairs.add(pairKey(row.user, template));
  }
  return {
    templates,
    onRoster: (user, templateName) => everywhere.has(user) || pairs.has(pairKey(user, templateName)),
  };
}

export interface ExistingEntry {
  line: number;
  user: string;
  name: string;
  templateName: string;
}

export interface ImportPlan {
  create: RosterEntry[];
  existing: ExistingEntry[];
  /** Userlands of the covered Templates whose pair is on no line of the roster. */
  toDelete: Userland[];
}

/**
 * What to create and what already exists, given the Userlands of the roster's Templates (at least):
 * a pair that has a Userland under any name (one named by the older one-per-user rule, or by hand)
 * exists. With `prune`, the covered Templates' Userlands whose pair is not on the roster are listed
 * for deletion.
 */
export function planImport(
  entries: readonly RosterEntry[],
  userlands: readonly Userland[],
  prune: PruneScope | undefined,
): ImportPlan {
  const byPair = new Map<string, Userland>();
  for (const u of userlands) {
    const key = pairKey(u.spec.user, u.spec.templateName);
    if (!byPair.has(key)) byPair.set(key, u);
  }
  const create: RosterEntry[] = [];
  const existing: ExistingEntry[] = [];
  for (const entry of entries) {
    const found = byPair.get(pairKey(entry.user, entry.templateName));
    if (!found) {
      create.push(entry);
      continue;
    }
    existing.push({
      line: entry.line,
      user: entry.user,
      name: found.metadata.name ?? "",
      templateName: found.spec.templateName,
    });
  }
  const toDelete = prune
    ? userlands.filter(
        (u) => prune.templates.has(u.spec.templateName) && !prune.onRoster(u.spec.user, u.spec.templateName),
      )
    : [];
  return { create, existing, toDelete };
}
