/**
 * Who reaches an environment during an exam (docs/decisions/0013-exams.md). The operator marks a
 * student's exam environment with the exam's label and notice (start, end, proctors) and their
 * other Userlands with a hold label; the proxy reads both from the Userland it already caches:
 *
 * - the student's own session must be issued at or after the start (sign in again, on the exam
 *   machine): a session copied from elsewhere, or left open before, is refused;
 * - a visitor must be a proctor (a listed user or a member of a listed group) and, as for any
 *   visit, hold the visit right (asked afterwards, route/visitTracker.ts); their session too must be new;
 * - a held Userland is not served, nor started, until the exam is over;
 * - once the end has passed, the exam environment serves nobody (student or proctor) until the
 *   operator has collected the hand-ins and taken its marks off: nothing written after the end
 *   reaches what is collected through the proxy; a WebSocket opened before the end is closed at
 *   it (forward/examSockets.ts).
 *
 * A marked Userland whose notice cannot be read admits nobody: an exam must never look open. Nor
 * does one whose exam's NetworkPolicy this replica does not see (deleted by someone, not yet
 * written again by the operator): the environment is served only while its isolation is observed
 * in force (issue 41 item 8), and its open WebSockets are closed when the policy goes.
 */
import {
  examRefText,
  ExamMarks,
  parseExamNotice,
  type ExamNotice,
  type Userland,
} from "../../../api/v1alpha1/index.ts";
import { html, type Html } from "../../../lib/html.ts";
import type { Session } from "../../../lib/session.ts";
import { simplePage } from "../pages/environmentPages.ts";
import { document, type Page } from "../pages/pageShell.ts";

type Exam = { notice: ExamNotice } | { unreadable: string };

/** The exam a Userland is in (its label), with its notice; undefined outside exams. */
export function examOf(userland: Userland): Exam | undefined {
  const name = userland.metadata.labels?.[ExamMarks.examLabel];
  if (name === undefined) return undefined;
  const notice = parseExamNotice(userland.metadata.annotations?.[ExamMarks.examAnnotation]);
  return notice && notice.exam === name ? { notice } : { unreadable: name };
}

/**
 * What the starting page says of an exam the environment is (re)starting for: the exam restarts it
 * (a new pod with the exam's label), and programs that ran in it (notebook kernels, terminals) are
 * gone, which a student should hear from the platform rather than find out (issue 44 item 4).
 */
export function examRestartWords(userland: Userland): string | undefined {
  const exam = examOf(userland);
  if (!exam || "unreadable" in exam) return undefined;
  const { notice } = exam;
  return `Restarting for the exam ${notice.title ?? notice.exam} (until ${utcMinute(notice.end)}): programs that were running in it, such as notebook kernels and terminals, were stopped; your saved files are all here.`;
}

const unreadablePage = (exam: string) =>
  simplePage(
    503,
    "This environment is closed for an exam",
    `It is in the exam ${exam}, whose details cannot be read. Nobody can open it until an admin fixes the Userland's userland.dev/exam annotation or the exam is over.`,
  );

/**
 * 503 while the exam runs and its NetworkPolicy is not in the cache (`isolated` is
 * ClusterView.examIsolated): a moment's refusal rather than an environment reaching the network
 * during an exam. After the end the over page decides.
 */
export function notIsolatedPage(
  userland: Userland,
  isolated: ((namespace: string, exam: string) => boolean) | undefined,
  now = Date.now(),
): Page | undefined {
  const exam = examOf(userland);
  if (!exam || "unreadable" in exam || now >= Date.parse(exam.notice.end)) return undefined;
  const namespace = exam.notice.namespace ?? userland.metadata.namespace ?? "";
  if (isolated?.(namespace, exam.notice.exam)) return undefined;
  return simplePage(
    503,
    "This environment is closed for a moment",
    `The exam ${exam.notice.title ?? exam.notice.exam} keeps this environment off the network, and that isolation is not in force right now. The platform restores it within seconds; reload this page then.`,
  );
}

/** Issued before the start (`iat` in whole seconds, as signed). */
const before = (session: Session, notice: ExamNotice) => session.iat * 1000 < Date.parse(notice.start);

/** The auth service's sign-out page (beside its login page), coming back to `returnTo`: a new sign-in. */
export function signOutUrlFor(loginUrl: URL, returnTo: string): string {
  const url = new URL("logout", loginUrl);
  url.searchParams.set("rd", returnTo);
  return url.href;
}

