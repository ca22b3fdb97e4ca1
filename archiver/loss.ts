import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { LossLedger, partitionKey, unacknowledged, type Loss } from '../archive/ledgers/loss';
import { encodeArchiveJson, lossPath, type LossRecord } from '../archive/storage/layout';
import type { ArchiveStorage } from '../archive/storage/types';

/**
 * Loss: offsets of a partition that left Kafka (retention) before the archive had them. It is
 * the one failure the archiver cannot repair, so it is made loud (error log, metric) and durable
 * (a `_loss/` record in the archive itself, next to the data it is missing from).
 *
 * The alert (`ttlstream_archiver_loss`) follows the archive, not this process: `refresh` sets it per partition from
 * the archive's loss records and the operators' acknowledgements (`ttlstream archive ack-loss`, ./loss-ack.ts), so
 * every archiver reports the same, a restart does not clear it, and an acknowledgement does on every replica.
 */
export class LossReporter {
  /** Per partition, the highest offset already reported, so each lost offset is reported once per process. */
  private readonly reportedTo = new Map<string, bigint>();
  /** What this process detected, as losses (its records may not be written yet). */
  private readonly detected = new Map<string, Loss>();
  /** Loss records whose write failed: written again at every refresh until one succeeds. */
  private readonly unwritten = new Map<string, LossRecord>();
  private readonly ledger: LossLedger;
  private readFailing = false;
  /** Refreshes run one after the other, one running and one waiting at most (a report's must see its own loss). */
  private running: Promise<void> | undefined;
  private waiting: Promise<void> | undefined;

  constructor(
    private readonly storage: ArchiveStorage,
    private readonly logger: Logger,
  ) {
    this.ledger = new LossLedger(storage);
  }

  async report(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    detectedBy: LossRecord['detectedBy'],
  ): Promise<void> {
    const key = partitionKey(topic, partition);
    const already = this.reportedTo.get(key);
    const start = already !== undefined && already >= from ? already + 1n : from;
    if (to < start) return;
    this.reportedTo.set(key, to);
    const records = to - start + 1n;
    metrics.archiveLostRecords.inc({ topic }, Number(records));
    this.logger.error(
      {
        topic,
        partition,
        from: start.toString(),
        to: to.toString(),
        records: records.toString(),
        detectedBy,
      },
      'ARCHIVE LOSS: records aged out of Kafka before they were archived',
    );
    const path = lossPath(topic, partition, start, to);
    this.detected.set(path, { topic, partition, from: start, to, records, path });
    this.unwritten.set(path, {
      topic,
      partition,
      from: start.toString(),
      to: to.toString(),
      records: records.toString(),
      detectedAtMs: Date.now(),
      detectedBy,
    });
    await this.refresh();
  }

  /**
   * Write the loss records not written yet, re-read the archive's losses and acknowledgements, and set
   * `ttlstream_archiver_loss` for every partition with a loss: 1 while one is not acknowledged, else 0. A failed read
   * judges by what was last read (and what this process detected), so an outage of the archive does not clear it.
   */
  refresh(): Promise<void> {
    this.waiting ??= (this.running ?? Promise.resolve()).then(() => {
      this.waiting = undefined;
      this.running = this.refreshNow()
        .catch((err: unknown) => this.logger.error({ err }, 'loss alert refresh failed'))
        .finally(() => (this.running = undefined));
      return this.running;
    });
    return this.waiting;
  }

  private async refreshNow(): Promise<void> {
    for (const [path, record] of this.unwritten) {
      try {
        await this.storage.put(path, encodeArchiveJson(record));
        this.unwritten.delete(path);
      } catch (err) {
        this.logger.error({ err, path }, 'could not write the loss record to the archive; trying again');
      }
    }
    let known;
    try {
      known = await this.ledger.read();
      this.readFailing = false;
    } catch (err) {
      if (!this.readFailing)
        this.logger.warn(
          { err },
          'could not read the loss records of the archive; the loss alert keeps its state',
        );
      this.readFailing = true;
      known = this.ledger.current();
    }
    const losses = [...known.losses, ...this.detected.values()];
    const pending = new Set(
      unacknowledged(losses, known.acks).map((l) => partitionKey(l.topic, l.partition)),
    );
    for (const l of losses) {
      const unacked = pending.has(partitionKey(l.topic, l.partition));
      metrics.archiveLoss.set({ topic: l.topic, partition: String(l.partition) }, unacked ? 1 : 0);
    }
  }
}
