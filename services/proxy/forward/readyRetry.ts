/**
 * The moment after an environment turns Ready. The operator calls it Ready once the Service's
 * EndpointSlice routes to the pod, but each node's kube-proxy programs that route a moment later,
 * so a first connection may still be refused. Within PROXY_READY_GRACE of Ready, a connection that
 * failed before any answer is tried again a few times (about 5 s in all), and if it still fails the
 * student keeps the starting page (which polls and comes back) instead of "not answering".
 */
import type { IncomingMessage } from "node:http";
import { UserlandConditions, type Userland } from "../../../api/v1alpha1/index.ts";

/** Waits before each further attempt: four more attempts within 5 s. */
export const READY_RETRY_DELAYS_MS: readonly number[] = [500, 1000, 1500, 2000];

/** What the starting page says while a just-Ready environment cannot be reached yet. */
export const WAITING_TO_ANSWER = "Waiting for your environment to answer";

/**
 * The connection was never made: nothing reached the environment. A new Service's DNS name may
 * also lag its Ready a moment (ENOTFOUND, EAI_AGAIN).
 */
const NOT_CONNECTED = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
/** Connected, then closed before any answer: the request may have reached the environment. */
const CLOSED_BEFORE_ANSWER = new Set(["ECONNRESET", "UND_ERR_SOCKET", "EPIPE"]);
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);

/** When the Userland last turned Ready (ms since the epoch), if it is Ready. */
export function readySince(userland: Userland): number | undefined {
  const ready = userland.status?.conditions?.find((c) => c.type === UserlandConditions.Ready);
  if (ready?.status !== "True") return undefined;
  const ms = Date.parse(ready.lastTransitionTime);
  return Number.isFinite(ms) ? ms : undefined;
}

export function justReady(since: number | undefined, graceMs: number, now = Date.now()): boolean {
  // lastTransitionTime has whole seconds: a second more covers the rounding.
  return since !== undefined && graceMs > 0 && now - since < graceMs + 1000;
}

/**
 * May the request be sent again after `error`? Only requests without a body (it has been read
 * once); a request that may have reached the environment only if sending it twice does no harm.
 */
export function mayRetry(error: unknown, req: IncomingMessage, hasBody: boolean): boolean {
  if (hasBody) return false;
  const code = (error as { code?: string } | undefined)?.code ?? "";
  if (NOT_CONNECTED.has(code)) return true;
  return CLOSED_BEFORE_ANSWER.has(code) && IDEMPOTENT.has(req.method ?? "GET");
}
