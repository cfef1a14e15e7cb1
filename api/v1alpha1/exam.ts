/**
 * Exam: a class's time window in which its environments of one Template run, reach nothing but
 * cluster DNS, admit only their student and the proctors, and are collected at the end
 * (docs/decisions/0013-exams.md). A teacher's object; the operator (operator/exams/) writes status.
 */
import { shortHash } from "../naming.ts";
import { TEMPLATE_NAME_PATTERN } from "./template.ts";
import { USER_MAX, USER_PATTERN } from "./userland.ts";
import type { CustomObject } from "./group.ts";
import { Conditions, StringEnum, Type, type Static } from "./schema.ts";

export const EXAMS = "exams";

/**
 * The longest exam: its environments are held (network closed, visits refused, sign-ins from before
 * refused) for the whole window, so a mistyped end must not hold a class for days.
 */
export const EXAM_MAX_HOURS = 24;

const TIME = { type: "string", format: "date-time" } as const;
const PERSON = Type.String({ minLength: 1, maxLength: USER_MAX, pattern: USER_PATTERN });
const immutable = (field: string) => ({
  rule: "self == oldSelf",
  message: `${field} is immutable: the students an exam changed must be the ones it restores`,
});

export const ExamSpecSchema = Type.Object(
  {
    templateName: Type.String({
      pattern: TEMPLATE_NAME_PATTERN,
      maxLength: 24,
      description: "The Template (same namespace) whose environments the exam runs in. Immutable.",
      "x-kubernetes-validations": [immutable("spec.templateName")],
    }),
    class: Type.String({
      minLength: 1,
      maxLength: 63,
      description:
        'Only the Template\'s Userlands labelled userland.dev/class=<class>; "*": every Userland of the Template. Required: an exam holds only the environments it names on purpose (issue 41 item 8). Immutable.',
      "x-kubernetes-validations": [immutable("spec.class")],
    }),
    title: Type.Optional(
      Type.String({ maxLength: 200, description: "Shown to students and in the console." }),
    ),
    start: Type.Unsafe<string>({
      ...TIME,
      description:
        "When the window opens: environments run, the network closes, sessions from before are refused.",
    }),
    end: Type.Unsafe<string>({
      ...TIME,
      description: "When it closes: work is collected (spec.assignment), then everything is restored.",
    }),
    proctors: Type.Optional(
      Type.Object(
        {
          users: Type.Optional(Type.Array(PERSON, { maxItems: 50 })),
          groups: Type.Optional(Type.Array(PERSON, { maxItems: 20 })),
        },
        {
          description:
            "Who may open the students' environments during the exam, besides each student: a listed user, or a member of a listed group (the session's groups). They also need the visit right (create userlands/visit, docs/decisions/0012-visits.md); others who hold it are refused during the exam.",
        },
      ),
    ),
    assignment: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description:
          "An Assignment of the same Template: at the end, every student's hand-in is collected (as at its closing time) before the network opens again.",
      }),
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "timestamp(self.end) > timestamp(self.start)",
        fieldPath: ".end",
        message: "spec.end must be after spec.start",
      },
      {
        rule: `timestamp(self.end) - timestamp(self.start) <= duration('${EXAM_MAX_HOURS}h')`,
        fieldPath: ".end",
        message: `an exam lasts at most ${EXAM_MAX_HOURS} hours (spec.end - spec.start)`,
      },
    ],
  },
);

export const EXAM_PHASES = ["Scheduled", "Running", "Collecting", "Over"] as const;
export type ExamPhase = (typeof EXAM_PHASES)[number];

/** A student's state in the exam (status.students[].state). */
export const EXAM_STUDENT_STATES = [
  "Waiting",
  "Starting",
  "Ready",
  "Stopped",
  "HandInRequested",
  "Collected",
  "NotCollected",
  "Done",
] as const;

const NAMES = Type.Array(Type.String({ maxLength: 253 }), { maxItems: 5000 });
/** "<namespace>/<name>": a held Userland may be in any namespace the release serves. */
const REFS = Type.Array(Type.String({ maxLength: 317 }), { maxItems: 5000 });

