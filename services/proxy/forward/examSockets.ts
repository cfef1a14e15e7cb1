/**
 * A WebSocket into an exam's environment closes at the exam's end (docs/decisions/0013-exams.md):
 * from then on the environment serves nobody until its work is collected (route/exam.ts), and an
 * editor's or a terminal's socket opened before the end must not outlast it. Its reconnect is a
 * new request, refused like any other after the end.
 */
import type { Socket } from "node:net";

/** setTimeout's longest wait; an exam further away than ~24 days is checked again at its next socket. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The open WebSockets into each exam's environments, by examKey: when the exam's NetworkPolicy
 * goes (issue 41 item 8), they are closed with it, and a reconnect is refused until it is back.
 */
export class ExamSockets {
  private readonly byExam = new Map<string, Set<Socket>>();

  add(socket: Socket, exam: string): void {
    let sockets = this.byExam.get(exam);
    if (!sockets) this.byExam.set(exam, (sockets = new Set()));
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.byExam.get(exam) === sockets) this.byExam.delete(exam);
    });
  }

  /** Destroys every open WebSocket of the exam; how many. */
  close(exam: string): number {
    const sockets = [...(this.byExam.get(exam) ?? [])];
    for (const socket of sockets) socket.destroy();
    return sockets.length;
  }
}

/** Destroys `socket` at `endMs` (epoch ms), unless it closes first. */
export function closeAtExamEnd(socket: Socket, endMs: number, now = Date.now()): void {
  const wait = endMs - now;
  if (wait <= 0) {
    socket.destroy();
    return;
  }
  if (wait > LONGEST_TIMER_MS) return;
  const timer = setTimeout(() => socket.destroy(), wait);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
}
