import type { Logger } from '../core/logger';
import {
  deletionRate,
  formatPct,
  judgeScan,
  overFraction,
  type GuardLimits,
  type GuardRecord,
  type GuardStore,
} from '../pipeline/guard';

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
 * Index mode: what re-arms a confirmed episode, the nearest thing to a complete scan pass. Every shard this process
 * holds read from its lowest expiry (a rewind, or a worker's first query) since `since`, with the expired items that
 * read found: the table's due backlog in those shards, the confirmed one included while it is not yet deleted.
 */
interface IndexPass {
  since: number;
  found: Map<number, number>;
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
  /** Index mode: the current pass of each table (re-arming). */
  private readonly indexPasses = new Map<string, IndexPass>();

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
    else if (verdict.action === 'rearm') await this.rearm(table);
  }

  /**
   * Index mode. A query of the expiry index reads (almost) only expired items, so the fraction of a page says
   * nothing; what the guard fears, a large share of the table expiring at once, is judged per window (`windowMs`,
   * a rewind) twice: the census (the table's expired backlog counted before anything is marked, `indexCensus`)
   * against the table's items, and the expired items this process's shards found in the window (which re-reads
   * that backlog at the rewinds, plus what expires meanwhile) against the items they stand for (`share`: items ×
   * held shards / shards). Windows only pause: a window is not a pass (its finds may hold no rewind of some
   * shards, so none of the confirmed backlog still waiting to be deleted), and re-arming on one let the next census
   * count that backlog and pause the table again before the producers got to it. A confirmed episode re-arms on a
   * complete pass instead (`indexShardRead`).
   */
  indexCensusDue(table: string, windowMs: number): boolean {
    return this.indexWindow(table, windowMs).census === undefined;
  }

  /** The table's expired backlog, counted before anything is marked in this window: judged now. */
  async indexCensus(table: string, expired: number, items: number, windowMs: number): Promise<GuardRecord> {
    const w = this.indexWindow(table, windowMs);
    w.census = { expired, items };
    return this.judgeIndex(table, w);
  }

  /** A page of a shard's query found `expired` items: judged with the window's count before they are marked. */
  async indexPage(table: string, expired: number, share: number, windowMs: number): Promise<GuardRecord> {
    const w = this.indexWindow(table, windowMs);
    w.found += expired;
    w.share = share;
    return this.judgeIndex(table, w);
  }

  private indexWindow(table: string, windowMs: number): IndexWindow {
    const now = this.now();
    let w = this.indexWindows.get(table);
    if (!w || now - w.since >= windowMs) {
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

  /**
   * Index mode: a held shard was read from its lowest expiry, a read that began at `startedAt` and found `expired`
   * expired items. Once every shard this process holds has been so read since the table's pass began, the pass is
   * complete: its finds against the share of the table, as a scan pass, and a confirmed episode re-arms when they
   * look normal and deletions ran within the rate limit. Pausing stays with the census and the pages, which judged the
   * same finds already.
   */
  async indexShardRead(
    table: string,
    shard: number,
    expired: number,
    startedAt: number,
    heldShards: readonly number[],
    share: number,
  ): Promise<void> {
    let pass = this.indexPasses.get(table);
    if (!pass) {
      pass = { since: startedAt, found: new Map() };
      this.indexPasses.set(table, pass);
    }
    if (startedAt < pass.since) return;
    pass.found.set(shard, expired);
    if (heldShards.length === 0 || !heldShards.every((s) => pass.found.has(s))) return;
    const found = heldShards.reduce((sum, s) => sum + (pass.found.get(s) ?? 0), 0);
    this.indexPasses.set(table, { since: this.now(), found: new Map() });
    const record = await this.state(table, true);
    if (record.state !== 'CONFIRMED') return;
    const rate = deletionRate(record.deletes, Math.floor(this.now() / 60_000));
    const sample = { scanned: Math.max(share, found), expired: found, complete: true };
    if (judgeScan(record.state, sample, this.limits, rate).action === 'rearm') await this.rearm(table);
  }

  private async rearm(table: string): Promise<void> {
    const next = await this.store.rearm(table);
    if (!next) return;
    this.watch(table).guard = { record: next, at: this.now() };
    this.logger.info({ table }, 'mass-deletion guard re-armed: the confirmed episode is over');
  }

  private async pause(table: string, reason: string): Promise<GuardRecord> {
    const w = this.watch(table);
    const next = (await this.store.pause(table, reason)) ?? (await this.store.get(table));
    w.guard = { record: next, at: this.now() };
    if (next.state === 'PAUSED') {
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
