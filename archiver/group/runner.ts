import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { classifyMessage, type Classification } from '../classify';
import type { LossReporter } from '../loss';
import type { PartitionWorker } from '../partition';
import type { PreparedRow } from '../../archive/rows';
import type { AdminClient } from './admin';
import type { DeadLetters } from './dead-letters';
import type { PartitionSlots } from './slots';
import type { GroupState, Slot } from './state';
import { InternalError } from '../../core/errors';

/** Await `p` while keeping the group membership alive (long rolls must not cost the session). */
export async function heartbeating<T>(p: Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
  let done = false;
  const tracked = p.finally(() => {
    done = true;
  });
  while (!done) {
    let timer: NodeJS.Timeout | undefined;
    const tick = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 1000);
    });
    await Promise.race([tracked, tick]);
    clearTimeout(timer);
    if (!done) await heartbeat();
  }
  return tracked;
}

/** The consumer's eachBatch: each message of an assigned partition classified and handed to its worker. */
export class BatchRunner {
  constructor(
    private readonly log: Logger,
    private readonly state: GroupState,
    private readonly slots: PartitionSlots,
    private readonly admin: AdminClient,
    private readonly loss: LossReporter,
    private readonly deadLetters: DeadLetters,
  ) {}

  async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, heartbeat, isStale } = payload;
    const state = this.state;
    if (state.closing) return;
    state.inFlightBatches += 1;
    try {
      const slot = this.slots.get(batch.topic, batch.partition);
      if (!slot || slot.retired) return;
      const worker = await heartbeating(slot.ready, heartbeat);
      if (!worker || slot.retired || worker.isCancelled || isStale()) return;
      if (await this.consume(payload, slot, worker)) await heartbeat();
    } finally {
      state.inFlightBatches -= 1;
    }
  }

  /**
   * Hand each message of the batch to the partition's worker, in order; false when the batch stopped early (the
   * partition is no longer ours, the member is closing, or a seek back).
   */
  private async consume(payload: EachBatchPayload, slot: Slot, worker: PartitionWorker): Promise<boolean> {
    const { batch, heartbeat } = payload;
    const highWatermark = /^\d+$/.test(batch.highWatermark) ? BigInt(batch.highWatermark) : undefined;
    const reached = new BatchProgress(payload);
    try {
      for (const message of batch.messages) {
        if (this.state.closing || slot.retired || worker.isCancelled || !reached.stillOurs()) return false;
        const offset = BigInt(message.offset);
        if (offset < worker.next) {
          // Archived already (a batch fetched before a seek, or a redo's head).
          reached.offset(message.offset);
          continue;
        }
        if (offset > worker.next && !(await this.acrossGap(slot, worker, offset, reached))) return false;
        slot.gapStrikes = 0;
        const c = classifyMessage(batch.topic, batch.partition, message, worker.dedup, worker.erased);
        if (c.kind === 'poison' && !(await this.setAside(payload, slot, worker, message, c, reached)))
          return false;
        const row = this.rowOf(batch.topic, batch.partition, message, c);
        const mustWait = worker.accept(offset, row, Number(message.timestamp), highWatermark);
        reached.offset(message.offset);
        if (mustWait) {
          reached.beforeAwait();
          await heartbeating(worker.room(), heartbeat);
        }
      }
      return true;
    } finally {
      reached.resolve();
    }
  }

  /** A message past the next offset: go on across the gap (true), or seek back to the next offset (false). */
  private async acrossGap(
    slot: Slot,
    worker: PartitionWorker,
    offset: bigint,
    reached: BatchProgress,
  ): Promise<boolean> {
    reached.beforeAwait();
    if (await this.onGap(slot, worker, offset)) return true;
    this.state.consumer?.seek({
      topic: slot.topic,
      partition: slot.partition,
      offset: worker.next.toString(),
    });
    return false;
  }

  /**
   * A poison message goes to the dead-letter topic before its offset is accepted; false when it was not sent (the
   * partition is no longer ours: its offset stays unaccepted, and the next owner sends it) or the member stops.
   */
  private async setAside(
    payload: EachBatchPayload,
    slot: Slot,
    worker: PartitionWorker,
    message: KafkaMessage,
    poison: { reason: string; err: unknown },
    reached: BatchProgress,
  ): Promise<boolean> {
    const sending = this.deadLetter(slot, worker, message, poison.reason, poison.err);
    reached.beforeAwait();
    // Heartbeating: a dead letter retried after a request timeout may take longer than the session.
    const sent = await heartbeating(sending, payload.heartbeat);
    return sent && !this.state.closing && !slot.retired;
  }

  /** The row a classified message adds to its roll; null for one skipped (counted) or set aside. */
  private rowOf(
    topic: string,
    partition: number,
    message: KafkaMessage,
    c: Classification,
  ): PreparedRow | null {
    switch (c.kind) {
      case 'row':
        return c.row;
      case 'replayed':
        metrics.archiveSkipped.inc({ topic, reason: 'replay' });
        return null;
      case 'duplicate':
        metrics.archiveSkipped.inc({ topic, reason: 'duplicate' });
        this.log.debug(
          { topic, partition, offset: message.offset, id: c.dedupKey },
          'duplicate eventID skipped',
        );
        return null;
      case 'erased':
        metrics.archiveErasedDropped.inc({ topic, table: c.table });
        return null;
      case 'poison':
        return null;
      default:
        return unhandled(c);
    }
  }

  private deadLetter(
    slot: Slot,
    worker: PartitionWorker,
    message: KafkaMessage,
    reason: string,
    err: unknown,
  ): Promise<boolean> {
    const abandoned = (): boolean => this.state.closing || this.state.stopped || worker.isCancelled;
    return this.deadLetters.send(slot, message, reason, err, abandoned);
  }

  /**
   * Offsets on our topics are contiguous (no compaction, no transactions), so a jump means either
   * retention deleted what we had not archived (loss: report it and go on) or a batch fetched
   * before our seek (seek again). A gap that persists without retention explaining it is taken
   * as a real gap after three tries rather than stalling the partition.
   */
  private async onGap(slot: Slot, worker: PartitionWorker, offset: bigint): Promise<boolean> {
    const { low } = await this.admin.watermarks(slot.topic, slot.partition);
    if (low > worker.next) {
      await this.loss.report(slot.topic, slot.partition, worker.next, low - 1n, 'monitor');
      return true;
    }
    slot.gapStrikes += 1;
    if (slot.gapStrikes < 3) return false;
    this.log.warn(
      {
        topic: slot.topic,
        partition: slot.partition,
        expected: worker.next.toString(),
        got: offset.toString(),
      },
      'offset gap not explained by retention; going on',
    );
    return true;
  }
}

