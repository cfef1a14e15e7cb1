/**
 * What a student's home page shows: from the proxy's caches (no API call per request), every
 * Userland of the session's user, whatever its Template, with its state and where to open it, and
 * the self-service Templates (`spec.selfService`) they hold none of yet; and their assignments, the
 * user-manager's answer (endpoints/coursework.ts, cached briefly). Nothing here looks at any other user's Userlands.
 */
import { progressText } from "../../../lib/startProgress.ts";
import { UserlandAnnotations, type Template, type Userland } from "../../../api/v1alpha1/index.ts";
import type { StudentAssignment } from "../../../lib/userManagerClient.ts";
import type { ProxyConfig } from "../config.ts";
import { environmentState } from "../route/environmentState.ts";
import type { ClientInfo } from "../forward/headers.ts";
import { userlandLabel } from "../route/origins.ts";
import { hostForTemplate } from "../route/templateHosts.ts";
import type { ClusterView } from "../route/userlandIndex.ts";
import type { Starter } from "../endpoints/starter.ts";
import { homeVisitRequests, homeVisits, type HomeVisit, type HomeVisitRequest } from "./homeVisits.ts";
import { examOnHome, examsOnHome, type HomeExam } from "../route/exam.ts";

/** `/_userland/home` on every host; also the root of the base domain when it serves no Template. */
export const HOME_PATH = "/_userland/home";

export type HomeState = "ready" | "starting" | "stopped" | "failed";

export interface HomeEnvironment {
  /** The Userland's name: what the Start and Stop forms name. */
  name: string;
  template: string;
  /** The Template's display name, or its name. */
  title: string;
  description: string;
  state: HomeState;
  /** The operator's phase and message (why it failed, what it waits for). */
  phase: string;
  message: string;
  /** What the page says under the state: the phase and message while starting, why it failed. */
  detail: string;
  /** userland.dev/last-activity (RFC 3339), when it was ever used. */
  lastActivity: string | undefined;
  /** Where the student opens it; undefined when no host serves its Template. */
  openUrl: string | undefined;
  /** "Download my work": the Template names a home volume (spec.coursework.home). */
  downloadUrl: string | undefined;
  /** Stopped for an exam (route/exam.ts): no Start button; `detail` says until when. */
  held: boolean;
}

export interface SelfServiceOffer {
  template: string;
  title: string;
  description: string;
  /** A create was sent in the last minute and its Userland is not in the cache yet. */
  requested: boolean;
}

export interface HomeView {
  user: string;
  environments: HomeEnvironment[];
  available: SelfServiceOffer[];
  /** The student's assignments (the user-manager's answer), soonest closing first. */
  assignments: StudentAssignment[];
  /** The user-manager did not answer for assignments: the page says so instead of showing none. */
  assignmentsUnavailable: boolean;
  /** Start, Stop and Create work (the user-manager is configured). */
  canAct: boolean;
  /** The auth service's sign-out page. */
  signOutUrl: string;
  /** Teachers' visits to these environments in the last 30 days, newest first (pages/homeVisits.ts). */
  visits: HomeVisit[];
  /** Visitors waiting for the student's Allow. */
  visitRequests: HomeVisitRequest[];
  /** Exams of their environments: the day before the start, and while they run (route/exam.ts). */
  exams: HomeExam[];
}

export type HomeConfig = Pick<
  ProxyConfig,
  "hostTemplates" | "baseDomain" | "defaultTemplate" | "origins" | "loginUrl" | "visitQuietMs"
>;

function detailOf(state: HomeState, phase: string, message: string, progress: string): string {
  if (state === "starting") {
    const now = message ? `${phase}: ${message}` : phase;
    return progress ? `${now} (${progress})` : now;
  }
  return state === "failed" ? message : "";
}

