/** Request and response schemas of the coursework routes (assignments.ts), and the views they answer. */
import { collectionFolderOf } from "../../api/assignmentIdentity.ts";
import { deadlineFor } from "../../api/deadlines.ts";
import { studentGrade } from "../../api/studentGrade.ts";
import { StringEnum, Type, type Static } from "../../api/v1alpha1/schema.ts";
import { COURSE_FOLDER_NAME_PATTERN } from "../../api/v1alpha1/index.ts";
import type { Userland } from "../../api/v1alpha1/index.ts";
import type { Assignment, Receipt, Submission } from "../../api/v1alpha1/index.ts";
import { handInRefusal, maxVersionsOf, refusedHandIn, versionsOf } from "../../api/handIns.ts";
import { STATE_LABELS, closesAt, handInState, isClosed, type HandInState } from "../../api/handInState.ts";
import {
  Nullable,
  ReceiptView,
  RefusedHandInView,
  StateSchema,
  type StudentAssignmentView,
} from "../../api/studentAssignmentView.ts";

/** A DNS label: it names the Assignment, the student's `assignments/<name>/` and collection folders. */
export const ASSIGNMENT_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$";

export const AssignmentNameSchema = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: ASSIGNMENT_NAME_PATTERN,
  description:
    "The Assignment's name: lowercase letters, digits and '-', at most 63 characters; students find its files in assignments/<name>/.",
  examples: ["week1-lab"],
});

const Time = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 64,
    description: `${description} (RFC 3339, e.g. 2026-12-01T09:00:00Z)`,
  });

export const CreateAssignmentBody = Type.Object(
  {
    name: AssignmentNameSchema,
    title: Type.String({ minLength: 1, maxLength: 200, description: "Shown to students." }),
    class: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description: "Only the Template's Userlands labelled userland.dev/class=<class>; unset: all of them.",
      }),
    ),
    source: Type.Object(
      {
        folder: Type.String({
          minLength: 1,
          maxLength: 40,
          pattern: COURSE_FOLDER_NAME_PATTERN,
          description: "One of the Template's course folders (spec.coursework.folders[].name).",
        }),
        path: Type.String({
          minLength: 1,
          maxLength: 1024,
          description: "The folder inside it whose files are handed out, e.g. week1/lab: relative, no '..'.",
        }),
      },
      { additionalProperties: false },
    ),
    deadline: Type.Optional(Time("When hand-ins are due; later ones are late")),
    lateUntil: Type.Optional(Time("Late hand-ins are accepted until then; needs a deadline before it")),
    limits: Type.Optional(
      Type.Object(
        {
          maxBytes: Type.Optional(Type.Integer({ minimum: 1, description: "Per hand-in." })),
          maxFiles: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: "Per hand-in." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type CreateAssignmentBody = Static<typeof CreateAssignmentBody>;

export const ReleaseBody = Type.Object(
  {
    from: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "The value the teacher saw (the console sends it): 409 when it has changed since (someone else pressed the button), so two clicks never count twice.",
      }),
    ),
  },
  { additionalProperties: false },
);

export const AssignmentView = Type.Object({
  name: Type.String(),
  namespace: Type.String(),
  templateName: Type.String(),
  title: Type.String(),
  class: Nullable(Type.String()),
  source: Type.Object({ folder: Type.String(), path: Type.String() }),
  release: Type.Integer({ description: "spec.release: raised by Publish again." }),
  feedbackRelease: Type.Integer({ description: "spec.feedbackRelease: raised by Return feedback." }),
  deadline: Nullable(Type.String()),
  lateUntil: Nullable(Type.String()),
  closesAt: Nullable(Type.String({ description: "lateUntil, else the deadline: no hand-ins after it." })),
  limits: Type.Object({ maxBytes: Nullable(Type.Integer()), maxFiles: Nullable(Type.Integer()) }),
  createdAt: Type.String(),
  status: Type.Object(
    {
      publishedRelease: Nullable(Type.Integer()),
      publishedAt: Nullable(Type.String()),
      collectionFolder: Nullable(
        Type.String({
          description:
            "Its folder in the collection (handins/, feedback/, grades/ in teachers' environments): bound to this assignment, not to its name.",
        }),
      ),
      students: Nullable(Type.Integer()),
      distributed: Nullable(Type.Integer()),
      handedIn: Nullable(Type.Integer()),
      late: Nullable(Type.Integer()),
      missing: Nullable(Type.Integer()),
    },
    { description: "What the platform reports (null until its controller has)." },
  ),
});
export type AssignmentView = Static<typeof AssignmentView>;

export const AssignmentList = Type.Object({ items: Type.Array(AssignmentView) });

export const HandInRow = Type.Object({
  user: Type.String(),
  userland: Nullable(
    Type.String({ description: "The student's Userland of the Template, if they have one." }),
  ),
  submission: Nullable(Type.String({ description: "Their Submission's name, once the platform made it." })),
  state: StateSchema,
  stateLabel: Type.String(),
  handInRequestedAt: Nullable(Type.String()),
  handInRequestedBy: Nullable(StringEnum(["student", "deadline"])),
  distributedRelease: Nullable(Type.Integer()),
  feedbackRelease: Nullable(Type.Integer()),
  keptOwnVersion: Type.Array(Type.String(), {
    description: "Files the student had changed, so a re-publish left them as they were.",
  }),
  receipt: Nullable(ReceiptView),
  versions: Type.Array(ReceiptView, { description: "Every hand-in, oldest first." }),
  refusedHandIn: RefusedHandInView,
  countedVersion: Nullable(
    Type.Integer({ description: "The version a teacher picked to count; null: the last one counts." }),
  ),
});
export type HandInRow = Static<typeof HandInRow>;

