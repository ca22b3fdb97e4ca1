import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import type { LossReporter } from '../loss';
import type { AdminClient } from './admin';
import type { PartitionSlots } from './slots';
import { slotKey, type GroupState, type Slot } from './state';

/** The monitor's slice of the archiver's options (archiver/options.ts). */
export interface MonitorOptions {
  /** `archive.lagAlertMs`: the oldest unarchived record older than this is alerted. */
  lagAlertMs: number;
}

/** The 24-hour window: per owned partition, records behind, age of the oldest unarchived record, at-risk and loss. */
export class Monitor {
  private running = false;
  /** Per partition (and per `risk` partition), when its alert was last logged: once a minute at most. */
  private readonly alertedAt = new Map<string, number>();

  constructor(
    private readonly opts: MonitorOptions,
    private readonly log: Logger,
    private readonly state: GroupState,
    private readonly admin: AdminClient,
    private readonly slots: PartitionSlots,
    private readonly loss: LossReporter,
  ) {
    // Published so alerting rules compare the age with this archiver's own threshold, not a copy of it.
    metrics.lagAlertSeconds.set(opts.lagAlertMs / 1000);
  }

  async run(): Promise<void> {
    if (this.running || this.state.stopped || !this.admin.started) return;
    this.running = true;
    try {
      const byTopic = new Map<string, Slot[]>();
      for (const slot of this.slots.values()) {
        if (!slot.worker || slot.retired) continue;
        const list = byTopic.get(slot.topic) ?? [];
        list.push(slot);
        byTopic.set(slot.topic, list);
      }
      const now = Date.now();
      for (const [topic, slots] of byTopic) {
        const offsets = await this.admin.with((a) => a.fetchTopicOffsets(topic));
        for (const slot of slots) {
          const worker = slot.worker;
          const wm = offsets.find((o) => o.partition === slot.partition);
          if (!worker || !wm) continue;
          const low = BigInt(wm.low);
          const high = BigInt(wm.high);
          const labels = { topic, partition: String(slot.partition) };
          if (worker.archived >= high) worker.caughtUpAtMs = now;
          const behind = high > worker.archived ? high - worker.archived : 0n;
          metrics.recordsBehind.set(labels, Number(behind));
          const oldest = worker.oldestPendingTimestampMs;
          // Unfetched records are younger than fetched ones; when none is held here the age is
          // bounded by the time since the partition was last fully archived (an upper bound).
          const ageMs = oldest !== null ? now - oldest : behind > 0n ? now - worker.caughtUpAtMs : 0;
          metrics.oldestUnarchivedSeconds.set(labels, Math.max(0, ageMs) / 1000);
          if (ageMs > this.opts.lagAlertMs) this.alertLag(topic, slot.partition, ageMs, behind);
          // Offsets this process never fetched and Kafka no longer has are lost; fetched ones
          // are still here (buffered or being written) but exist nowhere else any more.
          if (worker.next < low)
            await this.loss.report(topic, slot.partition, worker.next, low - 1n, 'monitor');
          else if (worker.archived < low) this.alertAtRisk(topic, slot.partition, worker.archived, low);
        }
      }
    } catch (err) {
      this.log.warn({ err }, 'archive monitor could not read watermarks');
    } finally {
      this.running = false;
    }
  }

  private alertAtRisk(topic: string, partition: number, archived: bigint, low: bigint): void {
    const key = `risk\u0000${slotKey(topic, partition)}`;
    if (Date.now() - (this.alertedAt.get(key) ?? 0) < 60_000) return;
    this.alertedAt.set(key, Date.now());
    this.log.error(
      { topic, partition, archived: archived.toString(), low: low.toString() },
      'ARCHIVE AT RISK: records held only by this process have aged out of Kafka; a crash now would lose them',
    );
  }

  private alertLag(topic: string, partition: number, ageMs: number, behind: bigint): void {
    const key = slotKey(topic, partition);
    const last = this.alertedAt.get(key) ?? 0;
    if (Date.now() - last < 60_000) return;
    this.alertedAt.set(key, Date.now());
    this.log.error(
      {
        topic,
        partition,
        oldestUnarchivedMs: ageMs,
        recordsBehind: behind.toString(),
        lagAlertMs: this.opts.lagAlertMs,
      },
      'ARCHIVE LAG: the oldest unarchived record is older than archive.lagAlertMs',
    );
  }
}
