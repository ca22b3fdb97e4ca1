import type { ScannerSettings } from '../core/config';
import { backoffCeilingMs } from '../core/retry';

/** Items of a pass's marks that are probed between passes (one small BatchGetItem per probe). */
export const PROBE_SAMPLE = 32;

/** Keeps a uniform random sample of at most `size` of the values offered (reservoir sampling). */
export class Reservoir<T> {
  readonly items: T[] = [];
  private seen = 0;

  constructor(
    private readonly size: number,
    private readonly random: () => number = Math.random,
  ) {}

  offer(value: T): void {
    this.seen++;
    if (this.items.length < this.size) this.items.push(value);
    else {
      const i = Math.floor(this.random() * this.seen);
      if (i < this.size) this.items[i] = value;
    }
  }

  /** How many values were offered. */
  get population(): number {
    return this.seen;
  }
}

export type ProbeVerdict =
  | { pass: true; reason: 'drained' | 'nearly-drained' | 'no-progress' | 'max-pause' }
  | { pass: false; waitMs: number };

/**
 * When to scan a segment again after a pass that left marks for the producers (pure; the I/O is in
 * ./segment-worker.ts). Between passes the scanner probes a random sample of the items the pass marked, or found
 * marked (PROBE_SAMPLE keys, one BatchGetItem), and scans again when the sample is gone, or when at the rate the
 * sample has been draining it will be gone within `lead` (about two passes and one interval), or after
 * `backlogMaxPauseMs` in any case.
 *
 * Why: a pass reads the whole segment and costs the DynamoDB server what the producers need for the deletions; with
 * a fixed interval between passes, a backlog cost passes in proportion to table size × backlog duration (measured:
 * ~15 items scanned per deletion on 200k items). Probing costs a few dozen reads per probe, and a backlog costs
 * O(1) passes whatever its length.
 *
 * Why the lag of what expires meanwhile does not grow: the producers take marks roughly oldest first (a shard's mark
 * rows sort by the time they were written, and a sweep goes from the oldest to the newest), so an item that
 * expires during a backlog is deleted after the backlog's marks however early its mark is written, as long as it is
 * written before the producers reach the end of the backlog — which the `lead` is for. Marks of other tables are
 * not affected (their segments pause on their own). A sample item that no producer deletes (a table paused by the
 * guard, producers down, an item no producer can publish) shows as no progress: then the segment is scanned again
 * every `backlogPassIntervalMs`, as the old doubling pause did while passes found a backlog.
 */
export class BacklogWatch {
  private readonly start: number;
  private probes = 0;
  /** The first probe that found part of the sample gone: the drain rate is measured from there (not the ramp-up). */
  private firstDrop?: { t: number; present: number };
  private lastProgress: { t: number; present: number };

  constructor(
    private readonly config: Pick<
      ScannerSettings,
      'passIntervalMs' | 'backlogPassIntervalMs' | 'backlogMaxPauseMs'
    >,
    /** When the pass ended (ms). */
    passEndedAtMs: number,
    /** How long the pass took: the scanner should start the next one at least twice that before the drain ends. */
    private readonly passDurationMs: number,
    sampleSize: number,
  ) {
    this.start = passEndedAtMs;
    this.lastProgress = { t: passEndedAtMs, present: sampleSize };
  }

  private get interval(): number {
    return Math.max(100, this.config.passIntervalMs);
  }

  private get ceiling(): number {
    return Math.max(this.interval, this.config.backlogPassIntervalMs);
  }

  /** How long before the drain ends the next pass should start. */
  get leadMs(): number {
    return 2 * this.passDurationMs + this.interval;
  }

  /** The wait before the first probe. */
  firstWait(): number {
    return this.interval;
  }

  /** A probe at `t` found `present` items of the sample still waiting: scan now, or probe again after `waitMs`. */
  observe(t: number, present: number): ProbeVerdict {
    this.probes++;
    if (present <= 0) return { pass: true, reason: 'drained' };
    if (present < this.lastProgress.present) {
      this.lastProgress = { t, present };
      this.firstDrop ??= { t, present };
    }
    const elapsed = t - this.start;
    const maxPause = Math.max(this.interval, this.config.backlogMaxPauseMs);
    if (elapsed >= maxPause) return { pass: true, reason: 'max-pause' };
    // Sample items per ms, once two probes have seen the sample shrink.
    const drop = this.firstDrop;
    const rate = drop && t > drop.t && present < drop.present ? (drop.present - present) / (t - drop.t) : 0;
    // No sample item gone for a while (a stall, or the items left are ones no producer deletes): scan again as
    // often as the old backlog pause did; at a known slow rate, allow three sample items' worth of time.
    const patience = Math.max(this.ceiling, rate > 0 ? 3 / rate : 0);
    if (t - this.lastProgress.t >= patience) return { pass: true, reason: 'no-progress' };
    let wait: number;
    if (rate > 0) {
      const drainMs = present / rate;
      if (drainMs <= this.leadMs) return { pass: true, reason: 'nearly-drained' };
      wait = (drainMs - this.leadMs) / 2;
    } else {
      wait = backoffCeilingMs(this.probes, { initialDelayMs: this.interval, maxDelayMs: this.ceiling });
    }
    wait = Math.min(Math.max(wait, this.interval), this.ceiling, maxPause - elapsed);
    return { pass: false, waitMs: Math.max(1, wait) };
  }
}
