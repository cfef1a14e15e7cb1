/**
 * Informers that only keep their handlers and list what a test gives them: for the operator's
 * wiring (which informer event queues which key) without an API server, where other changes would
 * queue the same key and hide a missing event.
 */
type Handler = (obj: unknown, old?: unknown) => void;

export interface StandInInformer {
  on(event: string, fn: Handler): void;
  list(): unknown[];
  byIndex(): unknown[];
  emit(event: string, obj: unknown, old?: unknown): void;
}

export function standInInformer(items: unknown[] = []): StandInInformer {
  const handlers = new Map<string, Handler[]>();
  return {
    on(event, fn) {
      handlers.set(event, [...(handlers.get(event) ?? []), fn]);
    },
    list: () => items,
    byIndex: () => [],
    emit(event, obj, old) {
      for (const fn of handlers.get(event) ?? []) fn(obj, old);
    },
  };
}

/** A work queue that records what is added, at once or later. */
export function recordingQueue(): { added: string[]; add(key: string): void; addAfter(key: string): void } {
  const added: string[] = [];
  return { added, add: (key) => added.push(key), addAfter: (key) => added.push(key) };
}
