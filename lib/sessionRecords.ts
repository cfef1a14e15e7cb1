/**
 * Session records, read: an informer on them (api/sessions.ts) in the platform's own namespace, so
 * each check is a map lookup (an ended session per request in the proxy, the auth service's
 * /forward-auth and /whoami and the user-manager's console; a person's groups where the operator
 * and the user-manager decide who teaches) and a mark written by the user-manager reaches every
 * replica within a watch event. Only the user-manager writes records
 * (services/user-manager/sessionRecordWriter.ts).
 */
import {
  SESSION_RECORD_LABEL,
  SessionRecordAnnotations,
  recordGroups,
  sessionEnded,
  sessionRecordName,
  type SessionRecord,
  type SessionRef,
} from "../api/sessions.ts";
import { paths } from "../api/kubePaths.ts";
import { Informer } from "./informer.ts";
import type { KubeRest } from "./kubeRest.ts";
import type { Logger } from "./logger.ts";

/** Where session records live: ConfigMaps in `namespace`, the platform's own. */
export const sessionRecordsPath = (namespace: string, name?: string): string =>
  paths.namespaced("", "v1", "configmaps", namespace, name);

export interface SessionRecords {
  /** Whether the first list is in: until then nothing can be said about any session. */
  synced(): boolean;
  /** Whether `session` of `user` was ended. */
  ended(session: SessionRef & { user: string }): boolean;
  /** The groups `user`'s latest session carried, as recorded at sign-in. */
  groupsOf(user: string): readonly string[];
  /** Calls `handler` with the user whose record was written (after the cache has it). */
  onWritten(handler: (user: string) => void): void;
  /** Resolves once the first list is in. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** An informer of the session records in `namespace` (not started). */
export function sessionRecordsInformer(
  rest: KubeRest,
  namespace: string,
  log: Logger,
): Informer<SessionRecord> {
  return new Informer<SessionRecord>(rest, {
    path: sessionRecordsPath(namespace),
    labelSelector: SESSION_RECORD_LABEL,
    log,
  });
}

/** `user`'s record in an informer of `namespace`'s records. */
export function recordIn(
  records: Informer<SessionRecord>,
  namespace: string,
  user: string,
): SessionRecord | undefined {
  const record = records.get(sessionRecordName(user), namespace);
  // The name is a hash of the user: the record says whose it is, and must say the same.
  return record?.metadata.annotations?.[SessionRecordAnnotations.user] === user ? record : undefined;
}

export function watchSessionRecords(rest: KubeRest, namespace: string, log: Logger): SessionRecords {
  const records = sessionRecordsInformer(rest, namespace, log);
  const recordOf = (user: string) => recordIn(records, namespace, user);
  return {
    synced: () => records.hasSynced,
    ended: (session) => sessionEnded(session, recordOf(session.user)),
    groupsOf: (user) => recordGroups(recordOf(user)),
    onWritten: (handler) => {
      const notify = (r: SessionRecord) => {
        const user = r.metadata.annotations?.[SessionRecordAnnotations.user];
        if (user !== undefined) handler(user);
      };
      records.on("add", notify);
      records.on("update", notify);
    },
    start: () => records.start(),
    stop: () => records.stop(),
  };
}
