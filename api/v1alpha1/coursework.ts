/**
 * Assignment and Submission: a class's work handed out and handed in (docs/decisions/0011-
 * coursework.md), converged by the operator (operator/coursework/). An Assignment is a teacher's; a Submission is one student's copy of one assignment,
 * whose status (what was distributed, the hand-in receipt) only the platform writes.
 */
import { TEMPLATE_NAME_PATTERN } from "./template.ts";
import { USER_MAX, USER_PATTERN } from "./userland.ts";
import type { CustomObject } from "./group.ts";
import { Conditions, StringEnum, Type, type Static } from "./schema.ts";

export const ASSIGNMENTS = "assignments";
export const SUBMISSIONS = "submissions";

const immutable = (field: string) => ({
  rule: "self == oldSelf",
  message: `${field} is immutable: create a new object instead`,
});

/** A path inside a folder: relative, no `..`, no backslash, no NUL. */
const RELATIVE_PATH = {
  type: "string",
  minLength: 1,
  maxLength: 1024,
  pattern: "^[^/]",
  "x-kubernetes-validations": [
    { rule: "!self.matches('(^|/)[.][.](/|$)')", message: "a path must not contain '..' components" },
    { rule: "!self.contains('\\\\')", message: "a path must not contain a backslash" },
    { rule: "!self.contains('\\u0000')", message: "a path must not contain NUL" },
  ],
};

const SHA256 = Type.String({ pattern: "^[0-9a-f]{64}$", description: "A SHA-256, lowercase hex." });
const TIME = { type: "string", format: "date-time" } as const;

/** A copy job failing again and again: counted so its next try waits longer (operator/coursework/copyRuns.ts). */
const FAILED_COPIES = Type.Object(
  {
    pod: Type.String({
      maxLength: 253,
      description: "The copy pod of the job (one name per job and release).",
    }),
    podUid: Type.String({ maxLength: 64, description: "Its last failed run, counted once." }),
    count: Type.Integer({ minimum: 1, description: "Failed runs in a row." }),
    retryAt: Type.Unsafe<string>({ ...TIME, description: "When it runs again." }),
  },
  {
    description:
      "The job that keeps failing: it runs again OPERATOR_COPY_RETRY (1 min) after a failure, doubling with each failure in a row, at most every 10 min. Cleared once a copy succeeds.",
  },
);

export const AssignmentSpecSchema = Type.Object(
  {
    templateName: Type.String({
      pattern: TEMPLATE_NAME_PATTERN,
      maxLength: 24,
      description: "The class: the Template (same namespace) whose students get this assignment. Immutable.",
      "x-kubernetes-validations": [immutable("spec.templateName")],
    }),
    title: Type.String({ minLength: 1, maxLength: 200, description: "Shown to students." }),
    class: Type.Optional(
      Type.String({
        maxLength: 63,
        description: "Only the Template's Userlands labelled userland.dev/class=<class>; unset: all of them.",
      }),
    ),
    source: Type.Object(
      {
        folder: Type.String({
          pattern: "^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$",
          maxLength: 40,
          description: "A course folder of the Template (spec.coursework.folders[].name).",
        }),
        path: Type.Unsafe<string>({
          ...RELATIVE_PATH,
          description: "The folder inside it whose files are handed out, e.g. week1/lab.",
        }),
      },
      { description: "What is handed out: a folder inside a course folder." },
    ),
    release: Type.Optional(
      Type.Integer({
        minimum: 1,
        default: 1,
        description:
          "Which version of the source is handed out. Raise it (the console's Publish again) to take a new snapshot of the source: students' files they have not changed are updated, their own edits kept.",
      }),
    ),
    deadline: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description:
          "When hand-ins are due; later ones are late. Work is collected from everyone who has not handed in at lateUntil, or at the deadline without it. Unset: no deadline.",
      }),
    ),
    lateUntil: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description:
          "Hand-ins are accepted, marked late, until then; work is collected from everyone else at that time. Needs a deadline before it.",
      }),
    ),
    feedbackRelease: Type.Optional(
      Type.Integer({
        minimum: 0,
        default: 0,
        description:
          "Raise it (the console's Return feedback) to copy what teachers put in the collection's feedback/<assignment>/<user>/ into that student's assignments/<name>/feedback/. 0: nothing returned yet.",
      }),
    ),
    limits: Type.Optional(
      Type.Object({
        maxBytes: Type.Optional(
          Type.Integer({ minimum: 1, format: "int64", default: 104857600, description: "Per hand-in." }),
        ),
        maxFiles: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 100000, default: 1000, description: "Per hand-in." }),
        ),
      }),
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "!has(self.lateUntil) || (has(self.deadline) && timestamp(self.lateUntil) > timestamp(self.deadline))",
        fieldPath: ".lateUntil",
        message: "spec.lateUntil needs a spec.deadline before it",
      },
    ],
  },
);

