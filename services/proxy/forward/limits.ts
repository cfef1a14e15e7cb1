/**
 * Per-student caps on what one student may hold open through this replica at once: forwarded
 * HTTP requests and WebSockets. Each holds a client connection and a connection to the
 * environment, so without a cap one student (or a script of theirs) could use up the proxy's file
 * descriptors for everyone. Counted per replica, in memory; a refusal is a 429 (server.ts).
 */
import type { ProxyConfig } from "../config.ts";
import type { RequestKind } from "../requestLog.ts";

export class UserLimits {
  private readonly config: ProxyConfig["limits"];
  private readonly open: Record<RequestKind, Map<string, number>> = {
    http: new Map(),
    websocket: new Map(),
  };

  constructor(config: ProxyConfig["limits"]) {
    this.config = config;
  }

  limit(kind: RequestKind): number {
    return kind === "websocket" ? this.config.websocketsPerUser : this.config.requestsPerUser;
  }

  /** Takes one slot for `user`: the function that gives it back (once), or undefined when all are taken. */
  acquire(kind: RequestKind, user: string): (() => void) | undefined {
    const counts = this.open[kind];
    const current = counts.get(user) ?? 0;
    if (current >= this.limit(kind)) return undefined;
    counts.set(user, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (counts.get(user) ?? 1) - 1;
      // Entries go with their last slot, so the maps hold only students with something open.
      if (left <= 0) counts.delete(user);
      else counts.set(user, left);
    };
  }
}
