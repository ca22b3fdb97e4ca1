import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import type { PartitionWorker } from '../partition';
import type { Recovery } from './recovery';
import { slotKey, type Slot } from './state';

/** The member's assigned partitions of the current generation: assignment, rebalancing, the roll timer. */
export class PartitionSlots {
  private readonly slots = new Map<string, Slot>();

  constructor(
    private readonly log: Logger,
    private readonly recovery: Recovery,
  ) {}

  get(topic: string, partition: number): Slot | undefined {
    return this.slots.get(slotKey(topic, partition));
  }

  values(): IterableIterator<Slot> {
    return this.slots.values();
  }

  workers(): PartitionWorker[] {
    return [...this.slots.values()].map((s) => s.worker).filter((w): w is PartitionWorker => w !== null);
  }

  /** After a graceful stop of the consumer: the next consumer starts from an empty table. */
  retireAll(): void {
    for (const s of this.slots.values()) s.retired = true;
    this.slots.clear();
  }

  rollDue(): void {
    const now = Date.now();
    for (const slot of this.slots.values()) if (!slot.retired) slot.worker?.rollIfDue(now);
  }

  onRebalancing(): void {
    for (const slot of this.slots.values()) {
      slot.retired = true;
      slot.ready.then(
        (w) => w?.cancel(),
        () => undefined,
      );
    }
    this.log.info('group rebalancing: rolls in progress stop at their next step');
  }

  /**
   * A new generation of the group: kafkajs resumes every assigned partition from its committed
   * offset, so every partition is recovered afresh. Workers of partitions we keep finish their
   * queued rolls first (recovery waits for them); workers of revoked partitions stop at once.
   */
  onAssignment(assignment: Record<string, number[]>): void {
    const assigned = new Set<string>();
    for (const [topic, partitions] of Object.entries(assignment))
      for (const p of partitions) assigned.add(slotKey(topic, p));
    const previous = new Map(this.slots);
    for (const [key, slot] of previous) {
      slot.retired = true;
      if (!assigned.has(key)) {
        slot.ready.then(
          (w) => w?.cancel(),
          () => undefined,
        );
        this.slots.delete(key);
        // Another member reports this partition now; a lineage mismatch left at 1 here would never clear.
        const labels = { topic: slot.topic, partition: String(slot.partition) };
        metrics.recordsBehind.remove(labels);
        metrics.oldestUnarchivedSeconds.remove(labels);
        metrics.archiveLineageMismatch.remove(labels);
      }
    }
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) {
        const key = slotKey(topic, partition);
        const before = previous.get(key);
        const slot: Slot = {
          topic,
          partition,
          ready: Promise.resolve(null),
          worker: null,
          retired: false,
          gapStrikes: 0,
        };
        slot.ready = this.recovery.recoverWithRetry(slot, before);
        this.slots.set(key, slot);
      }
    }
    this.log.info({ assignment }, 'partitions assigned');
  }
}