export const AssignmentStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  publishedRevision: Type.Optional(SHA256),
  publishedAt: Type.Optional(Type.Unsafe<string>({ ...TIME })),
  publishedRelease: Type.Optional(
    Type.Integer({ minimum: 1, description: "The spec.release whose snapshot publishedRevision is." }),
  ),
  students: Type.Optional(Type.Integer({ minimum: 0 })),
  distributed: Type.Optional(Type.Integer({ minimum: 0 })),
  handedIn: Type.Optional(Type.Integer({ minimum: 0 })),
  late: Type.Optional(Type.Integer({ minimum: 0 })),
  missing: Type.Optional(Type.Integer({ minimum: 0 })),
  failedCopies: Type.Optional(FAILED_COPIES),
  conditions: Type.Optional(Conditions),
});

export const SubmissionSpecSchema = Type.Object(
  {
    assignment: Type.String({
      minLength: 1,
      maxLength: 253,
      description: "The Assignment (same namespace). Immutable.",
      "x-kubernetes-validations": [immutable("spec.assignment")],
    }),
    user: Type.String({
      minLength: 1,
      maxLength: USER_MAX,
      pattern: USER_PATTERN,
      description: "The student (a Userland's spec.user). Immutable.",
      "x-kubernetes-validations": [immutable("spec.user")],
    }),
    handInRequestedBy: Type.Optional(
      StringEnum(["student", "deadline"], {
        description:
          "Who asked for the hand-in: the student (their home page's button, or kubectl) or the platform at the assignment's closing time. Set with handInRequestedAt; never changes.",
      }),
    ),
    handInRequestedAt: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description:
          "Set when the student hands in (or at the deadline): the platform then collects. Once set, it never changes.",
      }),
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "!has(oldSelf.handInRequestedAt) || (has(self.handInRequestedAt) && self.handInRequestedAt == oldSelf.handInRequestedAt)",
        message: "spec.handInRequestedAt cannot change once set: a hand-in is final",
      },
      {
        rule: "!has(oldSelf.handInRequestedBy) || (has(self.handInRequestedBy) && self.handInRequestedBy == oldSelf.handInRequestedBy)",
        message: "spec.handInRequestedBy cannot change once set: a hand-in is final",
      },
    ],
  },
);

export const SubmissionStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  distributedRevision: Type.Optional(SHA256),
  distributedAt: Type.Optional(Type.Unsafe<string>({ ...TIME })),
  distributedRelease: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "The Assignment's release the student's copy was last updated to.",
    }),
  ),
  feedbackRelease: Type.Optional(
    Type.Integer({ minimum: 0, description: "The Assignment's feedbackRelease last copied to the student." }),
  ),
  feedbackFiles: Type.Optional(
    Type.Integer({ minimum: 0, description: "Files in the feedback last returned." }),
  ),
  keptOwnVersion: Type.Optional(
    Type.Array(Type.String({ maxLength: 1024 }), {
      maxItems: 1000,
      description: "Files the student had changed, so a re-publish left them as they were.",
    }),
  ),
  receipt: Type.Optional(
    Type.Object(
      {
        time: Type.Unsafe<string>({ ...TIME }),
        files: Type.Integer({ minimum: 0 }),
        bytes: Type.Integer({ minimum: 0, format: "int64" }),
        sha256: SHA256,
        late: Type.Boolean(),
        by: StringEnum(["student", "deadline"], {
          description: "Who asked for it (spec.handInRequestedBy).",
        }),
        skipped: Type.Optional(
          Type.Integer({
            minimum: 0,
            description: "Entries left out: links, FIFOs, sockets, devices, files changed while read.",
          }),
        ),
      },
      { description: "What the platform collected: the student's receipt." },
    ),
  ),
  failedCopies: Type.Optional(FAILED_COPIES),
  conditions: Type.Optional(Conditions),
});

export type AssignmentSpec = Static<typeof AssignmentSpecSchema>;
export type AssignmentStatus = Static<typeof AssignmentStatusSchema>;
export type Assignment = CustomObject<"Assignment", AssignmentSpec, AssignmentStatus>;
export type SubmissionSpec = Static<typeof SubmissionSpecSchema>;
export type SubmissionStatus = Static<typeof SubmissionStatusSchema>;
export type Submission = CustomObject<"Submission", SubmissionSpec, SubmissionStatus>;
export type FailedCopies = Static<typeof FAILED_COPIES>;

/** Condition types the operator writes on Assignments (operator/coursework/syncAssignment.ts). */
export const AssignmentConditions = {
  /** True once spec.release's snapshot is in the collection; False says what is missing or failed. */
  Published: "Published",
} as const;

/** Condition types the operator writes on Submissions (operator/coursework/syncSubmission.ts). */
export const SubmissionConditions = {
  /** True when the student's copy is the published release; False says why it is not (yet). */
  Distributed: "Distributed",
  /** Set once a hand-in is requested: True with the receipt, False with the reason (for the student). */
  HandedIn: "HandedIn",
  /** Set once feedback is returned: True, or False with the reason. */
  FeedbackReturned: "FeedbackReturned",
} as const;
