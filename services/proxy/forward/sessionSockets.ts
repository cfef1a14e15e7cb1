/**
 * Open WebSockets by the session that opened them, so a session ended while its sockets are open
 * (sign-out, sign out everywhere, a teacher: api/sessions.ts) loses them when this replica learns
 * of the mark (a session record's watch event), not only its next request. An editor reconnects, and its
 * new handshake is refused like any request of an ended session.
 */
import type { Socket } from "node:net";
import type { SessionRef } from "../../../api/sessions.ts";
import type { ClusterView } from "../route/userlandIndex.ts";

export class SessionSockets {
  private readonly byUser = new Map<string, Map<Socket, SessionRef>>();

  /** Files `socket` under its session until it closes. */
  add(socket: Socket, session: SessionRef & { user: string }): void {
    let sockets = this.byUser.get(session.user);
    if (!sockets) this.byUser.set(session.user, (sockets = new Map<Socket, SessionRef>()));
    sockets.set(socket, session);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.byUser.get(session.user) === sockets) this.byUser.delete(session.user);
    });
  }

  /** Closes `user`'s sockets whose session is now ended; how many. */
  closeEnded(user: string, cluster: Pick<ClusterView, "sessionEnded">): number {
    const sockets = this.byUser.get(user);
    if (!sockets || !cluster.sessionEnded) return 0;
    let closed = 0;
    for (const [socket, session] of sockets)
      if (cluster.sessionEnded({ ...session, user })) {
        socket.destroy();
        closed++;
      }
    return closed;
  }
}
