/**
 * Request and response schemas of the REST API. The identity and template rules are the CRD's own
 * (USER_PATTERN, TEMPLATE_NAME_PATTERN from api/), so anything accepted here is accepted by the API
 * server, and the same schemas generate the OpenAPI document.
 */
import {
  TEMPLATE_NAME_MAX,
  TEMPLATE_NAME_PATTERN,
  USER_MAX,
  USER_PATTERN,
  USERLAND_NAME_PATTERN,
  UserlandAnnotations,
  UserlandPhases,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { StringEnum, Type, type Static } from "../../api/v1alpha1/schema.ts";

const USER_RE = new RegExp(USER_PATTERN);
const TEMPLATE_RE = new RegExp(TEMPLATE_NAME_PATTERN);
const USERLAND_NAME_RE = new RegExp(USERLAND_NAME_PATTERN);
/** What the API server allows for any object name. */
const USERLAND_NAME_MAX = 253;

export const UserSchema = Type.String({
  minLength: 1,
  maxLength: USER_MAX,
  pattern: USER_PATTERN,
  description:
    "The identity exactly as the auth service reports it (case and punctuation matter): printable ASCII, no leading or trailing space, at most 256 characters.",
  examples: ["Koba1t", "a.b@uni.ac.jp", "github:123"],
});

export const TemplateNameSchema = Type.String({
  minLength: 1,
  maxLength: TEMPLATE_NAME_MAX,
  pattern: TEMPLATE_NAME_PATTERN,
  description:
    "A Template in the service's namespace: lowercase letters, digits and '-', starting with a letter, at most 24 characters.",
  examples: ["code"],
});

/**
 * Userland names are the CRD's (USERLAND_NAME_PATTERN: no dots, unlike other object names);
 * hand-made ones need not be ours.
 */
export const UserlandNameSchema = Type.String({
  minLength: 1,
  maxLength: USERLAND_NAME_MAX,
  pattern: USERLAND_NAME_PATTERN,
  description:
    "The Userland's name (metadata.name): lowercase letters, digits and '-', starting and ending with a letter or digit.",
});

export const PhaseSchema = StringEnum([...UserlandPhases]);

export const CreateUserlandBody = Type.Object(
  {
    user: UserSchema,
    templateName: TemplateNameSchema,
    enabled: Type.Optional(Type.Boolean({ description: "Start the environment now (default true)." })),
    ifUserHasNone: Type.Optional(
      Type.Boolean({
        description:
          "Create it only if the user has no Userland of any Template yet, else 409 (default false). The auth service's auto-provisioning sends it: a student a teacher gave another Template's environment does not also get the default one at sign-in.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateUserlandBody = Static<typeof CreateUserlandBody>;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const UserlandView = Type.Object(
  {
    name: Type.String({
      description:
        "The Userland's name: for new ones a readable part and a hash of the exact identity and Template (api/naming.ts); older or hand-made ones keep theirs.",
    }),
    user: Type.String(),
    templateName: Type.String(),
    enabled: Type.Boolean(),
    phase: Nullable(PhaseSchema),
    message: Nullable(Type.String()),
    service: Nullable(
      Type.Object(
        { name: Type.String(), port: Type.Integer() },
        { description: "The Service the environment is reachable at (same namespace)." },
      ),
    ),
    stoppedReason: Nullable(
      Type.String({ description: 'Why the platform stopped it (e.g. "IdleTimeout").' }),
    ),
    createdAt: Type.String({ format: "date-time" }),
  },
  {
    description:
      "A Userland as the REST API shows it; phase, message and service are null until the operator has seen it.",
  },
);
export type UserlandView = Static<typeof UserlandView>;

export const UserlandList = Type.Object({ items: Type.Array(UserlandView) });

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: "Short reason, e.g. BadRequest, NotFound, Conflict." }),
    message: Type.String(),
    field: Type.Optional(Type.String({ description: "The request field at fault." })),
    in: Type.Optional(StringEnum(["body", "query", "params", "headers"])),
  },
  { additionalProperties: true, description: "An error" },
);

export const ConflictBody = Type.Object(
  {
    error: Type.String(),
    message: Type.String(),
    field: Type.Optional(Type.String()),
    userland: Type.Optional(UserlandView),
    names: Type.Optional(
      Type.Array(Type.String(), {
        description:
          "When the user has several Userlands where one was asked for (several Templates, or hand-made duplicates).",
      }),
    ),
  },
  { description: "The user already has a Userland of that Template, or has several where one was asked for" },
);

export function toView(u: Userland): UserlandView {
  return {
    name: u.metadata.name ?? "",
    user: u.spec.user,
    templateName: u.spec.templateName,
    enabled: u.spec.enabled !== false,
    phase: u.status?.phase ?? null,
    message: u.status?.message ?? null,
    service: u.status?.service ? { name: u.status.service.name, port: u.status.service.port } : null,
    stoppedReason: u.metadata.annotations?.[UserlandAnnotations.stoppedReason] ?? null,
    createdAt: String(u.metadata.creationTimestamp ?? ""),
  };
}

/** Why `user` is not a valid identity, in words, or undefined when it is one. */
export function invalidUserReason(user: unknown): string | undefined {
  if (typeof user !== "string") return "must be a string";
  if (user.length === 0) return "is empty";
  if (user.length > USER_MAX) return `is longer than ${USER_MAX} characters`;
  if (USER_RE.test(user)) return undefined;
  if (/^[ ]|[ ]$/.test(user)) return "has a leading or trailing space";
  if (/[\r\n]/.test(user)) return "contains a line break";
  if ([...user].some((c) => c < " " || c === "\x7f")) return "contains a control character";
  return "contains a character other than printable ASCII (identities are sent in the X-User header)";
}

/** Why `name` breaks an object-name rule, in words (`explain` words a pattern mismatch), or undefined. */
function nameReason(
  name: unknown,
  max: number,
  pattern: RegExp,
  explain: (name: string) => string,
): string | undefined {
  if (typeof name !== "string") return "must be a string";
  if (name.length === 0) return "is empty";
  if (name.length > max) return `is longer than ${max} characters`;
  return pattern.test(name) ? undefined : explain(name);
}

/** Why `name` is not a valid Userland name, in words, or undefined when it is one. */
export function invalidUserlandNameReason(name: unknown): string | undefined {
  return nameReason(name, USERLAND_NAME_MAX, USERLAND_NAME_RE, (n) =>
    n.includes(".")
      ? "must not contain '.': Userland names become Deployment and Service names"
      : "must be lowercase letters, digits and '-', and start and end with a letter or digit",
  );
}

/** Why `name` is not a valid Template name, in words, or undefined when it is one. */
export function invalidTemplateReason(name: unknown): string | undefined {
  return nameReason(
    name,
    TEMPLATE_NAME_MAX,
    TEMPLATE_RE,
    () => "must be lowercase letters, digits and '-', start with a letter and not end with '-'",
  );
}

// --- the roster import (rosterImport.ts) ---------------------------------------------------------

export const JsonRosterBody = Type.Object(
  {
    templateName: Type.Optional(TemplateNameSchema),
    users: Type.Array(
      Type.Union([
        Type.String({
          description: "An identity; validated line by line (invalid ones are reported, not fatal).",
        }),
        Type.Object(
          {
            user: Type.String(),
            templateName: Type.Optional(Type.String()),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
      ]),
      { description: "Identities, or objects with a template of their own." },
    ),
  },
  { additionalProperties: false },
);

export const CsvRosterBody = Type.String({
  description:
    'CSV with a header row: a "user" column, optional "template" and "enabled" columns; other columns are ignored.',
  examples: ["user,template\nKoba1t,code\na.b@uni.ac.jp,jupyter\n"],
});

export const RosterImportQuery = Type.Object(
  {
    template: Type.Optional(TemplateNameSchema),
    prune: Type.Optional(
      Type.Boolean({
        description:
          "Also list (and with dryRun=false delete) the Userlands of the Templates the import covers whose (user, Template) pair is on no line: " +
          "the request's template (?template= or templateName) only, or without one the Templates its lines name. Other Templates' Userlands are never touched.",
      }),
    ),
    dryRun: Type.Optional(
      Type.Boolean({
        description:
          "With prune: only report what would be deleted (default true). Creating is never a dry run (see preview).",
      }),
    ),
    preview: Type.Optional(
      Type.Boolean({
        description:
          "Write nothing: toCreate lists what the import would create and toDelete (with prune) what it would delete (the console's diff).",
      }),
    ),
  },
  { additionalProperties: false },
);

const RosterRef = Type.Object({ user: Type.String(), name: Type.String(), templateName: Type.String() });
const RosterLineRef = Type.Object({
  line: Type.Integer(),
  user: Type.String(),
  name: Type.String(),
  templateName: Type.String(),
});

export const ImportResult = Type.Object({
  created: Type.Array(RosterLineRef),
  existing: Type.Array(RosterLineRef, {
    description:
      "Lines whose (user, Template) pair already has a Userland, under any name (it is not changed).",
  }),
  invalid: Type.Array(Type.Object({ line: Type.Integer(), user: Type.String(), reason: Type.String() })),
  duplicates: Type.Array(
    Type.Object({ user: Type.String(), templateName: Type.String(), lines: Type.Array(Type.Integer()) }),
    { description: "Pairs listed on more than one line (created once)." },
  ),
  failed: Type.Array(
    Type.Object(
      { line: Type.Optional(Type.Integer()), user: Type.String(), reason: Type.String() },
      { description: "Writes that failed (no line: a deletion)." },
    ),
  ),
  pruneTemplates: Type.Optional(
    Type.Array(Type.String(), { description: "With prune: the Templates the import covers." }),
  ),
  toDelete: Type.Array(RosterRef),
  deleted: Type.Array(RosterRef),
  toCreate: Type.Optional(
    Type.Array(RosterLineRef, { description: "With preview: the Userlands the import would create." }),
  ),
  dryRun: Type.Boolean({ description: "True when deletions were only listed." }),
  message: Type.Optional(Type.String()),
});
/** The import's answer; the console reads it as it is (console/rosterPages.ts). */
export type ImportResult = Static<typeof ImportResult>;
