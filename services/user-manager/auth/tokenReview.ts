/**
 * Bearer tokens → Kubernetes identities, by TokenReview (no namespaced form exists). Admins,
 * teachers' tools and other services call with their own Kubernetes identities (a ServiceAccount
 * token, `kubectl create token`, an OIDC token the API server accepts); this service keeps no user
 * list of its own.
 */
import { createHash } from "node:crypto";
import pLimit from "p-limit";
import type { KubeRest } from "../../../lib/kubeRest.ts";
import { HttpError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import { reviewCache, type Caller } from "./caller.ts";

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
  error?: string;
}

export interface AuthenticatorOptions {
  rest: KubeRest;
  ttlMs: number;
  /** Unknown tokens waiting for (or in) a review beyond which more are refused with 429. */
  backlog: number;
  audiences: string[];
  metrics: Metrics;
}

/** TokenReviews asked of the API server at once. */
const REVIEW_CONCURRENCY = 8;

/** Bearer tokens → Kubernetes identities via TokenReview, cached by a hash of the token. */
export class TokenAuthenticator {
  private readonly opts: AuthenticatorOptions;
  // Keyed by a SHA-256 of the token so the cache never holds a usable credential.
  private readonly cache = reviewCache<Promise<Caller | undefined>>();
  private readonly reviews = pLimit(REVIEW_CONCURRENCY);

  constructor(opts: AuthenticatorOptions) {
    this.opts = opts;
  }

  /** The caller, or undefined for a token Kubernetes does not accept. Throws when Kubernetes cannot be asked. */
  authenticate(token: string): Promise<Caller | undefined> {
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = this.cache.get(key);
    if (cached) return cached;
    // The API is reachable from the internet with the console on, and every token never seen
    // before costs the API server a TokenReview: random tokens must not become a way to load it.
    // Known tokens (the cache above) are never refused.
    if (this.reviews.activeCount + this.reviews.pendingCount >= this.opts.backlog) {
      this.opts.metrics.tokenReviews.inc({ result: "refused_busy" });
      return Promise.reject(
        new HttpError(
          429,
          "TooManyRequests",
          "too many unknown bearer tokens are being checked at once; try again in a moment",
        ),
      );
    }
    const pending = this.reviews(() => this.review(token));
    // In-flight requests with the same token share one review; a failed review is not remembered.
    this.cache.set(key, pending, { ttl: Math.max(this.opts.ttlMs, 1_000) });
    pending.then(
      () => {
        const ttl = Math.min(this.opts.ttlMs, (jwtExpiry(token) ?? Infinity) - Date.now());
        if (ttl > 0) this.cache.set(key, pending, { ttl });
        else this.cache.delete(key);
      },
      () => this.cache.delete(key),
    );
    return pending;
  }

  private async review(token: string): Promise<Caller | undefined> {
    const { rest, audiences, metrics } = this.opts;
    let status: TokenReviewStatus | undefined;
    try {
      const body = {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token, ...(audiences.length > 0 ? { audiences } : {}) },
      };
      const review = await rest.create<{ status?: TokenReviewStatus }>(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body,
      );
      status = review.status;
    } catch (error) {
      metrics.tokenReviews.inc({ result: "error" });
      throw error;
    }
    const username = status?.user?.username;
    const audienceOk = audiences.length === 0 || (status?.audiences ?? []).some((a) => audiences.includes(a));
    if (!status?.authenticated || !username || !audienceOk) {
      metrics.tokenReviews.inc({ result: "rejected" });
      return undefined;
    }
    metrics.tokenReviews.inc({ result: "authenticated" });
    const user = status.user ?? {};
    return {
      username,
      groups: user.groups ?? [],
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    };
  }
}

/** The `exp` of a JWT (ServiceAccount and OIDC tokens are JWTs), so a cached token never outlives itself. */
function jwtExpiry(token: string): number | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
