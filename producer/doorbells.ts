import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { backoffCeilingMs } from '../core/retry';
import { readBells } from '../pipeline/marks';

/** Between two looks at an idle shard's doorbell: from `pollMs`, doubling, up to about a second. */
export const IDLE_POLL_CAP_MS = 1000;

/** What a shard waiting on its doorbell asks for (shard-worker.ts waitForWork). */
export interface BellWait {
  shard: number;
  /** The token the shard's last sweep started from: any other means it rang since. */
  token: string;
  /** Look at the bell at once (after a sweep that acted), rather than after the first wait. */
  checkFirst: boolean;
  /** Give up at this time (`producer.idleSweepMs` after the sweep): the shard is swept anyway. */
  deadline: number;
  signal: AbortSignal;
}

interface Waiter extends BellWait {
  /** When this shard's own back-off wants its next look. */
  nextAt: number;
  /** The exponent of the wait after its next look (pollMs × 2^step, capped). */
  step: number;
  /** The last token read for it. */
  read?: string;
  resolve: (token: string | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * The doorbells of every shard this producer waits on, read in one consistent BatchGetItem per look instead of a
 * GetItem per shard: an idle producer holding 16 shards read 16 bells a second, now it reads one batch. Each
 * waiting shard keeps its own back-off (`pollMs`, doubling up to a second): a look happens when the earliest
 * waiter wants one, every waiter's bell is in it, and each waits at most its own interval for the next.
 */
export class Doorbells {
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private looking = false;

  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly marksTable: string,
    private readonly pollMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Resolves with the bell's token once it differs from `wait.token`, or at the deadline with the last token read
   * (undefined if none was), or undefined when the signal aborts. Rejects when the bells cannot be read.
   */
  wait(wait: BellWait): Promise<string | undefined> {
    if (wait.signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        ...wait,
        // As a shard alone: waits of pollMs, 2 × pollMs, … up to a second, with a look after each.
        nextAt: wait.checkFirst ? this.now() : this.now() + this.pollMs,
        step: wait.checkFirst ? 0 : 1,
        resolve,
        reject,
      };
      const onAbort = (): void => this.settle(w, undefined);
      wait.signal.addEventListener('abort', onAbort, { once: true });
      w.resolve = (token) => {
        wait.signal.removeEventListener('abort', onAbort);
        resolve(token);
      };
      w.reject = (err) => {
        wait.signal.removeEventListener('abort', onAbort);
        reject(err);
      };
      this.waiters.add(w);
      this.schedule();
    });
  }

  /** The wait after a look: pollMs × 2^step, at most about a second. */
  private interval(step: number): number {
    return backoffCeilingMs(step, {
      initialDelayMs: this.pollMs,
      maxDelayMs: Math.max(this.pollMs, IDLE_POLL_CAP_MS),
    });
  }

  private settle(w: Waiter, token: string | undefined): void {
    if (!this.waiters.delete(w)) return;
    w.resolve(token);
    this.schedule();
  }

  /** The next look, when the earliest waiter (or deadline) wants it. */
  private schedule(): void {
    if (this.looking) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiters.size === 0) return;
    let at = Infinity;
    for (const w of this.waiters) at = Math.min(at, w.nextAt, w.deadline);
    this.timer = setTimeout(() => void this.look(), Math.max(0, at - this.now()));
  }

  private async look(): Promise<void> {
    this.timer = undefined;
    this.looking = true;
    const waiting = [...this.waiters];
    try {
      const due = waiting.filter((w) => w.nextAt <= this.now());
      if (due.length > 0) {
        const tokens = await readBells(this.ddb, this.marksTable, [...new Set(waiting.map((w) => w.shard))]);
        for (const w of waiting) {
          const token = tokens.get(w.shard) ?? '';
          w.read = token;
          if (token !== w.token) this.settle(w, token);
        }
        // Every waiter was looked at: each waits its own interval from this look (a due one's next, longer
        // interval; the others their current one), so the waiters fall into step and an idle producer makes one
        // look per second, not one per shard.
        const now = this.now();
        for (const w of waiting) {
          const isDue = due.includes(w);
          w.nextAt = now + this.interval(isDue ? w.step : Math.max(0, w.step - 1));
          if (isDue) w.step += 1;
        }
      }
      for (const w of waiting) if (this.now() >= w.deadline) this.settle(w, w.read);
    } catch (err) {
      // Every waiter's shard worker fails its wait and retries its sweep after a back-off, as a failed read did.
      for (const w of waiting) {
        if (this.waiters.delete(w)) w.reject(err);
      }
    } finally {
      this.looking = false;
      this.schedule();
    }
  }

  /** Stop looking (every waiter is settled with undefined): the producer is stopping. */
  close(): void {
    for (const w of [...this.waiters]) this.settle(w, undefined);
    clearTimeout(this.timer);
  }
}
