/**
 * The one client of the user-management service's REST API, for the services that call it with
 * their own bearer token: the proxy (start and stop a student's environment, create one of a
 * self-service Template, a student's assignments and hand-in) and the auth service (create a
 * Userland at first login, end a signed-out session everywhere). The token is
 * read from a file on every call: projected ServiceAccount tokens are rotated on disk.
 */
import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { StudentAssignmentView } from "../api/studentAssignmentView.ts";

export interface UserManagerClientOptions {
  /** The user-manager's base URL. */
  url: URL;
  tokenFile?: string | undefined;
  /** Per call (default 10 s). */
  timeoutMs?: number | undefined;
}

/** A call the user-manager did not accept; `status` 0: it was not reached at all. */
export class UserManagerError extends Error {
  readonly status: number;
  /** The start of the user-manager's answer, for logs. */
  readonly detail: string;
  constructor(status: number, message: string, detail = "", options?: ErrorOptions) {
    super(message, options);
    this.name = "UserManagerError";
    this.status = status;
    this.detail = detail;
  }
}

/** What a log line says of a failed call: the user-manager's status and answer, or the error. */
export function userManagerFailure(error: unknown): { status: number; detail: string } | { err: Error } {
  return error instanceof UserManagerError
    ? { status: error.status, detail: error.detail }
    : { err: error as Error };
}

/** One assignment as its student sees it: the user-manager's StudentAssignmentView. */
export type StudentAssignment = StudentAssignmentView;

/** What a hand-in came to: the student's assignment afterwards, or why it was refused. */
export type HandInResult =
  | { result: "handed-in"; assignment: StudentAssignment }
  | { result: "closed" | "not-found"; message: string };

export interface UserManagerClient {
  /** Starts the Userland `name` (the user-manager serves one namespace: the caller's). */
  start(name: string): Promise<void>;
  /** Stops the Userland `name` (scaled to zero, data kept). */
  stop(name: string): Promise<void>;
  /**
   * Creates `user`'s Userland of a Template (one per user and Template); "exists" when that pair
   * already has one (409), or with `ifUserHasNone` when the user has a Userland of any Template.
   */
  create(
    user: string,
    templateName: string,
    options?: { ifUserHasNone?: boolean },
  ): Promise<"created" | "exists">;
  /** `user`'s assignments (docs/decisions/0011-coursework.md), soonest closing first. */
  assignments(user: string): Promise<StudentAssignment[]>;
  /** Hands in `user`'s work of the Template's Assignment `name` (final; again: the same answer). */
  handIn(templateName: string, name: string, user: string): Promise<HandInResult>;
  /**
   * `user`'s home volume of a Template as a zip, streamed (docs/decisions/0011-coursework.md,
   * "Downloads"); `abort` ends the transfer (the student left).
   */
  downloadHome?(user: string, templateName: string): Promise<Download>;
  /**
   * Reports a visit to the Userland `name` (the proxy; docs/decisions/0012-visits.md): the owner's
   * identity when the visitor may enter, "forbidden" when RBAC says no (403), "consent" when the
   * student must allow it first (409).
   */
  visit?(name: string, report: VisitReportBody): Promise<{ owner: string } | "forbidden" | "consent">;
  /**
   * Ends sessions of the Userland `name`'s user before they expire (api/sessions.ts): `one` that
   * session, else every session issued until now (sign out everywhere).
   */
  endSessions?(name: string, one?: { sid: string; exp: number }): Promise<void>;
  /**
   * Ends the session whose token is `session` everywhere (the auth service's sign-out; the token
   * is the proof).
   */
  endSession?(session: string): Promise<void>;
  /** Records the groups a new session carries (the auth service at sign-in; the token is the proof). */
  sessionSeen?(session: string): Promise<void>;
  /** The student's Allow for a waiting visitor (`session`: the student's own session token). */
  allowVisit?(name: string, consent: { session: string; visitor: string }): Promise<"allowed" | "none">;
}

/** A zip on its way: read `body` at the receiver's pace. */
export interface Download {
  body: Readable;
  /** The user-manager's Content-Disposition. */
  disposition: string;
  abort(): void;
}

/** The user-manager waits up to 2 minutes for an archive pod; the body then takes as long as it takes. */
const DOWNLOAD_START_TIMEOUT_MS = 150_000;

/** What the proxy tells the user-manager about a visit (services/user-manager/visits.ts). */
export interface VisitReportBody {
  /** The visitor's session token, which the user-manager verifies itself. */
  session: string;
  phase: "begin" | "continue" | "end";
  firstSeen: string;
  lastSeen: string;
  quietSeconds: number;
}