export const ExamStatusSchema = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ format: "int64" })),
  phase: Type.Optional(
    StringEnum([...EXAM_PHASES], {
      description:
        "Scheduled: before the start. Running: inside the window. Collecting: after the end, hand-ins being collected, the network still closed. Over: restored.",
    }),
  ),
  students: Type.Optional(
    Type.Array(
      Type.Object({
        user: PERSON,
        userland: Type.String({ maxLength: 253 }),
        state: StringEnum([...EXAM_STUDENT_STATES]),
        message: Type.Optional(Type.String({ maxLength: 1024 })),
      }),
      { maxItems: 2000 },
    ),
  ),
  studentCount: Type.Optional(Type.Integer({ minimum: 0 })),
  ready: Type.Optional(Type.Integer({ minimum: 0 })),
  collected: Type.Optional(Type.Integer({ minimum: 0 })),
  changed: Type.Optional(
    Type.Object(
      {
        enabled: Type.Optional(NAMES),
        stopped: Type.Optional(REFS),
      },
      {
        description:
          "What the exam changed, written before the change, so the end restores exactly that: enabled, exam environments (in the exam's namespace, by name) that were stopped (stopped again); stopped, the students' other Userlands, in any namespace the release serves, as <namespace>/<name>, that were running (started again).",
      },
    ),
  ),
  policy: Type.Optional(Type.String({ maxLength: 253, description: "The exam's NetworkPolicy." })),
  conditions: Type.Optional(Conditions),
});

export type ExamSpec = Static<typeof ExamSpecSchema>;
export type ExamStatus = Static<typeof ExamStatusSchema>;
export type ExamStudent = NonNullable<ExamStatus["students"]>[number];
export type Exam = CustomObject<"Exam", ExamSpec, ExamStatus>;

/** Condition types the operator writes on Exams (operator/exams/). */
export const ExamConditions = {
  /** True while the exam's NetworkPolicy is in place; False says why it cannot be. */
  NetworkClosed: "NetworkClosed",
} as const;

/** What the operator puts on a student's exam environment (and the proxy reads). */
export const ExamMarks = {
  /** Label on an exam environment (and copied to its pods): the exam's name. */
  examLabel: "userland.dev/exam",
  /**
   * Label on a student's other Userland, stopped for the exam, in any namespace the release serves:
   * examHoldValue(the exam's namespace, its name), so that same-named exams of two namespaces
   * never take each other's holds. The hold annotation names the exam in full.
   */
  holdLabel: "userland.dev/exam-hold",
  /** Annotation on an exam environment: ExamNotice as JSON. */
  examAnnotation: "userland.dev/exam",
  /** Annotation on a held Userland: ExamNotice as JSON (the proxy's "paused until" page). */
  holdAnnotation: "userland.dev/exam-hold",
  /**
   * Annotation on a student's exam environment in the day before the exam starts: ExamNotice as
   * JSON (the home page's notice). It names one exam, the soonest.
   */
  upcomingAnnotation: "userland.dev/exam-upcoming",
  /** Finalizer on an Exam: its changes are undone before it goes. */
  finalizer: "userland.dev/exam-restore",
  /** stopped-reason of a held Userland. */
  stoppedReason: "Exam",
} as const;

/**
 * The value of ExamMarks.holdLabel for the exam `name` of `namespace`: "<namespace>.<name>" when it
 * fits a label value (63 characters; a namespace has no dot, so the first dot splits it), else a
 * hash of both (no dot, so never equal to a readable one).
 */
export function examHoldValue(namespace: string, name: string): string {
  const readable = `${namespace}.${name}`;
  return readable.length <= 63 ? readable : shortHash(`${namespace}/${name}`, 24);
}

/** How the exam of a notice is named to people: its name, with its namespace when it has one. */
export const examRefText = (notice: Pick<ExamNotice, "exam" | "namespace">) =>
  notice.namespace === undefined ? notice.exam : `${notice.namespace}/${notice.exam}`;

/** The exam as the proxy needs it, on the Userland (JSON in ExamMarks.examAnnotation). */
export interface ExamNotice {
  exam: string;
  /** The exam's namespace: a held Userland may be in another one. */
  namespace?: string;
  title?: string;
  /** The class it is for (spec.class). */
  class?: string;
  start: string;
  end: string;
  proctors: { users: string[]; groups: string[] };
}

/** The notice in an annotation's value, or undefined for anything malformed. */
export function parseExamNotice(raw: string | undefined): ExamNotice | undefined {
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<ExamNotice>;
    const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === "string");
    if (
      typeof v.exam !== "string" ||
      typeof v.start !== "string" ||
      typeof v.end !== "string" ||
      Number.isNaN(Date.parse(v.start)) ||
      Number.isNaN(Date.parse(v.end)) ||
      !strings(v.proctors?.users) ||
      !strings(v.proctors.groups)
    )
      return undefined;
    return {
      exam: v.exam,
      ...(typeof v.namespace === "string" ? { namespace: v.namespace } : {}),
      ...(typeof v.title === "string" ? { title: v.title } : {}),
      ...(typeof v.class === "string" ? { class: v.class } : {}),
      start: v.start,
      end: v.end,
      proctors: { users: v.proctors.users, groups: v.proctors.groups },
    };
  } catch {
    return undefined;
  }
}