/** "2026-12-01 09:00 UTC": the same for every reader, whatever their machine's zone. */
const utcMinute = (iso: string) => `${new Date(iso).toISOString().slice(0, 16).replace("T", " ")} UTC`;

/** A page asking for a new sign-in on this machine: through the auth service's sign-out and back here. */
export function signInAgainPage(notice: ExamNotice, signOutUrl: string): Page {
  const title = "Sign in again on this machine";
  const name = notice.title ?? notice.exam;
  const message = `The exam ${name} started at ${utcMinute(notice.start)}. Sessions from before its start are not accepted: sign out and sign in again here, on the computer you take the exam on.`;
  return {
    status: 403,
    title,
    body: document(
      title,
      html`<p>${message}</p>
        <p><a href="${signOutUrl}">Sign out, then sign in again</a></p>`,
      {},
    ),
    json: { error: title, message, exam: notice.exam, start: notice.start },
  };
}

/** After the end, while the operator collects: the environment serves nobody. */
function examOverPage(notice: ExamNotice): Page {
  const title = "The exam is over";
  const message = `The exam ${notice.title ?? notice.exam} ended at ${utcMinute(notice.end)}. Your work is being collected; this environment opens again once it has been.`;
  return {
    status: 403,
    title,
    body: document(title, html`<p>${message}</p>`, {}),
    json: { error: title, message, exam: notice.exam, end: notice.end },
  };
}

const over = (notice: ExamNotice, now: Date) => now.getTime() >= Date.parse(notice.end);

/** A forwarded request's exam end (epoch ms), when the environment is in an exam. */
export function examEndOf(userland: Userland): { examEnd?: number; exam?: string } {
  const exam = examOf(userland);
  return exam && "notice" in exam
    ? {
        examEnd: Date.parse(exam.notice.end),
        exam: examKey(exam.notice.namespace ?? userland.metadata.namespace ?? "", exam.notice.exam),
      }
    : {};
}

/** An exam as "<namespace>/<name>": its environments' WebSockets are closed by it. */
export const examKey = (namespace: string, exam: string): string => `${namespace}/${exam}`;

/** The student's own request to their exam environment: undefined when it may pass. */
export function ownerRefusal(
  userland: Userland,
  session: Session,
  signOutUrl: string,
  now = new Date(),
): Page | undefined {
  const exam = examOf(userland);
  if (!exam) return undefined;
  if ("unreadable" in exam) return unreadablePage(exam.unreadable);
  if (over(exam.notice, now)) return examOverPage(exam.notice);
  return before(session, exam.notice) ? signInAgainPage(exam.notice, signOutUrl) : undefined;
}

export function isProctor(notice: ExamNotice, session: Session): boolean {
  return (
    notice.proctors.users.includes(session.user) ||
    session.groups.some((g) => notice.proctors.groups.includes(g))
  );
}

/**
 * A visit during an exam: "denied" (refused as any visit without the right) for anyone but a
 * proctor, before the visit right is even asked; a proctor's old session is refused as a student's is.
 */
export function visitorRefusal(
  userland: Userland,
  session: Session,
  signOutUrl: string,
  now = new Date(),
): Page | "denied" | undefined {
  const exam = examOf(userland);
  if (!exam) return undefined;
  if ("unreadable" in exam) return unreadablePage(exam.unreadable);
  if (!isProctor(exam.notice, session)) return "denied";
  if (over(exam.notice, now)) return examOverPage(exam.notice);
  return before(session, exam.notice) ? signInAgainPage(exam.notice, signOutUrl) : undefined;
}

/**
 * How a page names an exam: its title and, since a held environment may be in another course's
 * namespace than the exam, the exam's namespace and name ("Midterm (course-a/midterm)").
 */
export const examName = (notice: ExamNotice) =>
  notice.title === undefined ? examRefText(notice) : `${notice.title} (${examRefText(notice)})`;

/** The exam that holds a Userland (hold label and notice); undefined when none does. */
function holdOf(userland: Userland): { notice: ExamNotice | undefined } | undefined {
  if (userland.metadata.labels?.[ExamMarks.holdLabel] === undefined) return undefined;
  return { notice: parseExamNotice(userland.metadata.annotations?.[ExamMarks.holdAnnotation]) };
}

