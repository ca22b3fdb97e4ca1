import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { encodeArchiveJson, lossPath, type LossRecord } from './storage/layout';
import type { ArchiveStorage } from './storage/types';

/**
 * Loss: offsets of a partition that left Kafka (retention) before the archive had them. It is
 * the one failure the archiver cannot repair, so it is made loud (error log, metric) and durable
 * (a `_loss/` record in the archive itself, next to the data it is missing from).
 */
export class LossReporter {
  /** Per partition, the highest offset already reported, so each lost offset is reported once per process. */
  private readonly reportedTo = new Map<string, bigint>();

  constructor(
    private readonly storage: ArchiveStorage,
    private readonly logger: Logger,
  ) {}

  async report(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    detectedBy: LossRecord['detectedBy'],
  ): Promise<void> {
    const key = `${topic}\u0000${partition}`;
    const already = this.reportedTo.get(key);
    const start = already !== undefined && already >= from ? already + 1n : from;
    if (to < start) return;
    this.reportedTo.set(key, to);
    const records = to - start + 1n;
    metrics.archiveLoss.set({ topic, partition: String(partition) }, 1);
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
    const record: LossRecord = {
      topic,
      partition,
      from: start.toString(),
      to: to.toString(),
      records: records.toString(),
      detectedAtMs: Date.now(),
      detectedBy,
    };
    try {
      await this.storage.put(lossPath(topic, partition, start, to), encodeArchiveJson(record));
    } catch (err) {
      this.logger.error({ err, topic, partition }, 'could not write the loss record to the archive');
    }
  }
}
