/**
 * Assignment and Submission: a class's work handed out and handed in (docs/decisions/0011-
 * coursework.md), converged by the operator (operator/coursework/). An Assignment is a teacher's; a Submission is one student's copy of one assignment,
 * whose status (what was distributed, the hand-in receipt) only the platform writes.
 */
import { COURSE_FOLDER_NAME_PATTERN, TEMPLATE_NAME_PATTERN } from "./template.ts";
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

/** The autograder run once on a known input before it grades students. */
const AUTOGRADER_CHECK = Type.Object({
  key: Type.String({ maxLength: 64 }),
  ok: Type.Boolean({ description: "The run gave a result (results.json read)." }),
  score: Type.Optional(Type.Number()),
  maxScore: Type.Optional(Type.Number()),
  message: Type.String({ maxLength: 4096 }),
});

/** A rubric item's id: a DNS label of at most 40 characters, as the reviews name it. */
export const RUBRIC_ITEM_ID_PATTERN = "^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$";

/** The visibility values of Gradescope's results.json, for a test or the whole result. */
export const TEST_VISIBILITIES = ["visible", "hidden", "after_due_date", "after_published"] as const;

/** One rubric item (docs/decisions/0015-grading.md). */
const RUBRIC_ITEM = Type.Object({
  id: Type.String({
    pattern: RUBRIC_ITEM_ID_PATTERN,
    maxLength: 40,
    description: "Names the item in reviews; keep it when the points or the words change.",
  }),
  points: Type.Number({
    minimum: -1000,
    maximum: 1000,
    description: "Added to the score when applied (negative: a deduction).",
  }),
  description: Type.String({ minLength: 1, maxLength: 500, description: "What the student reads." }),
});

/** One student's own deadline (docs/decisions/0015-grading.md). */
const EXTENSION = Type.Object(
  {
    user: Type.String({
      minLength: 1,
      maxLength: USER_MAX,
      pattern: USER_PATTERN,
      description: "The student.",
    }),
    deadline: Type.Unsafe<string>({ ...TIME, description: "Their deadline instead of spec.deadline." }),
    lateUntil: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description: "Their late hand-ins are accepted until then (instead of spec.lateUntil; unset: none).",
      }),
    ),
    note: Type.Optional(
      Type.String({ maxLength: 200, description: "Why, for the teachers (not shown to students)." }),
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "!has(self.lateUntil) || timestamp(self.lateUntil) > timestamp(self.deadline)",
        fieldPath: ".lateUntil",
        message: "an extension's lateUntil must be after its deadline",
      },
    ],
  },
);

/** Gradescope's autograder contract, run in a sealed pod (docs/decisions/0015-grading.md). */
const AUTOGRADER = Type.Object(
  {
    folder: Type.String({
      pattern: COURSE_FOLDER_NAME_PATTERN,
      maxLength: 40,
      description:
        "A course folder of the Template marked teachersOnly (students never mount it: hidden tests stay hidden).",
    }),
    path: Type.Unsafe<string>({
      ...RELATIVE_PATH,
      description:
        "The folder inside it holding the autograder as Gradescope lays it out: run_autograder at its top, the rest beside it (it becomes /autograder/source).",
    }),
    release: Type.Optional(
      Type.Integer({
        minimum: 1,
        default: 1,
        description:
          "Raise it (the console's Update autograder) to take a new snapshot of the folder: every counted hand-in whose result came from another revision is graded again.",
      }),
    ),
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description:
          "The image run_autograder runs in: an image of a Template in this namespace, or one the admin lists in OPERATOR_AUTOGRADER_IMAGES. Unset: the image of the Template's first container. It needs /bin/sh.",
      }),
    ),
    timeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 3600,
        default: 300,
        description: 'How long run_autograder may run; then the hand-in\'s result is "timed out".',
      }),
    ),
    solution: Type.Optional(
      Type.Unsafe<string>({
        ...RELATIVE_PATH,
        description:
          "A folder of the same course folder holding the reference solution, laid out as a student's assignments/<name>/. Before any hand-in is graded the autograder must give it full marks, and give the published starter files less: a broken autograder never grades students (AutograderReady says why).",
      }),
    ),
    visibleTestsAfterHandIn: Type.Optional(
      Type.Boolean({
        description:
          "Show a student their tests marked visible (name, result, points) as soon as their hand-in is graded, before grades are released, so they can fix their work before the deadline. Hidden tests and the total wait for spec.gradesReleased.",
      }),
    ),
  },
  {
    description:
      "An autograder written for Gradescope, run unchanged for every counted hand-in in a pod with no network, no credentials and fixed limits (docs/decisions/0015-grading.md).",
  },
);

