/**
 * Class rosters: parsing (CSV or JSON), per-line validation and the import plan. Pure functions;
 * rosterImport.ts does the Kubernetes side.
 *
 * Rules: a roster never creates two Userlands for one identity and never rewrites an identity.
 * Each line is valid or reported with its reason; a user listed twice is created once and reported
 * once under duplicates; a user listed twice with different settings is ambiguous, so the later line
 * is reported invalid and the first one is used.
 */
import { CsvError, parse } from "csv-parse/sync";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { userlandNameFor } from "../../api/naming.ts";
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

/** Validates every line; `defaultTemplate` applies to lines without a template of their own. */
export function validateRoster(
  rows: readonly RosterRow[],
  defaultTemplate: string | undefined,
): ValidatedRoster {
  const entries: RosterEntry[] = [];
  const invalid: InvalidLine[] = [];
  const first = new Map<string, RosterEntry>();
  const lines = new Map<string, number[]>();
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
    const seen = lines.get(row.user);
    if (seen) seen.push(row.line);
    else lines.set(row.user, [row.line]);
    const earlier = first.get(row.user);
    if (earlier) {
      if (earlier.templateName !== templateName || (earlier.enabled ?? true) !== (enabled ?? true)) {
        fail(
          `listed again with different settings (line ${earlier.line}: template "${earlier.templateName}"); the first line is used`,
        );
      }
      continue;
    }
    const entry = { line: row.line, user: row.user, templateName, enabled };
    first.set(row.user, entry);
    entries.push(entry);
  }
  const duplicates = [...lines].filter(([, l]) => l.length > 1).map(([user, l]) => ({ user, lines: l }));
  return { entries, invalid, duplicates };
}

export interface ExistingEntry {
  line: number;
  user: string;
  name: string;
  templateName: string;
  /** The roster's template, when it differs from the one the existing Userland uses (it is not changed). */
  rosterTemplate?: string;
}

export interface ImportPlan {
  create: RosterEntry[];
  existing: ExistingEntry[];
  /** Userlands of the pruned template whose user is not on the roster. */
  toDelete: Userland[];
}

/**
 * What to create and what already exists, given every Userland in the namespace. With `prune`, the
 * Userlands of that template whose user is on no line of the roster, not even an invalid one, are
 * listed for deletion: a line with a typo in another column must not cost a student their environment.
 */
export function planImport(
  entries: readonly RosterEntry[],
  userlands: readonly Userland[],
  prune: { template: string; rosterUsers: ReadonlySet<string> } | undefined,
): ImportPlan {
  const byUser = new Map<string, Userland>();
  for (const u of userlands) if (!byUser.has(u.spec.user)) byUser.set(u.spec.user, u);
  const create: RosterEntry[] = [];
  const existing: ExistingEntry[] = [];
  for (const entry of entries) {
    const found = byUser.get(entry.user);
    if (!found) {
      create.push(entry);
      continue;
    }
    existing.push({
      line: entry.line,
      user: entry.user,
      name: found.metadata.name ?? userlandNameFor(entry.user),
      templateName: found.spec.templateName,
      ...(found.spec.templateName === entry.templateName ? {} : { rosterTemplate: entry.templateName }),
    });
  }
  const toDelete = prune
    ? userlands.filter((u) => u.spec.templateName === prune.template && !prune.rosterUsers.has(u.spec.user))
    : [];
  return { create, existing, toDelete };
}
