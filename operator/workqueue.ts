/**
 * A rate-limited work queue with client-go's semantics (sample-controller's workqueue):
 * - a key waits in the queue at most once however often it is added (de-duplication);
 * - a key being processed is never handed to a second worker; if it is added meanwhile it is
 *   queued again when the first worker calls done();
 * - failures are retried with per-key exponential back-off (5 ms doubling to 1000 s) combined
 *   with an overall token bucket (50 per second, burst 300), whichever is slower.
 */

export interface QueueMetrics {
  depth(n: number): void;
  added(): void;
  retried(): void;
  /** Seconds a key waited in the queue before a worker took it. */
  waited(seconds: number): void;
}

/** The longest delay a Node timer keeps (2^31-1 ms, 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const noMetrics: QueueMetrics = { depth: () => {}, added: () => {}, retried: () => {}, waited: () => {} };

export interface RateLimiter {
  /** How long to wait before `key` may be retried; counts a failure. */
  when(key: string): number;
  forget(key: string): void;
  failures(key: string): number;
}

export class ExponentialFailureRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;
  constructor(baseMs = 5, maxMs = 1_000_000) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }
  when(key: string): number {
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }
  forget(key: string): void {
    this.counts.delete(key);
  }
  failures(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}

/** Token bucket: `qps` tokens a second, at most `burst` saved; returns the wait for the next token. */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  constructor(qps = 50, burst = 300, now = () => performance.now()) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
    this.now = now;
    this.last = now();
  }
  when(_key: string): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }
  forget(_key: string): void {}
  failures(_key: string): number {
    return 0;
  }
}

/** The slowest of several limiters (client-go's MaxOfRateLimiter). */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }
  when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }
  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }
  failures(key: string): number {
    return Math.max(...this.limiters.map((l) => l.failures(key)));
  }
}

export const defaultControllerRateLimiter = (): RateLimiter =>
  new MaxOfRateLimiter(new ExponentialFailureRateLimiter(5, 1_000_000), new BucketRateLimiter(50, 300));

export class WorkQueue {
  private readonly queue: string[] = [];
  private head = 0;
  /** Keys waiting to be processed, with the time they were added (for queue latency). */
  private readonly dirty = new Map<string, number>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private shuttingDown = false;
  private readonly limiter: RateLimiter;
  private readonly metrics: QueueMetrics;

  constructor(limiter: RateLimiter = defaultControllerRateLimiter(), metrics: QueueMetrics = noMetrics) {
    this.limiter = limiter;
    this.metrics = metrics;
  }

  get length(): number {
    return this.queue.length - this.head;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.metrics.added();
    this.dirty.set(key, performance.now());
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds `key` after `ms`; an earlier pending time for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    // A longer timer is set to 1 ms by Node: the key comes back at the longest wait instead, and
    // its sync asks for the rest.
    const timer = setTimeout(
      () => {
        this.delayed.delete(key);
        this.add(key);
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  addRateLimited(key: string): void {
    this.metrics.retried();
    this.addAfter(key, this.limiter.when(key));
  }

  /** Stops retrying `key` with back-off (call after a successful sync). */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiter.failures(key);
  }

  /** The next key to process, or undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    // Shutting down finishes the keys in progress, not the whole queue: a long queue must not hold
    // up a SIGTERM (and with it the Lease) past the pod's grace period.
    if (this.shuttingDown) return Promise.resolve(undefined);
    if (this.length > 0) return Promise.resolve(this.take());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) this.push(key);
    if (this.processing.size === 0) for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  /** Stops handing out keys; resolves when every key being processed is done. */
  async shutDownWithDrain(): Promise<void> {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const resolve of this.waiters.splice(0)) resolve(undefined);
    if (this.processing.size > 0) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(this.takeKey(key));
      return;
    }
    this.queue.push(key);
    this.metrics.depth(this.length);
  }

  private take(): string {
    const key = this.queue[this.head] as string;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.metrics.depth(this.length);
    return this.takeKey(key);
  }

  private takeKey(key: string): string {
    const addedAt = this.dirty.get(key);
    if (addedAt !== undefined) this.metrics.waited((performance.now() - addedAt) / 1000);
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }
}
