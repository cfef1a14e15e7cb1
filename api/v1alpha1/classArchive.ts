/**
 * ClassArchive: the end of a term (docs/decisions/0011-coursework.md, "End of term"). A teacher or an
 * admin writes one for a class; the operator stops the class's environments, writes every student's
 * volumes and the class's hand-ins into one stored zip in the collection, reads it back, lists what
 * an end would delete (only what the read-back matched) and, once `end` is set with `confirm` equal
 * to that list's hash, deletes exactly those Userlands and their claims.
 */
import { TEMPLATE_NAME_PATTERN } from "./template.ts";
import { USER_MAX, USER_PATTERN } from "./userland.ts";
import type { CustomObject } from "./group.ts";
import { Conditions, StringEnum, Type, type Static } from "./schema.ts";

export const CLASS_ARCHIVES = "classarchives";

/**
 * A ClassArchive's or an Exam's spec.class for every Userland of the Template, written on purpose
 * (issue 41 items 8 and 9: unset is refused).
 */
export const WHOLE_TEMPLATE = "*";

/**
 * Whether an object with this spec.class covers every Userland of its Template: "*", or (one
 * written before spec.class was required) no class.
 */
export const coversWholeTemplate = (spec: { class?: string }): boolean =>
  spec.class === undefined || spec.class === WHOLE_TEMPLATE;

/** userland.dev/stopped-reason of an environment a ClassArchive stopped: its home page says why. */
export const CLASS_ARCHIVE_STOPPED_REASON = "ClassArchive";

const SHA256 = Type.String({ pattern: "^[0-9a-f]{64}$" });
const TIME = { type: "string", format: "date-time" } as const;
const NAME = Type.String({ maxLength: 253 });

export const ClassArchiveSpecSchema = Type.Object({
  templateName: Type.String({
    pattern: TEMPLATE_NAME_PATTERN,
    maxLength: 24,
    description: "The class's Template (same namespace). Immutable.",
    "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "spec.templateName is immutable" }],
  }),
  class: Type.String({
    minLength: 1,
    maxLength: 63,
    description:
      'Only the Template\'s Userlands labelled userland.dev/class=<class> (and its Assignments with that spec.class); "*": every Userland of the Template. Required: ending a whole Template is said on purpose. Immutable.',
    "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "spec.class is immutable" }],
  }),
  archive: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        "false: a plan only (status.phase Planned): status.students lists whose environments would be stopped and whose volumes read, and nothing is stopped or read. true: stop them, write the archive, read it back and list the dry run. Cannot be set back (cancel instead).",
      "x-kubernetes-validations": [
        { rule: "self || !oldSelf", message: "spec.archive cannot be undone: set spec.cancel instead" },
      ],
    }),
  ),
  cancel: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        "true before the end is confirmed: every environment this archive stopped is started again as it was (phase Cancelled) and nothing is deleted; a written zip stays in the collection. Cannot be undone.",
      "x-kubernetes-validations": [{ rule: "self || !oldSelf", message: "spec.cancel cannot be undone" }],
    }),
  ),
  end: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        "true: end the class, deleting the Userlands and claims in status.toDelete. Acted on only when spec.confirm equals status.dryRunHash.",
    }),
  ),
  confirm: Type.Optional(
    Type.String({
      pattern: "^[0-9a-f]{64}$",
      description:
        "status.dryRunHash as the person who ends the class read it: a list that changed since ends nothing.",
    }),
  ),
});

const STUDENT = Type.Object({
  user: Type.String({ minLength: 1, maxLength: USER_MAX, pattern: USER_PATTERN }),
  userland: NAME,
  /** The Userland's uid and generation when it was stopped: anything else is not what was archived. */
  uid: Type.String({ maxLength: 64 }),
  generation: Type.Integer({ minimum: 0, format: "int64" }),
  claims: Type.Array(NAME, { maxItems: 64, description: "The student's claims, each archived." }),
  folder: Type.String({ maxLength: 128, description: "students/<folder>/ in the zip." }),
  enabledBefore: Type.Optional(
    Type.Boolean({
      description:
        "Its spec.enabled when the class was planned: a cancel starts again exactly those that ran.",
    }),
  ),
  verified: Type.Optional(
    Type.Boolean({ description: "Every claim's files were read back from the zip with their hashes." }),
  ),
  reason: Type.Optional(
    Type.String({ maxLength: 1024, description: "Why the student is not verified (so is kept)." }),
  ),
});