export function userManagerClient(options: UserManagerClientOptions): UserManagerClient {
  const base = new URL(options.url);
  if (!base.pathname.endsWith("/")) base.pathname += "/";

  async function post(path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (options.tokenFile)
      headers.authorization = `Bearer ${(await readFile(options.tokenFile, "utf8")).trim()}`;
    let response: Response;
    try {
      response = await fetch(new URL(path, base), {
        // No body: a read (the callers' only GET); with one, a change.
        method: body === undefined ? "GET" : "POST",
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new UserManagerError(0, `user-manager unreachable: ${(error as Error).message}`, "", {
        cause: error,
      });
    }
    return { status: response.status, text: await response.text().catch(() => "") };
  }

  const refused = (status: number, text: string) =>
    new UserManagerError(
      status,
      `user-manager answered ${status}: ${text.slice(0, 300)}`,
      text.slice(0, 500),
    );

  return {
    async start(name) {
      const { status, text } = await post(`api/v1/userlands/${encodeURIComponent(name)}/start`, {});
      if (status < 200 || status > 299) throw refused(status, text);
    },
    async stop(name) {
      const { status, text } = await post(`api/v1/userlands/${encodeURIComponent(name)}/stop`, {});
      if (status < 200 || status > 299) throw refused(status, text);
    },
    async endSessions(name, one) {
      const { status, text } = await post(
        `api/v1/userlands/${encodeURIComponent(name)}/end-sessions`,
        one ? { sessionId: one.sid, expires: one.exp } : {},
      );
      if (status < 200 || status > 299) throw refused(status, text);
    },
    async endSession(session) {
      const { status, text } = await post("api/v1/sessions/end", { session });
      if (status !== 200) throw refused(status, text);
    },
    async sessionSeen(session) {
      const { status, text } = await post("api/v1/sessions/seen", { session });
      if (status !== 200) throw refused(status, text);
    },
    async create(user, templateName, options) {
      const { status, text } = await post("api/v1/userlands", {
        user,
        templateName,
        ...(options?.ifUserHasNone ? { ifUserHasNone: true } : {}),
      });
      if (status === 201) return "created";
      if (status === 409) return "exists";
      throw refused(status, text);
    },
    async assignments(user) {
      const { status, text } = await post(`api/v1/users/${encodeURIComponent(user)}/assignments`);
      if (status !== 200) throw refused(status, text);
      return (JSON.parse(text) as { items: StudentAssignment[] }).items;
    },
    async handIn(templateName, name, user) {
      const path = `api/v1/templates/${encodeURIComponent(templateName)}/assignments/${encodeURIComponent(name)}/submissions/${encodeURIComponent(user)}/handin`;
      const { status, text } = await post(path, {});
      if (status === 200) return { result: "handed-in", assignment: JSON.parse(text) as StudentAssignment };
      const message = () => {
        try {
          const { message } = JSON.parse(text) as { message?: unknown };
          return typeof message === "string" ? message : "";
        } catch {
          return "";
        }
      };
      if (status === 409) return { result: "closed", message: message() };
      // 404 for an unknown Template or Assignment too (400 for a name no Assignment can have).
      if (status === 404 || status === 400) return { result: "not-found", message: message() };
      throw refused(status, text);
    },
    async downloadHome(user, templateName) {
      const headers: Record<string, string> = {};
      if (options.tokenFile)
        headers.authorization = `Bearer ${(await readFile(options.tokenFile, "utf8")).trim()}`;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), DOWNLOAD_START_TIMEOUT_MS);
      let response: Response;
      try {
        response = await fetch(
          new URL(
            `api/v1/users/${encodeURIComponent(user)}/archive?template=${encodeURIComponent(templateName)}`,
            base,
          ),
          { headers, signal: controller.signal },
        );
      } catch (error) {
        throw new UserManagerError(0, `user-manager unreachable: ${(error as Error).message}`, "", {
          cause: error,
        });
      } finally {
        clearTimeout(timer);
      }
      if (response.status !== 200 || !response.body) {
        const text = await response.text().catch(() => "");
        throw refused(response.status, text);
      }
      return {
        body: Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
        disposition: response.headers.get("content-disposition") ?? 'attachment; filename="work.zip"',
        abort: () => controller.abort(),
      };
    },
    async visit(name, report) {
      const { status, text } = await post(`api/v1/userlands/${encodeURIComponent(name)}/visits`, report);
      if (status === 403) return "forbidden";
      // The Template requires the student's Allow first (docs/decisions/0012-visits.md).
      if (status === 409) return "consent";
      if (status !== 200) throw refused(status, text);
      return { owner: (JSON.parse(text) as { owner: string }).owner };
    },
    async allowVisit(name, consent) {
      const { status, text } = await post(
        `api/v1/userlands/${encodeURIComponent(name)}/visit-consents`,
        consent,
      );
      if (status === 404) return "none";
      if (status !== 200) throw refused(status, text);
      return "allowed";
    },
  };
}
