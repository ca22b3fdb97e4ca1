import { metrics, tableLabel } from '../core/metrics';

/**
 * The marks backlog of the shards this process holds (the `ttlstream_producer_marks_backlog` gauge): per shard,
 * the marks per table its latest complete sweep found, i.e. what was waiting as that sweep began. A shard whose
 * lease ends stops counting. Pure bookkeeping apart from `publish`, which sets the gauge.
 */
export class MarkBacklog {
  private readonly byShard = new Map<number, ReadonlyMap<string, number>>();
  private readonly published = new Set<string>();

  /** A sweep of `shard` finished, having found these marks per table. */
  sweepDone(shard: number, counts: ReadonlyMap<string, number>): void {
    this.byShard.set(shard, new Map(counts));
    this.publish();
  }

  /** The shard is no longer held (lease ended or lost). */
  drop(shard: number): void {
    if (this.byShard.delete(shard)) this.publish();
  }

  /** Marks per `table` label over the shards held (tables without their own label add up under `other`). */
  totals(): Map<string, number> {
    const out = new Map<string, number>();
    for (const counts of this.byShard.values()) {
      for (const [table, n] of counts) out.set(tableLabel(table), (out.get(tableLabel(table)) ?? 0) + n);
    }
    return out;
  }

  private publish(): void {
    const totals = this.totals();
    // A table once reported and now without marks reads 0, not its last value.
    for (const label of this.published) if (!totals.has(label)) metrics.marksBacklog.set({ table: label }, 0);
    for (const [label, n] of totals) {
      metrics.marksBacklog.set({ table: label }, n);
      this.published.add(label);
    }
  }
}

/** One per process, as the gauge is. */
export const markBacklog = new MarkBacklog();

/** Adds a batch's marks to a sweep's per-table counts. */
export function countMarks(
  counts: Map<string, number>,
  marks: ReadonlyArray<{ address: { table: string } }>,
): void {
  for (const m of marks) counts.set(m.address.table, (counts.get(m.address.table) ?? 0) + 1);
}