/** A student's other environment, stopped for an exam: not served, not started, until it ends. */
export function heldPage(userland: Userland): Page | undefined {
  const hold = holdOf(userland);
  if (!hold) return undefined;
  const { notice } = hold;
  return simplePage(
    403,
    "Paused for an exam",
    `This environment is stopped during ${notice ? `the exam ${examName(notice)}, until ${utcMinute(notice.end)}` : "an exam"}. It starts again by itself after the exam.`,
  );
}

/** What the student's home says of an exam on one of their environments; undefined outside exams. */
export function examOnHome(userland: Userland): { held: boolean; text: string } | undefined {
  const hold = holdOf(userland);
  if (hold) {
    const { notice } = hold;
    return {
      held: true,
      text: `Paused for ${notice ? `the exam ${examName(notice)} until ${utcMinute(notice.end)}` : "an exam"}: it starts again by itself after it.`,
    };
  }
  const exam = examOf(userland);
  if (!exam) return undefined;
  if ("unreadable" in exam) return { held: false, text: `Closed for the exam ${exam.unreadable}.` };
  const { notice } = exam;
  return {
    held: false,
    text: `In the exam ${notice.title ?? notice.exam} until ${utcMinute(notice.end)}: only you (signed in since its start) and its proctors open it, and nothing leaves it but name lookups.`,
  };
}

/** An exam the student's home announces: in the day before its start, or while it runs. */
export interface HomeExam {
  exam: string;
  namespace?: string;
  title: string;
  class?: string;
  state: "upcoming" | "running";
  /** RFC 3339. */
  start: string;
  end: string;
  /** The environment it runs in (its Template's title). */
  environment: string;
  text: string;
}

/**
 * The exams on a student's home (docs/decisions/0013-exams.md), soonest first: an upcoming one
 * from the notice the operator puts on their exam environment the day before (one whose start
 * has passed is not shown: the operator takes it off at the start), a running one from the exam's
 * own mark. The same exam once, whichever of their environments carries it.
 */
export function examsOnHome(
  userlands: readonly Userland[],
  titleOf: (userland: Userland) => string,
  now: Date,
): HomeExam[] {
  const out = new Map<string, HomeExam>();
  const add = (notice: ExamNotice, userland: Userland, state: HomeExam["state"]) => {
    const key = `${notice.namespace ?? userland.metadata.namespace ?? ""}/${notice.exam}`;
    if (out.get(key)?.state === "running") return;
    const title = notice.title ?? notice.exam;
    const environment = titleOf(userland);
    const text =
      state === "running"
        ? `Exam ${title} in progress until ${utcMinute(notice.end)}, in your ${environment}.`
        : `Exam ${title}${notice.class === undefined ? "" : ` for ${notice.class}`} starts at ${utcMinute(notice.start)}: your ${environment} will restart, and you will sign in again on the exam machine.`;
    out.set(key, {
      exam: notice.exam,
      ...(notice.namespace === undefined ? {} : { namespace: notice.namespace }),
      title,
      ...(notice.class === undefined ? {} : { class: notice.class }),
      state,
      start: notice.start,
      end: notice.end,
      environment,
      text,
    });
  };
  for (const userland of userlands) {
    const upcoming = parseExamNotice(userland.metadata.annotations?.[ExamMarks.upcomingAnnotation]);
    if (upcoming && Date.parse(upcoming.start) > now.getTime()) add(upcoming, userland, "upcoming");
    const exam = examOf(userland);
    if (exam && "notice" in exam && Date.parse(exam.notice.end) > now.getTime())
      add(exam.notice, userland, "running");
  }
  return [...out.values()].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
}

/** What the home's script compares to notice an exam announced, started or over. */
export const examsSignature = (exams: readonly HomeExam[]) =>
  exams.map((e) => `${e.namespace ?? ""}/${e.exam}:${e.state}`).join(",");

/** The same in the page's script (the JSON view's `exams`). */
export const EXAMS_SIGN_JS = `(v.exams || []).map(function (x) { return (x.namespace || "") + "/" + x.exam + ":" + x.state; }).join(",")`;

/** The home's exam notices, above everything else. */
export function examsSection(exams: readonly HomeExam[]): Html | "" {
  if (exams.length === 0) return "";
  return html`<ul class="exams" aria-label="Exams">
    ${exams.map(
      (e) =>
        html`<li class="exam exam-${e.state}" role="status">
          <strong>${e.state === "running" ? "Exam in progress" : "Exam ahead"}:</strong> ${e.text}
        </li>`,
    )}
  </ul>`;
}
