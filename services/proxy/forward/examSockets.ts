/**
 * A WebSocket into an exam's environment closes at the exam's end (docs/decisions/0013-exams.md):
 * from then on the environment serves nobody until its work is collected (route/exam.ts), and an
 * editor's or a terminal's socket opened before the end must not outlast it. Its reconnect is a
 * new request, refused like any other after the end.
 */
import type { Socket } from "node:net";

/** setTimeout's longest wait; an exam further away than ~24 days is checked again at its next socket. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

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
