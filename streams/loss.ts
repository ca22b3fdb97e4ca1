import { LossLedger, unacknowledgedStreamLosses } from '../archive/ledgers/loss';
import { encodeArchiveJson, streamLossPath, type StreamLossRecord } from '../archive/storage/layout';
import type { ArchiveStorage } from '../archive/storage/types';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import type { ShardRef } from './lineage';

/** What a reader or the discovery round found lost: the records of a shard after `after` (or all of it) left unread. */
export interface StreamLossReport extends ShardRef {
  table: string;
  after?: string;
  reason: StreamLossRecord['reason'];
}

export interface StreamLossSink {
  /** Makes the loss loud (error log, counter, alert) and durable (a record in the archive's loss ledger). */
  report(loss: StreamLossReport): Promise<void>;
  /** Writes records not written yet, and sets `ttlstream_streams_loss` from the ledger and its acknowledgements. */
  refresh(): Promise<void>;
}

/**
 * Stream losses in the archive beside the archiver's (`_stream-loss/`, read by the same LossLedger): `archive verify`,
 * `audit`, `status` and the loss alert see them, and `archive ack-loss --table` acknowledges them. A record that
 * cannot be written is kept and written again at the next refresh; the alert does not wait for it.
 */
export class ArchiveStreamLosses implements StreamLossSink {
  private readonly ledger: LossLedger;
  private readonly unwritten = new Map<string, StreamLossRecord>();
  /** Tables this process detected a loss of, whose record may not be in the archive yet. */
  private readonly detected = new Set<string>();

  constructor(
    private readonly storage: ArchiveStorage,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.ledger = new LossLedger(storage);
  }

  async report(loss: StreamLossReport): Promise<void> {
    const record: StreamLossRecord = {
      table: loss.table,
      streamArn: loss.arn,
      shardId: loss.shardId,
      after: loss.after ?? null,
      reason: loss.reason,
      detectedAtMs: this.now(),
    };
    const path = streamLossPath(loss.table, loss.label, loss.shardId, record.after);
    metrics.streamsLost.inc({ table: loss.table });
    this.logger.error(
      {
        table: loss.table,
        stream: loss.arn,
        shard: loss.shardId,
        after: record.after,
        reason: loss.reason,
        path,
      },
      'STREAM LOSS: records of a followed stream left it before they were read and published',
    );
    this.unwritten.set(path, record);
    this.detected.add(loss.table);
    await this.refresh();
  }

  async refresh(): Promise<void> {
    for (const [path, record] of this.unwritten) {
      try {
        await this.storage.put(path, encodeArchiveJson(record));
        this.unwritten.delete(path);
      } catch (err) {
        this.logger.error(
          { err, path },
          'could not write the stream loss record to the archive; trying again',
        );
      }
    }
    let pending: Set<string>;
    let tables: Set<string>;
    try {
      const { losses, acks } = await this.ledger.readStreams();
      pending = new Set(unacknowledgedStreamLosses(losses, acks).map((l) => l.table));
      tables = new Set(losses.map((l) => l.table));
    } catch (err) {
      this.logger.warn(
        { err },
        'could not read the stream loss records of the archive; the loss alert keeps its state',
      );
      return;
    }
    for (const t of [...this.unwritten.values()].map((r) => r.table)) pending.add(t);
    for (const t of new Set([...tables, ...this.detected]))
      metrics.streamsLoss.set({ table: t }, pending.has(t) ? 1 : 0);
  }
}
