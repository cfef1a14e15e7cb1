/**
 * Marks that versions before session records wrote on Userlands (issue 41 item 4), moved into the
 * records at start-up: a revocation made before an upgrade still counts after it, and no longer
 * goes with a deleted Userland. Safe to run on every replica and every start: the record only
 * gains marks (legacyMarksPatch), and a Userland's annotations are removed after its record has
 * them.
 */
import { SessionRecordAnnotations, legacyMarksPatch } from "../../api/sessions.ts";
import { userlandsPath } from "../../api/v1alpha1/index.ts";
import type { KubeRest } from "../../lib/kubeRest.ts";
import { changeSessionRecord } from "./sessionRecordWriter.ts";
import type { UserlandStore } from "./store.ts";

const LEGACY_KEYS = [SessionRecordAnnotations.sessionsValidAfter, SessionRecordAnnotations.endedSessions];

/** Moves every served Userland's marks into its user's record in `namespace`; how many Userlands had some. */
export async function moveLegacySessionMarks(
  store: UserlandStore,
  rest: KubeRest,
  namespace: string,
  now: () => number,
): Promise<number> {
  let moved = 0;
  for (const userland of await store.list()) {
    const { name, namespace: where, annotations } = userland.metadata;
    if (!name || !where || !LEGACY_KEYS.some((key) => annotations?.[key] !== undefined)) continue;
    await changeSessionRecord(rest, namespace, userland.spec.user, (current) =>
      legacyMarksPatch(current, annotations, now()),
    );
    await rest.patch(userlandsPath(where, name), {
      metadata: { annotations: Object.fromEntries(LEGACY_KEYS.map((key) => [key, null])) },
    });
    moved++;
  }
  return moved;
}
