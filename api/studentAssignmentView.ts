/**
 * What the user-manager answers about one assignment to its student (the proxy's home page reads it
 * through lib/userManagerClient.ts): the contract both sides import, so it lives below both.
 */
import { StringEnum, Type, type Static } from "./v1alpha1/schema.ts";
import { HAND_IN_STATES } from "./handInState.ts";

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const ReceiptView = Type.Object(
  {
    version: Type.Integer({ description: "1 for the first hand-in, then 2, 3…" }),
    requestedAt: Type.String({ description: "The hand-in's moment: late is judged by it." }),
    copyStartedAt: Nullable(Type.String({ description: "When the copy started reading the files." })),
    time: Type.String({ description: "When the copy ended." }),
    files: Type.Integer(),
    bytes: Type.Integer(),
    sha256: Type.String(),
    late: Type.Boolean(),
    by: StringEnum(["student", "deadline"]),
    skipped: Type.Integer({ description: "Entries left out: links, FIFOs, sockets, devices." }),
    deadline: Nullable(Type.String({ description: "The deadline that applied to this student." })),
    writtenAfter: Type.Array(Type.String(), {
      description: "Files changed after the moment, before the copy read them (the first 20).",
    }),
    writtenAfterCount: Type.Integer(),
  },
  { description: "What the platform collected, as it wrote it in the Submission's status." },
);
export type ReceiptView = Static<typeof ReceiptView>;

export const StateSchema = StringEnum([...HAND_IN_STATES], {
  description:
    "not-distributed, open (handed out, not handed in), handing-in (asked, being collected), on-time, late, collected (at the closing time: lateUntil, else the deadline), missing (closed without a hand-in, or nothing found at closing).",
});

export const RefusedHandInView = Nullable(
  Type.Object(
    {
      requestedAt: Type.String(),
      reason: StringEnum(["OverLimit", "NothingToCopy"]),
      message: Type.String(),
    },
    {
      description:
        "The last hand-in, refused for what the folder held (over the limits, nothing to copy) and not answered by a newer version: nothing was collected; the student may hand in again.",
    },
  ),
);

const StudentGradeView = Type.Object(
  {
    released: Type.Boolean({ description: "The teacher released grades: the score is shown." }),
    score: Nullable(Type.Number({ description: "After the late penalty; null until released." })),
    maxScore: Nullable(Type.Number()),
    latePenaltyPercent: Type.Number(),
    rubric: Type.Array(Type.Object({ points: Type.Number(), description: Type.String() })),
    comment: Nullable(Type.String()),
    tests: Type.Array(
      Type.Object({
        name: Type.String(),
        score: Nullable(Type.Number()),
        maxScore: Nullable(Type.Number()),
        passed: Nullable(Type.Boolean()),
      }),
      { description: "Only the tests this student may see now (hidden ones never)." },
    ),
  },
  { description: "What the student may see of their grade (api/studentGrade.ts); null: nothing yet." },
);

export const StudentAssignmentView = Type.Object(
  {
    templateName: Type.String(),
    name: Type.String(),
    title: Type.String(),
    deadline: Nullable(Type.String()),
    lateUntil: Nullable(Type.String()),
    closesAt: Nullable(Type.String()),
    extended: Type.Boolean({
      description: "deadline, lateUntil and closesAt are the student's own (an extension).",
    }),
    open: Type.Boolean({
      description:
        "The student may hand in now: before their closing time, no hand-in being collected, versions left.",
    }),
    notOpenBecause: Nullable(Type.String({ description: "Why the student may not hand in now." })),
    maxVersions: Type.Integer({ description: "How many hand-ins the assignment keeps per student." }),
    versions: Type.Array(ReceiptView, { description: "Every hand-in, oldest first." }),
    distributed: Type.Boolean({ description: "Its files are in the student's assignments/<name>/." }),
    state: StateSchema,
    stateLabel: Type.String(),
    handInRequestedAt: Nullable(Type.String()),
    handInRequestedBy: Nullable(StringEnum(["student", "deadline"])),
    receipt: Nullable(ReceiptView),
    refusedHandIn: RefusedHandInView,
    feedbackFiles: Nullable(Type.Integer({ description: "Files of the feedback last returned." })),
    grade: Nullable(StudentGradeView),
  },
  { description: "One assignment as its student sees it." },
);
export type StudentAssignmentView = Static<typeof StudentAssignmentView>;

export const StudentAssignmentList = Type.Object({ items: Type.Array(StudentAssignmentView) });
