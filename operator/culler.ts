/**
 * Idle culling: a Userland whose Template sets spec.idleTimeout is stopped (spec.enabled=false, data
 * kept) when it has been Ready without activity for that long. Activity is the proxy's
 * last-activity annotation; an environment nobody has used yet counts from when it became Ready,
 * and one that is still starting is never culled.
 */
import { parseDuration } from "../api/duration.ts";
import {
  ExamMarks,
  UserlandAnnotations,
  UserlandConditions,
  type Template,
  type Userland,
} from "../api/v1alpha1/index.ts";
import { isConflict, isNotFound } from "../lib/kubeRest.ts";
import { findCondition } from "./conditions.ts";
import type { OperatorContext } from "./context.ts";
import { userlandRef } from "../lib/events.ts";
import { resources } from "./resources.ts";

export interface IdleUserland {
  userland: Userland;
  idleMs: number;
  timeout: string;
}

/** The Ready, enabled Userlands idle for longer than their Template allows. */
export function findIdle(
  userlands: readonly Userland[],
  template: (u: Userland) => Template | undefined,
  now: number,
): IdleUserland[] {
  const idle: IdleUserland[] = [];
  for (const userland of userlands) {
    if (userland.spec.enabled === false || userland.status?.phase !== "Ready") continue;
    // An exam keeps its environments running for its whole window (operator/exams/).
    if (userland.metadata.labels?.[ExamMarks.examLabel] !== undefined) continue;
    const timeout = template(userland)?.spec.idleTimeout;
    const timeoutMs = timeout ? parseDuration(timeout) : undefined;
    if (!timeout || !timeoutMs) continue;
    const ready = findCondition(userland.status.conditions, UserlandConditions.Ready);
    const lastActivity =
      Date.parse(userland.metadata.annotations?.[UserlandAnnotations.lastActivity] ?? "") || 0;
    const readySince = Date.parse(ready?.lastTransitionTime ?? "") || 0;
    const last = Math.max(lastActivity, readySince);
    if (last > 0 && now - last > timeoutMs) idle.push({ userland, idleMs: now - last, timeout });
  }
  return idle;
}

export class Culler {
  private readonly ctx: OperatorContext;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(ctx: OperatorContext, intervalMs: number) {
    this.ctx = ctx;
    this.intervalMs = intervalMs;
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.cullOnce()
        .then(() => undefined)
        .catch((error: unknown) => this.ctx.log.warn({ err: (error as Error).message }, "culling failed"))
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async cullOnce(): Promise<number> {
    const { caches, rest } = this.ctx;
    const idle = findIdle(
      caches.userlands.list(),
      (u) => caches.templates.get(u.spec.templateName, u.metadata.namespace),
      this.ctx.now().getTime(),
    );
    let culled = 0;
    for (const { userland, idleMs, timeout } of idle) {
      const { name = "", namespace = "", resourceVersion } = userland.metadata;
      try {
        // The resourceVersion guard loses to any concurrent change, such as new activity.
        await rest.patch(resources.Userland.path(namespace, name), {
          metadata: { resourceVersion, annotations: { [UserlandAnnotations.stoppedReason]: "IdleTimeout" } },
          spec: { enabled: false },
        });
      } catch (error) {
        if (isConflict(error) || isNotFound(error)) continue;
        throw error;
      }
      culled++;
      this.ctx.metrics.culled.inc();
      this.ctx.events.normal(
        userlandRef(userland),
        "IdleTimeout",
        `Stopped after ${Math.round(idleMs / 60_000)} min without activity (idle timeout ${timeout}); data is kept`,
      );
    }
    return culled;
  }
}