export const HandInTable = Type.Object({
  assignment: AssignmentView,
  counts: Type.Record(Type.String(), Type.Integer(), { description: "Students per state." }),
  students: Type.Array(HandInRow),
});
export type HandInTable = Static<typeof HandInTable>;

const iso = (value: string | undefined): string | null =>
  value === undefined ? null : new Date(value).toISOString();

export function toAssignmentView(a: Assignment): AssignmentView {
  const status = a.status ?? {};
  const closes = closesAt(a, undefined);
  return {
    name: a.metadata.name ?? "",
    namespace: a.metadata.namespace ?? "",
    templateName: a.spec.templateName,
    title: a.spec.title,
    class: a.spec.class ?? null,
    source: { folder: a.spec.source.folder, path: a.spec.source.path },
    release: a.spec.release ?? 1,
    feedbackRelease: a.spec.feedbackRelease ?? 0,
    deadline: iso(a.spec.deadline),
    lateUntil: iso(a.spec.lateUntil),
    closesAt: closes ? closes.toISOString() : null,
    limits: { maxBytes: a.spec.limits?.maxBytes ?? null, maxFiles: a.spec.limits?.maxFiles ?? null },
    createdAt: String(a.metadata.creationTimestamp ?? ""),
    status: {
      publishedRelease: status.publishedRelease ?? null,
      publishedAt: status.publishedAt ?? null,
      collectionFolder: collectionFolderOf(a) ?? null,
      students: status.students ?? null,
      distributed: status.distributed ?? null,
      handedIn: status.handedIn ?? null,
      late: status.late ?? null,
      missing: status.missing ?? null,
    },
  };
}

export const receiptView = (r: Receipt): ReceiptView => ({
  version: r.version,
  requestedAt: r.requestedAt,
  copyStartedAt: r.copyStartedAt ?? null,
  time: r.time,
  files: r.files,
  bytes: r.bytes,
  sha256: r.sha256,
  late: r.late,
  by: r.by,
  skipped: r.skipped ?? 0,
  deadline: r.deadline ?? null,
  writtenAfter: r.writtenAfter ?? [],
  writtenAfterCount: r.writtenAfterCount ?? 0,
});

const receiptOf = (s: Submission | undefined): ReceiptView | null =>
  s?.status?.receipt ? receiptView(s.status.receipt) : null;

export function toHandInRow(
  a: Assignment,
  user: string,
  userland: Userland | undefined,
  s: Submission | undefined,
  now: Date,
): HandInRow {
  const state: HandInState = handInState(a, s, now);
  return {
    user,
    userland: userland?.metadata.name ?? null,
    submission: s?.metadata.name ?? null,
    state,
    stateLabel: STATE_LABELS[state],
    handInRequestedAt: s?.spec.handInRequestedAt ?? null,
    handInRequestedBy: s?.spec.handInRequestedBy ?? null,
    distributedRelease: s?.status?.distributedRelease ?? null,
    feedbackRelease: s?.status?.feedbackRelease ?? null,
    keptOwnVersion: s?.status?.keptOwnVersion ?? [],
    receipt: receiptOf(s),
    versions: s ? versionsOf(s).map(receiptView) : [],
    refusedHandIn: s ? refusedView(s) : null,
    countedVersion: s?.spec.review?.countedVersion ?? null,
  };
}

function refusedView(s: Submission): StudentAssignmentView["refusedHandIn"] {
  const refused = refusedHandIn(s);
  return refused
    ? { requestedAt: refused.requestedAt, reason: refused.reason, message: refused.message }
    : null;
}

/** Why `s`'s student may not hand in now: closed, or handInRefusal's reasons. */
function notOpenBecause(a: Assignment, s: Submission, now: Date): string | null {
  if (isClosed(a, s.spec.user, now))
    return `the assignment closed at ${closesAt(a, s.spec.user)?.toISOString() ?? ""}`;
  return handInRefusal(a, s) ?? null;
}

export function toStudentView(a: Assignment, s: Submission, now: Date): StudentAssignmentView {
  const state = handInState(a, s, now);
  const own = deadlineFor(a, s.spec.user);
  return {
    templateName: a.spec.templateName,
    name: a.metadata.name ?? "",
    title: a.spec.title,
    deadline: iso(own.deadline),
    lateUntil: iso(own.lateUntil),
    closesAt: iso(own.closesAt),
    extended: own.extended,
    open: notOpenBecause(a, s, now) === null,
    notOpenBecause: notOpenBecause(a, s, now),
    maxVersions: maxVersionsOf(a),
    versions: versionsOf(s).map(receiptView),
    distributed: s.status?.distributedRelease !== undefined || s.status?.distributedAt !== undefined,
    state,
    stateLabel: STATE_LABELS[state],
    handInRequestedAt: s.spec.handInRequestedAt ?? null,
    handInRequestedBy: s.spec.handInRequestedBy ?? null,
    receipt: receiptOf(s),
    refusedHandIn: refusedView(s),
    feedbackFiles: s.status?.feedbackFiles ?? null,
    grade: studentGrade(a, s, now),
  };
}