/** The most versions an Assignment may allow (spec.maxVersions): each is a folder in the collection. */
export const MAX_HAND_IN_VERSIONS = 20;

const RECEIPT = Type.Object(
  {
    version: Type.Integer({ minimum: 1, description: "1 for the first hand-in, then 2, 3…" }),
    requestedAt: Type.Unsafe<string>({
      ...TIME,
      description: "The hand-in's moment (spec.handInRequestedAt then): late is judged by it.",
    }),
    frozenAt: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description:
          "When the snapshot the copy read was taken (OPERATOR_HANDIN_SNAPSHOT_CLASS): the files are exactly as they were then. Unset: the copy read the live volume.",
      }),
    ),
    copyStartedAt: Type.Optional(
      Type.Unsafe<string>({ ...TIME, description: "When the copy started reading the student's files." }),
    ),
    time: Type.Unsafe<string>({ ...TIME, description: "When the copy ended." }),
    files: Type.Integer({ minimum: 0 }),
    bytes: Type.Integer({ minimum: 0, format: "int64" }),
    sha256: SHA256,
    late: Type.Boolean(),
    deadline: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description: "The deadline that applied to this student (their extension's, else the assignment's).",
      }),
    ),
    extended: Type.Optional(
      Type.Boolean({ description: "The deadline was the student's own (an extension)." }),
    ),
    by: StringEnum(["student", "deadline"], {
      description: "Who asked for it (spec.handInRequestedBy).",
    }),
    skipped: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Entries left out: links, FIFOs, sockets, devices, files changed while read.",
      }),
    ),
    writtenAfter: Type.Optional(
      Type.Array(Type.String({ maxLength: 1024 }), {
        maxItems: 20,
        description:
          "Files changed after the moment and before the copy read them (their change time says so): copied as they were when read. The first 20; writtenAfterCount counts them all.",
      }),
    ),
    writtenAfterCount: Type.Optional(Type.Integer({ minimum: 0 })),
    score: Type.Optional(
      Type.Number({
        description: "The autograder's score of this version while it counted (kept when a newer one came).",
      }),
    ),
  },
  { description: "What the platform collected: the student's receipt." },
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
          pattern: COURSE_FOLDER_NAME_PATTERN,
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
    extensions: Type.Optional(
      Type.Array(EXTENSION, {
        maxItems: 1000,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["user"],
        description:
          "Students with a deadline of their own (an extension, an accommodation): each entry replaces spec.deadline and spec.lateUntil for that student alone. Their work is collected at their own closing time; their receipt names the deadline that applied.",
      }),
    ),
    latePenalty: Type.Optional(
      Type.Object(
        {
          percentPerDay: Type.Number({
            minimum: 0,
            maximum: 100,
            description: "Taken off the score for each day, or part of one, a hand-in is late.",
          }),
          maxPercent: Type.Optional(
            Type.Number({ minimum: 0, maximum: 100, description: "At most this much in all (default 100)." }),
          ),
        },
        {
          description:
            "What a late hand-in (after the student's deadline, before their lateUntil) costs. Unset: late is marked, nothing is taken off.",
        },
      ),
    ),
    autograder: Type.Optional(AUTOGRADER),
    rubric: Type.Optional(
      Type.Array(RUBRIC_ITEM, {
        maxItems: 50,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["id"],
        description:
          "Items a teacher applies to a hand-in (Submission spec.review.items). A hand-in's score is the autograder's plus the points of the items applied to it, as they are now: changing an item's points changes every hand-in it was applied to.",
      }),
    ),
    gradesReleased: Type.Optional(
      Type.Boolean({
        description:
          "Students see their score and their tests (those the autograder marks visible, after_published, and after_due_date once their closing time passed; hidden never). Until then scores are for teachers only.",
      }),
    ),
    maxVersions: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_HAND_IN_VERSIONS,
        default: 5,
        description:
          "How many times a student may hand in before their closing time; every version is kept with its receipt and the last counts unless a teacher picks another. 1: a hand-in is final.",
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
  collectionFolder: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        "The folder this Assignment's files use in the collection (published/, handins/, feedback/, grades/, autograders/): <name>-<start of its uid>, chosen at its first sync, so an Assignment made later with the same name never sees them.",
    }),
  ),
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
  autograder: Type.Optional(
    Type.Object(
      {
        release: Type.Integer({ minimum: 1, description: "The spec.autograder.release of the snapshot." }),
        revision: Type.Unsafe<string>({
          type: "string",
          pattern: "^[0-9a-f]{64}$",
          description: "The SHA-256 of the snapshot's manifest: a grade records it.",
        }),
        at: Type.Unsafe<string>({ ...TIME }),
        solutionRevision: Type.Optional(
          Type.Unsafe<string>({
            type: "string",
            pattern: "^[0-9a-f]{64}$",
            description: "The SHA-256 of the reference solution's snapshot (spec.autograder.solution).",
          }),
        ),
        check: Type.Optional(
          Type.Object(
            { solution: Type.Optional(AUTOGRADER_CHECK), starter: Type.Optional(AUTOGRADER_CHECK) },
            { description: "The autograder run on the reference solution and on the starter files." },
          ),
        ),
        checked: Type.Optional(
          Type.Boolean({
            description:
              "True once the reference solution scored full marks and the starter files less: hand-ins are graded only then.",
          }),
        ),
      },
      { description: "The autograder snapshot hand-ins are graded with." },
    ),
  ),
  failedCopies: Type.Optional(FAILED_COPIES),
  conditions: Type.Optional(Conditions),
});

