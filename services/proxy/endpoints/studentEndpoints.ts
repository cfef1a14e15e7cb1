/**
 * The proxy's own endpoints under /_userland/ on every host, never forwarded to an environment,
 * always for the session's own environments:
 *
 * - `GET /_userland/status`: the host's Template's environment (what the starting page polls);
 * - `GET /_userland/home`: the student's home page (pages/homePage.ts), or its view as JSON;
 * - `POST /_userland/start`: the host's Template's environment (the stopped page), or the one the
 *   form names with `userland` (the home page);
 * - `POST /_userland/stop`: the environment the form names with `userland`, or the host's;
 * - `POST /_userland/create`: the student's environment of the self-service Template `template`;
 * - `POST /_userland/handin`: the student's own work of `assignment` (of `template`), after a
 *   confirm page (`confirm=yes`);
 * - `GET /_userland/download?template=`: the student's own home volume of that Template as a zip
 *   (endpoints/download.ts);
 * - `POST /_userland/signout`: with `everywhere=yes`, ends every session of the student issued
 *   until now (api/sessions.ts), else this one; then on to the auth service's sign-out page.
 *
 * A Userland a form names counts only when its spec.user is exactly the session's user: any
 * other name is answered like a name that does not exist.
 */
import { heldPage } from "../route/exam.ts";
import { progressText, startWords } from "../../../lib/startProgress.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { localPath } from "../../../lib/localPath.ts";
import { environmentInfo, environmentState } from "../route/environmentState.ts";
import { serveDownload } from "./download.ts";
import { FormTooLarge, formFromThisSite, readForm } from "./forms.ts";
import { DOWNLOAD_PATH, HOME_PATH, homeView, ownUserland, type HomeConfig } from "../pages/homeView.ts";
import { homePage } from "../pages/homePage.ts";
import { handInConfirmPage } from "../pages/homeAssignments.ts";
import type { Coursework } from "./coursework.ts";
import { missingPage, simplePage } from "../pages/environmentPages.ts";
import type { Page } from "../pages/pageShell.ts";
import type { RequestRecord } from "../requestLog.ts";
import { prefersJson, sendJson, sendPage, sendRedirect } from "../pages/send.ts";
import type { OwnEndpointRoute } from "../route/routes.ts";
import { userlandKey, type ClusterView } from "../route/userlandIndex.ts";
import type { Starter } from "./starter.ts";
import type { UserManagerClient } from "../../../lib/userManagerClient.ts";

export interface OwnEndpointDeps {
  cluster: ClusterView;
  /** Ends sessions (the home page's Sign out everywhere); absent without a user-manager. */
  userManager?: Pick<UserManagerClient, "endSessions"> | undefined;
  starter: Starter;
  coursework: Coursework;
  allowedOrigins: readonly string[];
  config: HomeConfig;
}

const FORM_ACTIONS = ["start", "stop", "create", "handin", "signout"] as const;
type FormAction = (typeof FORM_ACTIONS)[number];

const notFound = () =>
  simplePage(404, "Not found", "This address belongs to the platform, not to your environment.");

const userManagerRefused = (what: string) =>
  simplePage(
    502,
    `Could not ${what} your environment`,
    "The user-management service did not accept the request. Try again in a minute.",
  );

export async function serveOwnEndpoint(
  deps: OwnEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  own: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const { cluster, starter } = deps;
  const { session, template, client, pathname } = own;
  const read = req.method === "GET" || req.method === "HEAD";
  if (pathname === HOME_PATH && read) {
    const assignments = await deps.coursework.of(session.user);
    const view = homeView(cluster, starter, deps.config, client, session.user, assignments);
    // The apex's root is the home too: its forms come back to where it was shown.
    sendPage(req, res, homePage(view, own.homeAt ?? HOME_PATH));
    return;
  }
  const hostUserland = template === undefined ? undefined : cluster.findUserland(session.user, template);
  if (hostUserland) record.userland = userlandKey(hostUserland);
  if (pathname === "/_userland/status" && read && template !== undefined) {
    const state = environmentState(hostUserland);
    sendJson(res, 200, {
      state:
        state === "stopped" && hostUserland && starter.recentlyRequested(hostUserland) ? "starting" : state,
      template,
      user: session.user,
      phase: hostUserland?.status?.phase ?? (hostUserland ? "Pending" : undefined),
      ...startWords(hostUserland?.status),
      progress: progressText(hostUserland?.status?.progress, new Date()),
    });
    return;
  }
  if (pathname === DOWNLOAD_PATH && read) {
    await serveDownload(deps, req, res, session.user, record);
    return;
  }
  const action = FORM_ACTIONS.find((a) => pathname === `/_userland/${a}`);
  if (action === undefined || req.method !== "POST") {
    sendPage(req, res, notFound());
    return;
  }
  if (!formFromThisSite(req, res, client, deps.allowedOrigins, record)) return;
  let form: URLSearchParams;
  try {
    form = await readForm(req);
  } catch (error) {
    sendPage(
      req,
      res,
      error instanceof FormTooLarge
        ? simplePage(413, "Form too large", "This form must be smaller than 4 KiB.")
        : simplePage(400, "Bad request", "The form could not be read."),
    );
    return;
  }
  // The forms are the platform's own pages', whose rd is always a local path: anything else
  // (another site, characters a Location header cannot carry) was not made by those pages.
  const rd = form.get("rd");
  const returnPath = rd === null ? "/" : localPath(rd);
  if (returnPath === undefined) {
    record.outcome = "bad_request";
    sendPage(
      req,
      res,
      simplePage(400, "Bad request", "The form's return address is not a path on this site."),
    );
    return;
  }
  if (action === "signout") {
    const refused = await endSessions(deps, own, form.get("everywhere") === "yes", record);
    if (refused) return sendPage(req, res, refused);
    // This browser's cookies go at the auth service, which clears every host (the shared computer).
    sendRedirect(res, new URL("logout", deps.config.loginUrl).href);
    return;
  }
  const refusal =
    action === "handin"
      ? await handIn(deps, own.session.user, form, returnPath, record)
      : await act(deps, own, action, form, hostUserland, record);
  if (refusal) {
    sendPage(req, res, refusal);
    return;
  }
  if (prefersJson(req)) {
    if (action === "handin") sendJson(res, 202, { state: "handing-in" });
    else sendJson(res, 202, { state: action === "stop" ? "stopped" : "starting", template });
    return;
  }
  sendRedirect(res, returnPath);
}