/** Where `userland`'s student opens it: their own host with per-user origins, else the Template's. */
export function openUrl(userland: Userland, config: HomeConfig, client: ClientInfo): string | undefined {
  const port = /:\d+$/.exec(client.host)?.[0] ?? "";
  const template = userland.spec.templateName;
  const label = config.origins === "perUser" ? userlandLabel(userland) : undefined;
  const host =
    label && config.baseDomain
      ? `${label}.${config.baseDomain}${port}`
      : hostForTemplate(template, config, client.host, port);
  return host === undefined ? undefined : `${client.proto}://${host}/`;
}

const titleOf = (template: Template | undefined, name: string) => template?.spec.displayName ?? name;

/** The proxy's own endpoint that streams a student's home volume as a zip (endpoints/studentEndpoints.ts). */
export const DOWNLOAD_PATH = "/_userland/download";

export function homeView(
  cluster: ClusterView,
  starter: Starter,
  config: HomeConfig,
  client: ClientInfo,
  user: string,
  assignments?: StudentAssignment[],
): HomeView {
  const environments: HomeEnvironment[] = [];
  const held = new Set<string>();
  // Exactly this identity (the index is keyed by spec.user as stored); checked again, so the page
  // can never list another student's Userland whatever the cache hands back.
  for (const userland of cluster.userlandsOf?.(user) ?? []) {
    if (userland.spec.user !== user) continue;
    const state = environmentState(userland);
    if (state === "missing") continue;
    const template = userland.spec.templateName;
    held.add(template);
    const shown = state === "stopped" && starter.recentlyRequested(userland) ? "starting" : state;
    const phase = userland.status?.phase ?? "Pending";
    const message = userland.status?.message ?? "";
    const exam = examOnHome(userland);
    environments.push({
      name: userland.metadata.name ?? "",
      template,
      title: titleOf(cluster.getTemplate(template), template),
      description: cluster.getTemplate(template)?.spec.description ?? "",
      state: shown,
      phase,
      message,
      detail:
        exam?.text ?? detailOf(shown, phase, message, progressText(userland.status?.progress, new Date())),
      held: exam?.held ?? false,
      lastActivity: userland.metadata.annotations?.[UserlandAnnotations.lastActivity],
      openUrl: openUrl(userland, config, client),
      downloadUrl: cluster.getTemplate(template)?.spec.coursework?.home
        ? `${DOWNLOAD_PATH}?template=${encodeURIComponent(template)}`
        : undefined,
    });
  }
  environments.sort((a, b) => a.title.localeCompare(b.title) || a.name.localeCompare(b.name));
  const available = (cluster.templates?.() ?? [])
    .filter((t) => t.spec.selfService === true && !held.has(t.metadata.name ?? ""))
    .map((t): SelfServiceOffer => {
      const template = t.metadata.name ?? "";
      return {
        template,
        title: titleOf(t, template),
        description: t.spec.description ?? "",
        requested: starter.createRequested(user, template),
      };
    })
    .sort((a, b) => a.title.localeCompare(b.title));
  // The auth service's pages sit beside its login page (…/login, …/logout).
  const signOutUrl = new URL("logout", config.loginUrl).href;
  const mine = (cluster.userlandsOf?.(user) ?? []).filter((u) => u.spec.user === user);
  // A visit still open a report interval (at most 30 s) after the quiet period was left open by a
  // replica that stopped: it is over.
  const title = (u: Userland) => titleOf(cluster.getTemplate(u.spec.templateName), u.spec.templateName);
  const visits = homeVisits(mine, title, new Date(), config.visitQuietMs + 30_000);
  const visitRequests = homeVisitRequests(mine, title, new Date());
  const exams = examsOnHome(mine, title, new Date());
  return {
    user,
    environments,
    available,
    assignments: assignments ?? [],
    assignmentsUnavailable: starter.canStart && assignments === undefined,
    canAct: starter.canStart,
    signOutUrl,
    visits,
    visitRequests,
    exams,
  };
}

/** The student's own Userland called `name`, or undefined (no such Userland, or someone else's). */
export function ownUserland(cluster: ClusterView, user: string, name: string): Userland | undefined {
  return cluster
    .userlandsOf?.(user)
    .find((u) => u.metadata.name === name && u.spec.user === user && environmentState(u) !== "missing");
}