/**
 * How far a batch got, told to kafkajs sparingly: its isRunning/isStale/resolveOffset allocate on every call
 * (measured: ~4% of the archiver's garbage). Their answers can only change while the batch awaits (a rebalance, a
 * seek, a stop all happen in other tasks), so they are asked after each await rather than per message, and the
 * offset reached is resolved before each await and when the batch ends.
 */
class BatchProgress {
  private unresolved: string | null = null;
  /** The batch awaited since the last look (it awaited its partition's worker before the first message). */
  private awaited = true;

  constructor(private readonly payload: EachBatchPayload) {}

  /** The batch is done with the message at `offset`. */
  offset(offset: string): void {
    this.unresolved = offset;
  }

  /** Before an await: resolve the offset reached, and look again afterwards. */
  beforeAwait(): void {
    this.resolve();
    this.awaited = true;
  }

  resolve(): void {
    if (this.unresolved !== null) this.payload.resolveOffset(this.unresolved);
    this.unresolved = null;
  }

  /** The consumer still runs this batch's partition (asked of kafkajs only after an await). */
  stillOurs(): boolean {
    if (!this.awaited) return true;
    this.awaited = false;
    return this.payload.isRunning() && !this.payload.isStale();
  }
}

/** A classification kind without a case above: a compile error, and never reached at run time. */
function unhandled(c: never): never {
  throw new InternalError(`unhandled classification ${JSON.stringify(c)}`);
}
