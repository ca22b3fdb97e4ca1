import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { crashPoint } from '../core/crash-points';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { putMarkRows, ringBells, type Mark } from '../pipeline/marks';
import type { GuardWatch } from './guard-watch';
import { BellThrottle, PendingMarks } from './mark-batching';
import type { MarkedRecently } from './marked-recently';

export interface MarkWriterOptions {
  ddb: DynamoDBClient;
  marksTable: string;
  /** Only its guard-row read is needed. */
  guard: Pick<GuardWatch, 'state'>;
  marked: MarkedRecently;
  logger: Logger;
  /** `scanner.markDelayMs`: the longest a handed mark waits before its row is written. */
  delayMs: number;
  /** A shard with this many pending marks is written at once (`producer.batchSize`: about a batch per row). */
  perShardLimit: number;
  /** `scanner.bellIntervalMs`. */
  bellIntervalMs: number;
  now?: () => number;
}

/** What a page gets back for its marks. */
export interface Handed {
  /** Resolves once the marks are durable (or dropped: the table's guard was cancelled); rejects if writing failed. */
  durable: Promise<void>;
  /**
   * Back-pressure: resolves at once unless these marks started a write while the table's previous write was still
   * in flight; then when that one is done (never rejects). A page awaits it before scanning on, so scanning cannot
   * outrun the writes, yet does not wait for its own write (one request less per page in the server's queue).
   */
  wait: Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

interface TableBuffer {
  pending: PendingMarks;
  waiters: Waiter[];
  durable?: Promise<void>;
  timer?: NodeJS.Timeout;
  /** The table's latest write, settled (never rejects), while in flight. */
  writing?: Promise<void>;
}

/**
 * Writes a scanner process's marks: gathered per table over its pages and segments (./mark-batching.ts says why),
 * written as one row per shard when a shard has a producer batch's worth or `delayMs` after the oldest, then the
 * shards' doorbells, throttled per shard. The guard row is read fresh right before every write: after an operator's
 * cancel no new mark row may appear (pending marks are dropped and the table's remembered marks forgotten).
 */
export class MarkWriter {
  private readonly tables = new Map<string, TableBuffer>();
  private readonly bells: BellThrottle;
  private bellTimer?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly o: MarkWriterOptions) {
    this.bells = new BellThrottle(o.bellIntervalMs);
    this.now = o.now ?? Date.now;
  }

  /** Hand over marks of `table` found at `now` (not yet written). */
  hand(table: string, marks: readonly Mark[], now: number = this.now()): Handed {
    let buf = this.tables.get(table);
    if (!buf)
      this.tables.set(table, (buf = { pending: new PendingMarks(this.o.perShardLimit), waiters: [] }));
    const full = buf.pending.add(marks, now);
    if (!buf.durable) {
      buf.durable = new Promise<void>((resolve, reject) => buf.waiters.push({ resolve, reject }));
      // Handled here so a pass that ends early (lease lost) and never awaits it does not crash the process;
      // whoever awaits it still sees the rejection.
      buf.durable.catch(() => undefined);
    }
    const durable = buf.durable;
    if (full || this.o.delayMs <= 0 || this.closed) {
      const previous = buf.writing;
      this.flush(table);
      return { durable, wait: previous ?? Promise.resolve() };
    }
    if (!buf.timer) {
      const wait = Math.max(0, (buf.pending.oldestAtMs ?? now) + this.o.delayMs - this.now());
      // unref: a pending flush must not keep a process alive; a stopping scanner writes its marks in close().
      buf.timer = setTimeout(() => this.flush(table), wait).unref();
    }
    return { durable, wait: Promise.resolve() };
  }

  /** Write whatever is pending, ring every waiting bell, and stop gathering (later marks are written at once). */
  async close(): Promise<void> {
    this.closed = true;
    for (const table of this.tables.keys()) this.flush(table);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    if (this.bellTimer) clearTimeout(this.bellTimer);
    this.bellTimer = undefined;
    await this.ring(this.bells.drain(this.now()));
  }

  private flush(table: string): void {
    const buf = this.tables.get(table);
    if (!buf) return;
    if (buf.timer) clearTimeout(buf.timer);
    buf.timer = undefined;
    const marks = buf.pending.take();
    const waiters = buf.waiters;
    buf.waiters = [];
    buf.durable = undefined;
    const done = this.write(table, marks).then(
      (shards) => {
        waiters.forEach((w) => w.resolve());
        // The marks are durable: their bells may ring (the pages need not wait for that).
        return this.ring(this.bells.request(shards, this.now())).then(() => this.scheduleBells());
      },
      (err: unknown) => {
        this.o.logger.warn({ err, table, marks: marks.length }, 'writing marks failed');
        waiters.forEach((w) => w.reject(err));
      },
    );
    buf.writing = done;
    this.inFlight.add(done);
    void done.finally(() => {
      this.inFlight.delete(done);
      if (buf.writing === done) buf.writing = undefined;
    });
  }

  /** Write the marks; resolves with the shards written to once they are durable. */
  private async write(table: string, marks: readonly Mark[]): Promise<number[]> {
    if (marks.length === 0) return [];
    if ((await this.o.guard.state(table, true)).cancelled) {
      this.o.marked.forgetTable(table);
      this.o.logger.debug(
        { table, skipped: marks.length },
        'guard cancelled by an operator: not marking until confirmed',
      );
      return [];
    }
    const now = this.now();
    const shards = await putMarkRows(this.o.ddb, this.o.marksTable, table, marks, now);
    this.o.marked.add(
      table,
      marks.map((m) => ({ sk: m.address.sk, expiresAtMs: m.expiresAtMs as number })),
      now,
    );
    metrics.expiredFound.inc({ table }, marks.length);
    crashPoint('scanner.after-mark-write');
    return shards;
  }

  /** Ring now; a failed ring is retried when its interval ends (a lost one is caught by `producer.idleSweepMs`). */
  private async ring(shards: number[]): Promise<void> {
    if (shards.length === 0) return;
    try {
      await ringBells(this.o.ddb, this.o.marksTable, shards);
    } catch (err) {
      this.o.logger.warn({ err, shards }, 'ringing doorbells failed; ringing again later');
      if (!this.closed) this.bells.failed(shards);
    }
  }

  /** The trailing rings: a timer for the next waiting bell. */
  private scheduleBells(): void {
    if (this.bellTimer || this.closed) return;
    const at = this.bells.nextDueAt();
    if (at === undefined) return;
    this.bellTimer = setTimeout(
      () => {
        this.bellTimer = undefined;
        const due = this.bells.due(this.now());
        const rung = this.ring(due).finally(() => {
          this.inFlight.delete(rung);
          this.scheduleBells();
        });
        this.inFlight.add(rung);
      },
      Math.max(0, at - this.now()),
    ).unref();
  }
}
