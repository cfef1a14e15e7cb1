/**
 * The session user's own environment of a Template (or the one a visit names): where to forward,
 * or the page to show while it is not ready, stopped, failed, missing or held by an exam.
 */
import { UserlandAnnotations, type Userland } from "../../../api/v1alpha1/index.ts";
import { progressText, startWords } from "../../../lib/startProgress.ts";
import type { ClientInfo } from "../forward/headers.ts";
import { justReady, readySince, WAITING_TO_ANSWER } from "../forward/readyRetry.ts";
import {
  failedPage,
  missingPage,
  startingPage,
  stoppedPage,
  upstreamErrorPage,
  type EnvironmentInfo,
} from "../pages/environmentPages.ts";
import type { RequestRecord } from "../requestLog.ts";
import { environmentInfo, environmentState } from "./environmentState.ts";
import {
  examEndOf,
  examRestartWords,
  heldPage,
  notIsolatedPage,
  ownerRefusal,
  signOutUrlFor,
} from "./exam.ts";
import { page, type Route, type RouterDeps, type Signed } from "./routes.ts";
import { userlandKey } from "./userlandIndex.ts";

/** The auth service's sign-out page, coming back to `path` on this host (a new sign-in). */
export function signOutUrl(deps: RouterDeps, client: ClientInfo, path: string): string {
  return signOutUrlFor(deps.config.loginUrl, `${client.proto}://${client.host}${path}`);
}

/** The session user's environment for the Template: where to forward, or the page to show. */
export function resolveTarget(
  deps: RouterDeps,
  signed: Signed,
  path: string,
  returnPath: string,
  record: RequestRecord,
  serviceWorkers: boolean,
  named?: Userland,
): Route {
  const { cluster, resolver } = deps;
  const userland = named ?? cluster.findUserland(signed.session.user, signed.template);
  const env = environmentInfo(cluster, signed.template, signed.session.user);
  if (userland) record.userland = userlandKey(userland);
  // An exam's rules (route/exam.ts): a visitor's were applied before (visit).
  const exam =
    userland &&
    (heldPage(userland) ??
      notIsolatedPage(userland, cluster.examIsolated?.bind(cluster)) ??
      (named
        ? undefined
        : ownerRefusal(userland, signed.session, signOutUrl(deps, signed.client, returnPath))));
  if (exam) return page("exam_refused", exam);
  const notReady = pageFor(deps, userland, env, returnPath, signed.session.user);
  if (notReady || !userland) return notReady ?? page("no_environment", missingPage(env));
  const { namespace = "", name = "" } = userland.metadata;
  const service = userland.status?.service;
  const target = service && resolver.resolve(namespace, service.name, service.port);
  if (!target) {
    // Just after Ready, the address may not be known yet (an upstream overrides file is re-read
    // once a second): the start's last step, not an outage. The cluster's DNS resolver always
    // gives an address; its lookups are retried with the connection (forward/readyRetry.ts).
    if (justReady(readySince(userland), deps.config.readyGraceMs))
      return page(
        "starting",
        startingPage(env, "Ready", WAITING_TO_ANSWER, {
          progress: progressText(userland.status?.progress, new Date()),
        }),
      );
    return page("unresolved", upstreamErrorPage(502, env, returnPath));
  }
  return {
    kind: "forward",
    outcome: "proxied",
    ...signed,
    target,
    path,
    userland: { namespace, name },
    env,
    serviceWorkers,
    readySince: readySince(userland),
    progress: userland.status?.progress,
    ...examEndOf(userland),
  };
}

/** The page (or start) for a Userland that is not ready, or undefined when it is. */
export function pageFor(
  deps: RouterDeps,
  userland: Userland | undefined,
  env: EnvironmentInfo,
  returnPath: string,
  user: string,
): Route | undefined {
  const { config, starter } = deps;
  const state = environmentState(userland);
  if (!userland || state === "missing") return page("no_environment", missingPage(env));
  if (state === "ready") return undefined;
  if (state === "failed") return page("failed", failedPage(env, startWords(userland.status)));
  if (state === "stopped") {
    const starting = startingPage(env, "Starting", "Start requested");
    if (starter.recentlyRequested(userland)) return page("starting", starting);
    const stopped = stoppedPage(env, {
      canStart: starter.canStart,
      returnPath,
      reason: userland.metadata.annotations?.[UserlandAnnotations.stoppedReason],
    });
    if (config.startOnAccess && starter.canStart)
      return { kind: "start", outcome: "starting", userland, user, starting, stopped };
    return page("stopped", stopped);
  }
  const words = startWords(userland.status);
  return page(
    "starting",
    startingPage(env, userland.status?.phase ?? "Pending", words.message, {
      progress: progressText(userland.status?.progress, new Date()),
      stalled: words.stalled,
      detail: words.detail,
      exam: examRestartWords(userland),
    }),
  );
}
