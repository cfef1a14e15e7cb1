/**
 * A request forwarded to the environment: its answer, or the page for a failure. Just after the
 * environment turned Ready, a refused connection is its Service not routing yet, not a crash, so it
 * is tried again a few times (forward/readyRetry.ts) before the student sees the starting page.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../../../lib/logger.ts";
import { progressText } from "../../../lib/startProgress.ts";
import type { ProxyConfig } from "../config.ts";
import { startingPage, upstreamErrorPage } from "../pages/environmentPages.ts";
import { sendPage } from "../pages/send.ts";
import type { RequestRecord } from "../requestLog.ts";
import type { Route } from "../route/routes.ts";
import type { Forwarder } from "./forwarder.ts";
import { justReady, mayRetry, READY_RETRY_DELAYS_MS, WAITING_TO_ANSWER } from "./readyRetry.ts";
import { sessionCacheTag, sessionRequestValidators } from "./sharedCache.ts";

export interface HttpForwardDeps {
  forwarder: Forwarder;
  config: Pick<ProxyConfig, "readyGraceMs" | "origins">;
  log: Logger;
}

export function forwardHttp(
  { forwarder, config, log }: HttpForwardDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: Extract<Route, { kind: "forward" }>,
  record: RequestRecord,
): void {
  // Read before the first attempt: forwarding takes the framing headers off.
  const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"]) > 0;
  const justStarted = justReady(route.readySince, config.readyGraceMs);
  // A shared origin: what the browser keeps of this answer is this session's only (forward/sharedCache.ts).
  const cacheTag = config.origins === "shared" ? sessionCacheTag(route.session) : undefined;
  if (cacheTag !== undefined) sessionRequestValidators(req.headers, cacheTag);
  const answer = { serviceWorkers: route.serviceWorkers, cacheTag };
  let attempt = 0;
  const send = (): void => {
    // The student gave up while a retry waited.
    if (res.destroyed || (req.socket as Socket | null)?.destroyed) return;
    forwarder.web(req, res, route.target, record, answer, (kind, error) => {
      // Not req.destroyed: a request whose body was fully read is destroyed already.
      const socket = req.socket as Socket | null;
      if (res.destroyed || res.writableEnded || !socket || socket.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const code = (error as { code?: string }).code;
      const retryable = justStarted && mayRetry(error, req, hasBody);
      const delay = READY_RETRY_DELAYS_MS[attempt];
      if (retryable && delay !== undefined) {
        attempt++;
        log.info(
          { userland: record.userland, err: error.message, code, attempt, retryInMs: delay },
          "environment turned Ready moments ago but refused the connection; trying again",
        );
        setTimeout(send, delay).unref();
        return;
      }
      log.warn(
        { userland: record.userland, err: error.message, code, attempts: attempt + 1 },
        "upstream failed",
      );
      if (retryable) {
        // Still refused just after Ready: the Service is not routing yet, not a crash.
        record.outcome = "starting";
        sendPage(
          req,
          res,
          startingPage(route.env, "Ready", WAITING_TO_ANSWER, {
            progress: progressText(route.progress, new Date()),
          }),
        );
        return;
      }
      sendPage(req, res, upstreamErrorPage(kind === "timeout" ? 504 : 502, route.env, req.url ?? "/"));
    });
  };
  send();
}
