import {
  LOSS_ACK_DIR,
  LOSS_DIR,
  LossAckSchema,
  LossRecordSchema,
  STREAM_LOSS_ACK_DIR,
  STREAM_LOSS_DIR,
  StreamLossAckSchema,
  StreamLossRecordSchema,
  parseArchiveJson,
  type LossAck,
  type LossRecord,
  type StreamLossAck,
  type StreamLossRecord,
} from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';

/** A loss of one partition: offsets [from..to] that left Kafka unarchived; `path` is its `_loss/` record. */
export interface Loss {
  topic: string;
  partition: number;
  from: bigint;
  to: bigint;
  records: bigint;
  path: string;
  /** When it was detected (ms); undefined for a loss this process detected and has not read back. */
  detectedAtMs?: number;
}

export interface LossAckEntry extends LossAck {
  path: string;
}

/** A loss of a followed stream's shard (the streams role); `path` is its `_stream-loss/` record. */
export interface StreamLoss extends StreamLossRecord {
  path: string;
}

export interface StreamLossAckEntry extends StreamLossAck {
  path: string;
}

/**
 * The stream losses no acknowledgement covers (pure): a table's loss is acknowledged when it was detected at or before
 * the table's latest acknowledgement.
 */
export function unacknowledgedStreamLosses(
  losses: readonly StreamLoss[],
  acks: readonly StreamLossAck[],
): StreamLoss[] {
  const through = new Map<string, number>();
  for (const a of acks) through.set(a.table, Math.max(through.get(a.table) ?? -1, a.throughMs));
  return losses.filter((l) => l.detectedAtMs > (through.get(l.table) ?? -1));
}

/** `<topic>\u0000<partition>`: one key per partition, whatever the topic's characters. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Per partition, the highest offset an acknowledgement covers. */
export function ackedThrough(acks: readonly LossAck[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const a of acks) {
    const key = partitionKey(a.topic, a.partition);
    const through = BigInt(a.through);
    if ((out.get(key) ?? -1n) < through) out.set(key, through);
  }
  return out;
}

/**
 * The losses no acknowledgement covers (pure): a loss is acknowledged when it ends at or before its partition's
 * highest acknowledged offset. Offsets only grow, so a loss detected after an acknowledgement ends beyond it and is
 * not hidden by it; a loss detected again (a restarted archiver reporting the same range) is still covered.
 */
export function unacknowledged(losses: readonly Loss[], acks: readonly LossAck[]): Loss[] {
  const through = ackedThrough(acks);
  return losses.filter((l) => l.to > (through.get(partitionKey(l.topic, l.partition)) ?? -1n));
}

function lossOf(record: LossRecord, path: string): Loss {
  return {
    topic: record.topic,
    partition: record.partition,
    from: BigInt(record.from),
    to: BigInt(record.to),
    records: BigInt(record.records),
    path,
    detectedAtMs: record.detectedAtMs,
  };
}

/**
 * The archive's loss records (`_loss/`) and acknowledgements (`_loss-ack/`), re-read on each `read()`: one listing of
 * each prefix, and a GET only for a record not read before (records are written once; a loss detected again rewrites
 * its record with the same range). A record that does not parse is left out here; `archive verify` reports it.
 */
export class LossLedger {
  private losses = new Map<string, Loss>();
  private acks = new Map<string, LossAckEntry>();
  private streamLosses = new Map<string, StreamLoss>();
  private streamAcks = new Map<string, StreamLossAckEntry>();

  constructor(private readonly storage: ArchiveStorage) {}

  /** The stream losses (`_stream-loss/`) and their acknowledgements (`_stream-loss-ack/`), as read() reads its own. */
  async readStreams(): Promise<{ losses: StreamLoss[]; acks: StreamLossAckEntry[] }> {
    this.streamLosses = await this.refreshed(STREAM_LOSS_DIR, this.streamLosses, (body, path) => ({
      ...parseArchiveJson(StreamLossRecordSchema, body, path),
      path,
    }));
    this.streamAcks = await this.refreshed(STREAM_LOSS_ACK_DIR, this.streamAcks, (body, path) => ({
      ...parseArchiveJson(StreamLossAckSchema, body, path),
      path,
    }));
    return { losses: [...this.streamLosses.values()], acks: [...this.streamAcks.values()] };
  }

  async read(): Promise<{ losses: Loss[]; acks: LossAckEntry[] }> {
    this.losses = await this.refreshed(LOSS_DIR, this.losses, (body, path) =>
      lossOf(parseArchiveJson(LossRecordSchema, body, path), path),
    );
    this.acks = await this.refreshed(LOSS_ACK_DIR, this.acks, (body, path) => ({
      ...parseArchiveJson(LossAckSchema, body, path),
      path,
    }));
    return this.current();
  }

  /** What the last successful read found (nothing before the first). */
  current(): { losses: Loss[]; acks: LossAckEntry[] } {
    return { losses: [...this.losses.values()], acks: [...this.acks.values()] };
  }

  private async refreshed<T>(
    dir: string,
    known: ReadonlyMap<string, T>,
    parse: (body: Buffer, path: string) => T,
  ): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    for await (const path of this.storage.list(`${dir}/`)) {
      const cached = known.get(path);
      if (cached !== undefined) {
        out.set(path, cached);
        continue;
      }
      const body = await this.storage.get(path);
      if (!body) continue;
      try {
        out.set(path, parse(body, path));
      } catch {
        // Reported by `archive verify`; one bad record does not hide the others.
      }
    }
    return out;
  }
}