/** Carries out a form's action for the session's own environment; a page when it cannot. */
async function act(
  deps: OwnEndpointDeps,
  own: OwnEndpointRoute,
  action: FormAction,
  form: URLSearchParams,
  hostUserland: Userland | undefined,
  record: RequestRecord,
): Promise<Page | undefined> {
  const { cluster, starter } = deps;
  const user = own.session.user;
  if (action === "create") return create(deps, user, form.get("template") ?? "", record);
  const named = form.get("userland");
  // The home names the Userland; the stopped page means this host's.
  const userland = named === null ? hostUserland : ownUserland(cluster, user, named);
  if (!userland) {
    record.outcome = "no_environment";
    return named === null && own.template !== undefined
      ? missingPage(environmentInfo(cluster, own.template, user))
      : simplePage(404, "No such environment", "You have no environment of that name.");
  }
  record.userland = userlandKey(userland);
  const state = environmentState(userland);
  // Stopped for an exam (route/exam.ts): it starts again by itself when the exam is over.
  const held = action === "start" ? heldPage(userland) : undefined;
  if (held) {
    record.outcome = "exam_refused";
    return held;
  }
  if (action === "start")
    return state === "stopped" && !(await starter.request(userland, user))
      ? userManagerRefused("start")
      : undefined;
  // A start sent a moment ago may not be in the cache yet: stopped there, but about to run.
  const running = state !== "stopped" || starter.recentlyRequested(userland);
  return running && !(await starter.stop(userland, user)) ? userManagerRefused("stop") : undefined;
}

/**
 * Ends the session (or, `everywhere`, all of the student's) in their session record
 * (api/sessions.ts), through the user-manager's end-sessions of one of their Userlands (the right
 * the proxy holds for them, as for Start and Stop). A student without an environment has nothing a
 * proxy serves but this home page; their sign-out is the auth service's alone.
 */
async function endSessions(
  deps: OwnEndpointDeps,
  own: OwnEndpointRoute,
  everywhere: boolean,
  record: RequestRecord,
): Promise<Page | undefined> {
  const { user, sid, exp } = own.session;
  const theirs = deps.cluster.userlandsOf?.(user).find((u) => u.spec.user === user);
  if (!theirs?.metadata.name) return undefined;
  record.userland = userlandKey(theirs);
  if (!deps.userManager?.endSessions) return userManagerRefused("sign out");
  try {
    await deps.userManager.endSessions(theirs.metadata.name, everywhere ? undefined : { sid, exp });
    return undefined;
  } catch {
    return simplePage(
      502,
      "Could not end your sessions",
      "The user-management service did not accept the request. Try again in a minute.",
    );
  }
}

/**
 * Hand in: always the session's own work (the form names an assignment, never a student), and only
 * an assignment the user-manager lists for them. Without `confirm=yes` the answer is the confirm
 * page (what is collected; whether the student can hand in again).
 */
async function handIn(
  deps: OwnEndpointDeps,
  user: string,
  form: URLSearchParams,
  returnPath: string,
  record: RequestRecord,
): Promise<Page | undefined> {
  const template = form.get("template") ?? "";
  const name = form.get("assignment") ?? "";
  record.template = template;
  const mine = await deps.coursework.of(user);
  if (mine === undefined) return userManagerRefused("hand in");
  const assignment = mine.find((a) => a.templateName === template && a.name === name);
  if (!assignment) {
    record.outcome = "bad_request";
    return simplePage(404, "No such assignment", "You have no assignment of that name.");
  }
  if (form.get("confirm") !== "yes") return handInConfirmPage(assignment, returnPath);
  const result = await deps.coursework.handIn(user, template, name);
  if (result.result === "handed-in") return undefined;
  if (result.result === "error") return userManagerRefused("hand in");
  record.outcome = "bad_request";
  return result.result === "closed"
    ? simplePage(
        409,
        "This hand-in was not accepted",
        `${result.message} Ask your teacher if you think this is wrong.`,
      )
    : simplePage(404, "No such assignment", "You have no assignment of that name.");
}

/** A self-service Template's environment for `user`, unless they hold one already. */
async function create(
  deps: OwnEndpointDeps,
  user: string,
  template: string,
  record: RequestRecord,
): Promise<Page | undefined> {
  const { cluster, starter } = deps;
  record.template = template;
  // Only Templates an admin marked self-service; others look the same whether they exist or not.
  if (cluster.getTemplate(template)?.spec.selfService !== true) {
    record.outcome = "bad_request";
    return simplePage(
      404,
      "Not available to you",
      "There is no environment of that kind you may create yourself. Your teacher assigns the others.",
    );
  }
  if (cluster.findUserland(user, template)) return undefined;
  const result = await starter.create(user, template);
  if (result === "error") return userManagerRefused("create");
  if (result === "exists")
    return simplePage(
      409,
      "You already have an environment",
      "The user-management service did not create another one for you. If it is not on your home page yet, it appears there in a moment; otherwise ask your teacher for this one.",
    );
  return undefined;
}
