import { setTimeout as sleepTimer } from 'node:timers/promises';
import { ValidationError } from '../core/errors';

export interface TokenBucketOptions {
  /** The ceiling, in tokens (items) per second. */
  ratePerSec: number;
  /** Tokens that may be spent at once after an idle period; defaults to one second's worth. */
  burst?: number;
  /** Floor of the adaptive rate, as a fraction of the ceiling. */
  minFraction?: number;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  sleepTimer(ms, undefined, signal ? { signal } : undefined);

/**
 * A token bucket that allows debt: a taker takes what it needs at once and then waits until the bucket is back
 * at zero. Concurrent takers queue up naturally (each sees the debt of the previous ones), and a request larger
 * than the burst (a Scan page of 500 items under a 100 items/s limit) is paced instead of refused.
 *
 * The rate adapts (AIMD): each throttling error from the server halves it, each success adds 5% of the ceiling
 * back, so a scanner sharing a table with production traffic backs off quickly and recovers gently.
 */
export class TokenBucket {
  readonly ceiling: number;
  private current: number;
  private readonly burst: number;
  private readonly floor: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: TokenBucketOptions) {
    if (!(options.ratePerSec > 0)) throw new ValidationError('ratePerSec must be positive');
    this.ceiling = options.ratePerSec;
    this.current = options.ratePerSec;
    this.burst = options.burst ?? options.ratePerSec;
    this.floor = options.ratePerSec * (options.minFraction ?? 1 / 64);
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.tokens = this.burst;
    this.last = this.now();
  }

  /** The effective rate now (items/s). */
  get rate(): number {
    return this.current;
  }

  private refill(): void {
    const t = this.now();
    const elapsed = Math.max(0, t - this.last) / 1000;
    this.last = t;
    this.tokens = Math.min(this.burst, this.tokens + elapsed * this.current);
  }

  /** Take `n` tokens; resolves when the bucket has paid the debt off (rejects if `signal` aborts). */
  async take(n: number, signal?: AbortSignal): Promise<void> {
    this.refill();
    this.tokens -= n;
    if (this.tokens < 0) await this.sleep(Math.ceil((-this.tokens / this.current) * 1000), signal);
  }

  /** Give back tokens taken but not used (a page shorter than its Limit). */
  refund(n: number): void {
    this.refill();
    this.tokens = Math.min(this.burst, this.tokens + n);
  }

  throttled(): void {
    this.refill();
    this.current = Math.max(this.floor, this.current / 2);
  }

  succeeded(): void {
    if (this.current >= this.ceiling) return;
    this.refill();
    this.current = Math.min(this.ceiling, this.current + this.ceiling / 20);
  }
}
