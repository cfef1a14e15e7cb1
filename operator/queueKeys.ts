/**
 * The work queue's keys: "<code>/<namespace>/<name>", one code per kind the operator syncs. The one
 * place that spells a key; the controller's table of sync handlers (controller.ts) is keyed by the
 * same kinds, so a kind without a handler does not compile and a key of no kind is refused.
 */
export const KIND_CODES = {
  Template: "T",
  Userland: "U",
  Assignment: "A",
  Submission: "S",
  Archive: "R",
  ClassArchive: "C",
  Exam: "E",
} as const;

export type QueueKind = keyof typeof KIND_CODES;

const KIND_OF_CODE = new Map<string, QueueKind>(
  Object.entries(KIND_CODES).map(([kind, code]) => [code, kind as QueueKind]),
);

export const queueKey = (kind: QueueKind, namespace: string, name: string): string =>
  `${KIND_CODES[kind]}/${namespace}/${name}`;

/** A key's kind, namespace and name; undefined for a key no kind makes. */
export function parseQueueKey(key: string): { kind: QueueKind; namespace: string; name: string } | undefined {
  const [code = "", namespace, name, ...rest] = key.split("/");
  const kind = KIND_OF_CODE.get(code);
  if (!kind || namespace === undefined || !name || rest.length > 0) return undefined;
  return { kind, namespace, name };
}
