/**
 * How far behind its stream each table's reading is: per shard read here, the creation time of the oldest record not
 * yet published (undefined while the shard is caught up). A table's lag is its worst shard's. Pure state, set by the
 * shard readers; streams/index.ts turns it into `ttlstream_streams_lag_seconds` once a second, so the gauge grows
 * while a reader is stuck (a read failing, Kafka down) even though nothing happens.
 */
export class LagBoard {
  private readonly shards = new Map<string, { table: string; oldestUnreadMs: number | undefined }>();

  /** The reader saw records; the first of them (created at `firstCreatedMs`) is not published yet. */
  behind(unit: string, table: string, firstCreatedMs: number): void {
    const s = this.shards.get(unit);
    if (s?.oldestUnreadMs !== undefined && s.oldestUnreadMs <= firstCreatedMs) return;
    this.shards.set(unit, { table, oldestUnreadMs: firstCreatedMs });
  }

  /** Everything read so far is published, and the shard had nothing more (or was read to its end). */
  caughtUp(unit: string, table: string): void {
    this.shards.set(unit, { table, oldestUnreadMs: undefined });
  }

  /**
   * A read failed while the shard was caught up: records may have arrived since `sinceMs` (the last read that found
   * nothing), so the lag counts from then.
   */
  unsure(unit: string, table: string, sinceMs: number): void {
    const s = this.shards.get(unit);
    if (s?.oldestUnreadMs !== undefined) return;
    this.shards.set(unit, { table, oldestUnreadMs: sinceMs });
  }

  /** The shard is no longer read here (its lease ended): another reader reports it. */
  drop(unit: string): void {
    this.shards.delete(unit);
  }

  /** Per table, the age in seconds of its oldest unread record among the shards read here; 0 when caught up. */
  lagSeconds(now: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const { table, oldestUnreadMs } of this.shards.values()) {
      const lag = oldestUnreadMs === undefined ? 0 : Math.max(0, (now - oldestUnreadMs) / 1000);
      out.set(table, Math.max(out.get(table) ?? 0, lag));
    }
    return out;
  }
}
