/**
 * Ended sessions, written: the user-manager is the only writer of session records
 * (api/sessions.ts), after its own checks, at the time of the request. The record is read back by
 * every component's informer (lib/sessionRecords.ts).
 */
import {
  SessionRecordAnnotations,
  endSessionsPatch,
  newSessionRecord,
  sessionRecordName,
  type EndSessions,
  type SessionRecord,
} from "../../api/sessions.ts";
import { isConflict, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { sessionRecordsPath } from "../../lib/sessionRecords.ts";

/** Tries before two writers racing on one record give up (each try reads the record again). */
const ATTEMPTS = 5;

/**
 * Ends `what` of `user` at `now` (ms) in their record in `namespace`, created on the first mark.
 * Written against the version read: a single session joins a list, and two sign-outs at once must
 * not drop one another's entry.
 */
export function endSessionsOf(
  rest: KubeRest,
  namespace: string,
  user: string,
  what: EndSessions,
  now: () => number,
): Promise<void> {
  return changeSessionRecord(rest, namespace, user, (annotations) =>
    endSessionsPatch(annotations, what, now()),
  );
}

/**
 * Applies the merge patch `change` makes of the record's current annotations (none: no record
 * yet), creating the record if needed; an empty patch writes nothing.
 */
export async function changeSessionRecord(
  rest: KubeRest,
  namespace: string,
  user: string,
  change: (annotations: Record<string, string> | undefined) => Record<string, string | null>,
): Promise<void> {
  const name = sessionRecordName(user);
  for (let attempt = 1; ; attempt++) {
    const current = await rest
      .get<SessionRecord>(sessionRecordsPath(namespace, name))
      .catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        throw error;
      });
    const owner = current?.metadata.annotations?.[SessionRecordAnnotations.user];
    if (current && owner !== user)
      throw new Error(
        `the session record ${name} is ${JSON.stringify(owner)}'s, not ${JSON.stringify(user)}'s`,
      );
    const annotations = change(current?.metadata.annotations);
    if (Object.keys(annotations).length === 0) return;
    try {
      if (!current) {
        const marks = Object.fromEntries(
          Object.entries(annotations).filter((e): e is [string, string] => e[1] !== null),
        );
        await rest.create(sessionRecordsPath(namespace), newSessionRecord(user, marks));
      } else {
        await rest.patch(sessionRecordsPath(namespace, name), {
          metadata: { annotations, resourceVersion: current.metadata.resourceVersion },
        });
      }
      return;
    } catch (error) {
      // 409: created or changed by another writer since the read; read again.
      if (!isConflict(error) || attempt >= ATTEMPTS) throw error;
    }
  }
}