/** A grading run's test, as kept in status (the whole output lives in the collection). */
const GRADED_TEST = Type.Object({
  name: Type.String({ maxLength: 200 }),
  score: Type.Optional(Type.Number()),
  maxScore: Type.Optional(Type.Number()),
  status: Type.Optional(StringEnum(["passed", "failed"])),
  visibility: Type.Optional(StringEnum([...TEST_VISIBILITIES])),
});

/** What a grading run is keyed by: the same inputs give the same key (and the same pod). */
const GRADE_INPUTS = {
  key: Type.String({ maxLength: 64, description: "Hash of the inputs below: one run per key." }),
  receiptSha256: Type.Unsafe<string>({
    type: "string",
    pattern: "^[0-9a-f]{64}$",
    description: "The hand-in graded (its receipt's SHA-256).",
  }),
  autograderRevision: Type.Unsafe<string>({
    type: "string",
    pattern: "^[0-9a-f]{64}$",
    description: "The autograder snapshot it ran.",
  }),
  image: Type.String({ maxLength: 512, description: "The image it ran in." }),
  time: Type.Unsafe<string>({ ...TIME, description: "When the run ended." }),
};

const GRADE = Type.Object(
  {
    ...GRADE_INPUTS,
    score: Type.Number(),
    maxScore: Type.Optional(Type.Number()),
    executionSeconds: Type.Optional(Type.Number()),
    tests: Type.Optional(
      Type.Array(GRADED_TEST, {
        maxItems: 100,
        description: "The first 100 tests; every test with its output is in results.json.",
      }),
    ),
    testCount: Type.Optional(Type.Integer({ minimum: 0 })),
    latePenaltyPercent: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description:
          "What spec.latePenalty takes off for a late hand-in (score is before it): percentPerDay per day or part of one after the student's deadline.",
      }),
    ),
    results: Type.String({
      maxLength: 1024,
      description: "Where the run's results.json and stdout are in the Template's collection.",
    }),
    previous: Type.Optional(
      Type.Object(
        {
          score: Type.Number(),
          autograderRevision: Type.Unsafe<string>({ type: "string", pattern: "^[0-9a-f]{64}$" }),
        },
        {
          description:
            "The grade this one replaced when a new autograder revision graded the same hand-in again: the teacher's before and after.",
        },
      ),
    ),
  },
  {
    description:
      "The last good result of the autograder: a failed run (timed out, results.json missing or invalid) never replaces it.",
  },
);

