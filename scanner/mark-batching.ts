import type { Mark } from '../pipeline/marks';

/**
 * What the scanner's mark writer (./mark-writer.ts) decides, without I/O: which marks go into the next mark rows
 * and when, and when a shard's doorbell rings.
 *
 * Why: on a single-threaded DynamoDB server (dynalite) every put costs about the same whatever it carries, and a
 * scanner page of 500 items spreads its ~250 expired items over every shard, so a row per page and shard carried
 * ~16 marks and each came with a doorbell put: a 200k-item first pass wrote ~6,400 mark rows and as many bells,
 * competing with its own reads and with the producer's deletes. Gathering a table's marks over several pages (and
 * all of this process's segments) into one row per shard, and ringing a shard's bell at most once per interval,
 * makes both a fraction of that. Marks are still durable before anything relies on them: a mark counts as written
 * (MarkedRecently, the pass's end) only once its row is; a mark not yet written when the process dies is found
 * again by the next pass, like one whose page was never scanned.
 */

/** A table's marks waiting to be written, at most one per (item, expiry). */
export class PendingMarks {
  private readonly marks = new Map<string, Mark>();
  private readonly perShard = new Map<number, number>();
  private oldest: number | undefined;

  /** `perShardLimit`: a row should carry about one producer batch, so a shard with that many is written at once. */
  constructor(private readonly perShardLimit: number) {}

  /** Add a page's marks at `now`; true when a shard now holds `perShardLimit` marks (write them now). */
  add(marks: readonly Mark[], now: number): boolean {
    let full = false;
    for (const m of marks) {
      // The same verdict handed twice before it is written (a pass restarted after a lease change): one mark.
      const id = `${m.address.sk}\0${m.expiresAtMs ?? ''}`;
      if (this.marks.has(id)) continue;
      this.marks.set(id, m);
      const n = (this.perShard.get(m.address.shard) ?? 0) + 1;
      this.perShard.set(m.address.shard, n);
      if (n >= this.perShardLimit) full = true;
    }
    if (this.marks.size > 0) this.oldest ??= now;
    return full;
  }

  get size(): number {
    return this.marks.size;
  }

  /** When the oldest pending mark was added (undefined when none waits). */
  get oldestAtMs(): number | undefined {
    return this.oldest;
  }

  /** Everything pending, oldest first; the buffer is empty afterwards. */
  take(): Mark[] {
    const out = [...this.marks.values()];
    this.marks.clear();
    this.perShard.clear();
    this.oldest = undefined;
    return out;
  }
}

/**
 * Doorbells rung at most once per `intervalMs` per shard, always with a trailing ring: a shard that got marks
 * within the interval after its last ring is rung when the interval ends, so no mark waits longer than the interval
 * (plus the producer's next look at the bell) for an idle producer to notice it. A busy producer does not look at
 * the bell at all: it sweeps again after every sweep that did something.
 */
export class BellThrottle {
  private readonly lastRung = new Map<number, number>();
  private readonly waiting = new Set<number>();

  constructor(private readonly intervalMs: number) {}

  /** Marks of `shards` became durable at `now`: the shards to ring now (they count as rung); the rest wait. */
  request(shards: Iterable<number>, now: number): number[] {
    const ringNow: number[] = [];
    for (const shard of shards) {
      const last = this.lastRung.get(shard);
      if (last === undefined || now - last >= this.intervalMs) {
        ringNow.push(shard);
        this.lastRung.set(shard, now);
        this.waiting.delete(shard);
      } else this.waiting.add(shard);
    }
    return ringNow;
  }

  /** When the next waiting ring is due; undefined when none waits. */
  nextDueAt(): number | undefined {
    let due: number | undefined;
    for (const shard of this.waiting) {
      const at = (this.lastRung.get(shard) ?? 0) + this.intervalMs;
      if (due === undefined || at < due) due = at;
    }
    return due;
  }

  /** The waiting shards whose interval has passed at `now` (they count as rung now). */
  due(now: number): number[] {
    const out: number[] = [];
    for (const shard of this.waiting) {
      if (now - (this.lastRung.get(shard) ?? 0) >= this.intervalMs) out.push(shard);
    }
    for (const shard of out) {
      this.waiting.delete(shard);
      this.lastRung.set(shard, now);
    }
    return out;
  }

  /** A ring of `shards` failed: ring them again when their interval ends. */
  failed(shards: readonly number[]): void {
    for (const shard of shards) this.waiting.add(shard);
  }

  /** Every waiting shard, regardless of the interval (shutdown). */
  drain(now: number): number[] {
    const out = [...this.waiting];
    this.waiting.clear();
    for (const shard of out) this.lastRung.set(shard, now);
    return out;
  }
}
