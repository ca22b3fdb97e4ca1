import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import {
  deletionRate,
  formatPct,
  judgeScan,
  overFraction,
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

/** Index mode: what a table showed within one guard window. */
interface IndexWindow {
  since: number;
  /** The table's expired backlog counted before anything was marked in this window, and its item count. */
  census?: { expired: number; items: number };
  /** Expired items this process's shards found in this window, and the items those shards stand for. */
  found: number;
  share: number;
}

/**
 * The scanner's side of the mass-deletion guard. Counts what this process's segments of a table have seen in the
 * current pass and judges it after every page; a "complete" pass is one in which every segment this process holds
 * for the table finished (with several scanner processes each judges its own share, a sample of the table).
 */
export class GuardWatch {
  private readonly tables = new Map<string, TableWatch>();
  /** Index mode: the current guard window of each table. */
  private readonly indexWindows = new Map<string, IndexWindow>();

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
   * nothing; what the guard fears, a large share of the table expiring at once, is judged per window (`windowMs`,
   * a rewind) twice: the census (the table's expired backlog counted before anything is marked, `indexCensus`)
   * against the table's items, and the expired items this process's shards found in the window (which re-reads
   * that backlog at the rewinds, plus what expires meanwhile) against the items they stand for (`share`: items ×
   * held shards / shards). A window that ends under the limit counts as a complete pass (re-arming a confirmed
   * episode, as a scan pass would).
   */
  async indexCensusDue(table: string, windowMs: number): Promise<boolean> {
    return (await this.indexWindow(table, windowMs)).census === undefined;
  }

  /** The table's expired backlog, counted before anything is marked in this window: judged now. */
  async indexCensus(table: string, expired: number, items: number, windowMs: number): Promise<GuardRecord> {
    const w = await this.indexWindow(table, windowMs);
    w.census = { expired, items };
    return this.judgeIndex(table, w);
  }

  /** A page of a shard's query found `expired` items: judged with the window's count before they are marked. */
  async indexPage(table: string, expired: number, share: number, windowMs: number): Promise<GuardRecord> {
    const w = await this.indexWindow(table, windowMs);
    w.found += expired;
    w.share = share;
    return this.judgeIndex(table, w);
  }

  private async indexWindow(table: string, windowMs: number): Promise<IndexWindow> {
    const now = this.now();
    let w = this.indexWindows.get(table);
    if (!w || now - w.since >= windowMs) {
      if (w) await this.judgeComplete(table, worstOf(w, this.limits));
      w = { since: now, found: 0, share: 0 };
      this.indexWindows.set(table, w);
    }
    return w;
  }

  private async judgeIndex(table: string, w: IndexWindow): Promise<GuardRecord> {
    const { scanned, expired, items } = worstOf(w, this.limits);
    const record = await this.state(table);
    const verdict = judgeScan(record.state, { scanned, expired, complete: false }, this.limits);
    if (verdict.action !== 'pause') return record;
    // ItemCount is DynamoDB's estimate, updated about every six hours (0 for a new table, and always on dynalite):
    // an unknown size is judged as if what was found were all of the table, so the guard errs towards pausing.
    const of = items > 0 ? `about ${items} items (ItemCount)` : 'a table size not known yet (ItemCount 0)';
    return this.pause(
      table,
      `${expired} expired items due in the expiry index, of ${of} ` +
        `(${formatPct(expired / scanned)} > ${formatPct(this.limits.maxExpiredFraction)})`,
    );
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

interface IndexSample {
  scanned: number;
  expired: number;
  /** The items the sample is judged against (0: not known). */
  items: number;
}

/**
 * Of a window's two samples (the census against the table, the shards' finds against their share), the one over
 * the limits if either is, else the census (the finds when nothing was counted).
 */
function worstOf(w: IndexWindow, limits: GuardLimits): IndexSample {
  const found = { scanned: Math.max(w.share, w.found), expired: w.found, items: w.share };
  if (!w.census) return found;
  const { expired, items } = w.census;
  const census = { scanned: Math.max(items, expired), expired, items };
  return overFraction(found, limits) && !overFraction(census, limits) ? found : census;
}