const GRADE_ATTEMPT = Type.Object(
  {
    ...GRADE_INPUTS,
    ok: Type.Boolean(),
    reason: Type.String({ maxLength: 64 }),
    message: Type.String({ maxLength: 4096 }),
  },
  { description: "The last grading run, good or not: a run is made once per key." },
);

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
          "Who asked for the last hand-in: the student (their home page's button, or kubectl) or the platform at the assignment's closing time. Set with handInRequestedAt; once deadline, final.",
      }),
    ),
    handInRequestedAt: Type.Optional(
      Type.Unsafe<string>({
        ...TIME,
        description:
          "Set when the student hands in (or at the closing time): the platform then collects a new version (the Assignment's maxVersions). It only moves forward; a collection at the closing time is final.",
      }),
    ),
    review: Type.Optional(
      Type.Object(
        {
          items: Type.Optional(
            Type.Array(Type.String({ maxLength: 40 }), {
              maxItems: 50,
              "x-kubernetes-list-type": "set",
              description: "The ids of the Assignment's rubric items applied to this hand-in.",
            }),
          ),
          comment: Type.Optional(Type.String({ maxLength: 4000, description: "For the student." })),
          countedVersion: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: MAX_HAND_IN_VERSIONS,
              description: "The version that counts (status.versions); unset: the last one.",
            }),
          ),
          autograderScore: Type.Optional(
            Type.Number({
              description:
                "The autograder's part set by hand: it replaces status.grade.score, and a new autograder run leaves it alone.",
            }),
          ),
          by: Type.Optional(Type.String({ maxLength: 253, description: "Who reviewed last." })),
          at: Type.Optional(Type.Unsafe<string>({ ...TIME, description: "When." })),
        },
        {
          description:
            "A teacher's review (the console's, or kubectl): written by the Template's teachers only (update on submissions/review).",
        },
      ),
    ),
  },
  {
    "x-kubernetes-validations": [
      {
        rule: "!has(oldSelf.handInRequestedAt) || (has(self.handInRequestedAt) && timestamp(self.handInRequestedAt) >= timestamp(oldSelf.handInRequestedAt))",
        message: "spec.handInRequestedAt only moves forward: every hand-in is kept",
      },
      {
        rule: "!has(oldSelf.handInRequestedBy) || (has(self.handInRequestedBy) && (oldSelf.handInRequestedBy != 'deadline' || (self.handInRequestedBy == 'deadline' && self.handInRequestedAt == oldSelf.handInRequestedAt)))",
        message:
          "a collection at the closing time is final: spec.handInRequestedBy and handInRequestedAt cannot change after it",
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
  gradeFile: Type.Optional(
    Type.Object(
      { sha256: SHA256, at: Type.Unsafe<string>({ ...TIME }) },
      {
        description:
          "The released grade last written to the student's assignments/<name>/feedback/grade.md (its SHA-256): a changed grade is written again.",
      },
    ),
  ),
  keptOwnVersion: Type.Optional(
    Type.Array(Type.String({ maxLength: 1024 }), {
      maxItems: 1000,
      description: "Files the student had changed, so a re-publish left them as they were.",
    }),
  ),
  receipt: Type.Optional(
    Type.Unsafe<Static<typeof RECEIPT>>({
      ...RECEIPT,
      description:
        "The hand-in that counts: the last version, or the one a teacher picked (spec.review.countedVersion). Grading and downloads use it.",
    }),
  ),
  versions: Type.Optional(
    Type.Array(RECEIPT, {
      maxItems: MAX_HAND_IN_VERSIONS,
      description:
        "Every hand-in, oldest first, each with its receipt; each version's files are in the collection's handins/<assignment>/<user>/<version>/.",
    }),
  ),
  refusedHandIn: Type.Optional(
    Type.Object(
      {
        requestedAt: Type.Unsafe<string>({ ...TIME, description: "The refused hand-in's moment." }),
        reason: StringEnum(["OverLimit", "NothingToCopy"]),
        message: Type.String({ maxLength: 1024, description: "Why, in words the student reads." }),
        at: Type.Unsafe<string>({ ...TIME, description: "When the copy refused it." }),
      },
      {
        description:
          "The last hand-in refused for what the student's folder holds (over the Assignment's limits, or nothing to copy). It stays refused: its files are never taken later by a retry; the student may hand in again, judged at that new moment.",
      },
    ),
  ),
  grade: Type.Optional(GRADE),
  gradeAttempt: Type.Optional(GRADE_ATTEMPT),
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
export type Grade = Static<typeof GRADE>;
export type Receipt = Static<typeof RECEIPT>;
export type GradedTest = Static<typeof GRADED_TEST>;

/** Condition types the operator writes on Assignments (operator/coursework/syncAssignment.ts). */
export const AssignmentConditions = {
  /** True once spec.release's snapshot is in the collection; False says what is missing or failed. */
  Published: "Published",
  /** With spec.autograder: True once its release's snapshot is taken; False says why not. */
  AutograderReady: "AutograderReady",
} as const;

/** Condition types the operator writes on Submissions (operator/coursework/syncSubmission.ts). */
export const SubmissionConditions = {
  /** True when the student's copy is the published release; False says why it is not (yet). */
  Distributed: "Distributed",
  /** Set once a hand-in is requested: True with the receipt, False with the reason (for the student). */
  HandedIn: "HandedIn",
  /** Set once feedback is returned: True, or False with the reason. */
  FeedbackReturned: "FeedbackReturned",
  /** With an autograder: True when the counted hand-in's result is in status.grade; False: running, or why the last run gave none. */
  Graded: "Graded",
  /** Once grades are released: True when the student's feedback/grade.md says what they may see. */
  GradeReturned: "GradeReturned",
} as const;