export const CLASS_ARCHIVE_PHASES = [
  "Planned",
  "Stopping",
  "Archiving",
  "Verifying",
  "DryRun",
  "Ending",
  "Ended",
  "Cancelled",
  "Failed",
] as const;

const LISTED = Type.Object({
  user: Type.String({ maxLength: USER_MAX }),
  userland: NAME,
  claims: Type.Array(NAME, { maxItems: 64 }),
  reason: Type.Optional(Type.String({ maxLength: 1024 })),
});

export const ClassArchiveStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  phase: Type.Optional(
    StringEnum([...CLASS_ARCHIVE_PHASES], {
      description:
        "Planned: students lists whose environments would be stopped and volumes read; nothing is stopped until spec.archive. Stopping: environments stop; Archiving: the zip is written; Verifying: it is read back; DryRun: toDelete and kept are listed (the class ends once spec.end and spec.confirm = dryRunHash); Ending: deleting; Ended. Cancelled: spec.cancel started the stopped environments again. Failed: nothing can be archived (the message says why).",
    }),
  ),
  message: Type.Optional(Type.String({ maxLength: 4096 })),
  students: Type.Optional(
    Type.Array(STUDENT, {
      maxItems: 5000,
      description:
        "The class: while Planned, as it is now (whose environments would stop, whose volumes be read); from Stopping on, as it was stopped (recorded first, so a restart works on the same list).",
    }),
  ),
  studentCount: Type.Optional(Type.Integer({ minimum: 0 })),
  verifiedCount: Type.Optional(Type.Integer({ minimum: 0 })),
  archive: Type.Optional(
    Type.Object(
      {
        path: Type.String({ maxLength: 512, description: "In the Template's collection claim." }),
        manifestSha256: Type.Optional(
          Type.Unsafe<string>({
            ...SHA256,
            description: "SHA-256 of the archive's manifest (archives/<name>.json) as written.",
          }),
        ),
        files: Type.Optional(Type.Integer({ minimum: 0 })),
        bytes: Type.Optional(Type.Integer({ minimum: 0, format: "int64" })),
        sha256: Type.Optional(
          Type.Unsafe<string>({ ...SHA256, description: "SHA-256 of the zip file as read back." }),
        ),
        archivedAt: Type.Optional(Type.Unsafe<string>({ ...TIME })),
        verifiedAt: Type.Optional(Type.Unsafe<string>({ ...TIME })),
        notArchived: Type.Optional(
          Type.String({
            maxLength: 2048,
            description:
              "Hand-in folders that are not whole in the zip, and why (they decide no student's end; the collection keeps them).",
          }),
        ),
      },
      { description: "The class's zip: archives/<name>.zip in the collection." },
    ),
  ),
  toDelete: Type.Optional(
    Type.Array(LISTED, { maxItems: 5000, description: "What an end deletes: verified students only." }),
  ),
  toDeleteCount: Type.Optional(Type.Integer({ minimum: 0 })),
  kept: Type.Optional(Type.Array(LISTED, { maxItems: 5000, description: "What an end keeps, and why." })),
  dryRunHash: Type.Optional(
    Type.Unsafe<string>({
      ...SHA256,
      description: "SHA-256 of toDelete (users, Userlands, claims): spec.confirm must equal it.",
    }),
  ),
  deleted: Type.Optional(Type.Integer({ minimum: 0, description: "Userlands deleted by the end." })),
  endedAt: Type.Optional(Type.Unsafe<string>({ ...TIME })),
  failedCopies: Type.Optional(
    Type.Object({
      pod: Type.String({ maxLength: 253 }),
      podUid: Type.String({ maxLength: 64 }),
      count: Type.Integer({ minimum: 1 }),
      retryAt: Type.Unsafe<string>({ ...TIME }),
    }),
  ),
  conditions: Type.Optional(Conditions),
});

export type ClassArchiveSpec = Static<typeof ClassArchiveSpecSchema>;
export type ClassArchiveStatus = Static<typeof ClassArchiveStatusSchema>;
export type ClassArchiveStudent = Static<typeof STUDENT>;
export type ClassArchiveListed = Static<typeof LISTED>;
export type ClassArchive = CustomObject<"ClassArchive", ClassArchiveSpec, ClassArchiveStatus>;
