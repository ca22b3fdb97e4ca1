import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import {
  deletionRate,
  judgeScan,
  type GuardLimits,
  type GuardRecord,
  type GuardStore,
} from '../producer/guard';

interface TableWatch {
  scanned: number;
  expired: number;
  /** Segments of this table that finished a pass since the last complete judgment. */
  done: Set<number>;
  guard?: { record: GuardRecord; at: number };
}

/**
 * The scanner's side of the mass-deletion guard. Counts what this process's segments of a table have seen in the
 * current pass and judges it after every page; a "complete" pass is one in which every segment this process holds
 * for the table finished (with several scanner processes each judges its own share, a sample of the table).
 */
export class GuardWatch {
  private readonly tables = new Map<string, TableWatch>();
  /** Index mode: expired items this process's shards found since `since`. */
  private readonly indexWindows = new Map<string, { expired: number; since: number }>();

  constructor(
    private readonly store: GuardStore,
    private readonly limits: GuardLimits,
    private readonly logger: Logger,
    private readonly refreshMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  private watch(table: string): TableWatch {
    let w = this.tables.get(table);
    if (!w) {
      w = { scanned: 0, expired: 0, done: new Set() };
      this.tables.set(table, w);
    }
    return w;
  }

  /** The guard row, re-read at most every refreshMs (or now, with `fresh`). */
  async state(table: string, fresh = false): Promise<GuardRecord> {
    const w = this.watch(table);
    if (fresh || !w.guard || this.now() - w.guard.at >= this.refreshMs) {
      const record = await this.store.get(table);
      w.guard = { record, at: this.now() };
      metrics.guardPaused.set({ table }, record.state === 'PAUSED' ? 1 : 0);
    }
    return w.guard.record;
  }

  /** Add a page's counts and judge the running pass (before its marks are written). */
  async page(table: string, scanned: number, expired: number): Promise<GuardRecord> {
    const w = this.watch(table);
    w.scanned += scanned;
    w.expired += expired;
    const record = await this.state(table);
    const verdict = judgeScan(
      record.state,
      { scanned: w.scanned, expired: w.expired, complete: false },
      this.limits,
    );
    if (verdict.action === 'pause') return this.pause(table, verdict.reason);
    return record;
  }

  /** A segment finished a pass; when every held segment of the table has, judge the whole and start over. */
  async segmentDone(table: string, segment: number, heldSegments: readonly number[]): Promise<void> {
    const w = this.watch(table);
    w.done.add(segment);
    if (!heldSegments.every((s) => w.done.has(s))) return;
    const sample = { scanned: w.scanned, expired: w.expired, complete: true };
    w.scanned = 0;
    w.expired = 0;
    w.done.clear();
    // Fresh, not cached: re-arming must see the producers' latest deletion counts.
    const record = await this.store.get(table);
    w.guard = { record, at: this.now() };
    const rate = deletionRate(record.deletes, Math.floor(this.now() / 60_000));
    const verdict = judgeScan(record.state, sample, this.limits, rate);
    if (verdict.action === 'pause') await this.pause(table, verdict.reason);
    else if (verdict.action === 'rearm') {
      const next = await this.store.rearm(table);
      if (next) {
        w.guard = { record: next, at: this.now() };
        this.logger.info({ table }, 'mass-deletion guard re-armed: the confirmed episode is over');
      }
    }
  }

  /**
   * Index mode. A query of the expiry index reads (almost) only expired items, so the fraction of a page says
   * nothing; what the guard fears, a large share of the table expiring at once, is judged instead as the expired
   * items this process's shards found within `windowMs` against the items those shards stand for
   * (`tableShare`: the table's ItemCount × held shards / shards). A window that ends under the limit counts as a
   * complete pass (re-arming a confirmed episode, as a scan pass would).
   */
  async indexPage(
    table: string,
    expired: number,
    tableShare: number,
    windowMs: number,
  ): Promise<GuardRecord> {
    const now = this.now();
    let c = this.indexWindows.get(table);
    if (!c || now - c.since >= windowMs) {
      if (c) await this.judgeComplete(table, { scanned: tableShare, expired: c.expired });
      c = { expired: 0, since: now };
      this.indexWindows.set(table, c);
    }
    c.expired += expired;
    const record = await this.state(table);
    const verdict = judgeScan(
      record.state,
      { scanned: Math.max(tableShare, c.expired), expired: c.expired, complete: false },
      this.limits,
    );
    if (verdict.action === 'pause') return this.pause(table, verdict.reason);
    return record;
  }

  private async judgeComplete(table: string, counts: { scanned: number; expired: number }): Promise<void> {
    const w = this.watch(table);
    const record = await this.store.get(table);
    w.guard = { record, at: this.now() };
    const rate = deletionRate(record.deletes, Math.floor(this.now() / 60_000));
    const verdict = judgeScan(record.state, { ...counts, complete: true }, this.limits, rate);
    if (verdict.action === 'pause') await this.pause(table, verdict.reason);
    else if (verdict.action === 'rearm') {
      const next = await this.store.rearm(table);
      if (next) {
        w.guard = { record: next, at: this.now() };
        this.logger.info({ table }, 'mass-deletion guard re-armed: the confirmed episode is over');
      }
    }
  }

  private async pause(table: string, reason: string): Promise<GuardRecord> {
    const w = this.watch(table);
    const next = (await this.store.pause(table, reason)) ?? (await this.store.get(table));
    w.guard = { record: next, at: this.now() };
    if (next.state === 'PAUSED') {
      metrics.guardPaused.set({ table }, 1);
      this.logger.error(
        { table, reason },
        'mass-deletion guard: table paused; deletions wait for POST /tables/:table/guard/confirm (or cancel)',
      );
    }
    return next;
  }
}
