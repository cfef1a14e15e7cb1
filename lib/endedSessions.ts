/**
 * Ended sessions for a service that verifies session cookies but does not route to Userlands (the
 * auth service's /forward-auth and /whoami): an informer on the Userlands of the served namespaces,
 * indexed by user, so each check is local (a map lookup, as in the proxy) and a mark written
 * anywhere reaches every replica within a watch event. The marks' format and the check itself are
 * api/sessions.ts's; the proxy applies the same check to the Userland informer it routes with.
 */
import { GROUP, USERLANDS, VERSION, type Userland } from "../api/v1alpha1/index.ts";
import { sessionEnded, type SessionRef } from "../api/sessions.ts";
import { Informer } from "./informer.ts";
import type { KubeRest } from "./kubeRest.ts";
import type { Logger } from "./logger.ts";
import type { ServedNamespaces } from "./namespaces.ts";

/** The index the proxy and this file file Userlands under: their spec.user. */
export const USER_INDEX = "user";

export interface EndedSessions {
  /** Whether the first list is in: until then nothing can be said about any session. */
  synced(): boolean;
  /** Whether `session` of `user` was ended on any of the user's Userlands in the served namespaces. */
  ended(session: SessionRef & { user: string }): boolean;
  /** Resolves once the first list is in. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function watchEndedSessions(rest: KubeRest, served: ServedNamespaces, log: Logger): EndedSessions {
  const userlands = new Informer<Userland>(rest, {
    path: served.collections(GROUP, VERSION, USERLANDS),
    log,
  });
  userlands.addIndex(USER_INDEX, (u) => [u.spec.user]);
  return {
    synced: () => userlands.hasSynced,
    // Any namespace's mark counts (unlike the proxy's routing, which serves one namespace per
    // Template name): refusing more is the safe side of a sign-out.
    ended: (session) => sessionEnded(session, userlands.byIndex(USER_INDEX, session.user)),
    start: () => userlands.start(),
    stop: () => userlands.stop(),
  };
}
