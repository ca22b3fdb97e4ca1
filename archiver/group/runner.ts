import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { classifyMessage } from '../classify';
import type { LossReporter } from '../loss';
import type { PartitionWorker } from '../partition';
import type { PreparedRow } from '../roll';
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
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const state = this.state;
    if (state.closing) return;
    state.inFlightBatches += 1;
    try {
      const slot = this.slots.get(batch.topic, batch.partition);
      if (!slot || slot.retired) return;
      const worker = await heartbeating(slot.ready, heartbeat);
      if (!worker || slot.retired || worker.isCancelled || isStale()) return;
      const highWatermark = /^\d+$/.test(batch.highWatermark) ? BigInt(batch.highWatermark) : undefined;
      // kafkajs's isRunning/isStale/resolveOffset allocate on every call (measured: ~4% of the
      // archiver's garbage). Their answers can only change while this loop awaits (a rebalance, a
      // seek, a stop all happen in other tasks), so ask after each await rather than per message,
      // and resolve the offset reached before each await and when leaving.
      let unresolved: string | null = null;
      const resolve = (): void => {
        if (unresolved !== null) resolveOffset(unresolved);
        unresolved = null;
      };
      let awaited = true; // slot.ready was awaited
      try {
        for (const message of batch.messages) {
          if (state.closing || slot.retired || worker.isCancelled) return;
          if (awaited && (!isRunning() || isStale())) return;
          awaited = false;
          const offset = BigInt(message.offset);
          if (offset < worker.next) {
            unresolved = message.offset;
            continue;
          }
          if (offset > worker.next) {
            resolve();
            awaited = true;
          }
          if (offset > worker.next && !(await this.onGap(slot, worker, offset))) {
            state.consumer?.seek({
              topic: batch.topic,
              partition: batch.partition,
              offset: worker.next.toString(),
            });
            return;
          }
          slot.gapStrikes = 0;
          const c = classifyMessage(batch.topic, batch.partition, message, worker.dedup, worker.erased);
          let row: PreparedRow | null = null;
          switch (c.kind) {
            case 'row':
              row = c.row;
              break;
            case 'replayed':
              metrics.archiveSkipped.inc({ topic: batch.topic, reason: 'replay' });
              break;
            case 'duplicate':
              metrics.archiveSkipped.inc({ topic: batch.topic, reason: 'duplicate' });
              this.log.debug(
                { topic: batch.topic, partition: batch.partition, offset: message.offset, id: c.dedupKey },
                'duplicate eventID skipped',
              );
              break;
            case 'erased':
              metrics.archiveErasedDropped.inc({ topic: batch.topic, table: c.table });
              break;
            case 'poison': {
              const sending = this.deadLetter(slot, worker, message, c.reason, c.err);
              resolve();
              awaited = true;
              // Heartbeating: a dead letter retried after a request timeout may take longer than the session.
              const sent = await heartbeating(sending, heartbeat);
              // Not sent: the partition is no longer ours; its offset stays unaccepted (the next owner sends it).
              if (!sent || state.closing || slot.retired) return;
              break;
            }
            default:
              return unhandled(c);
          }
          const mustWait = worker.accept(offset, row, Number(message.timestamp), highWatermark);
          unresolved = message.offset;
          if (mustWait) {
            resolve();
            awaited = true;
            await heartbeating(worker.room(), heartbeat);
          }
        }
      } finally {
        resolve();
      }
      await heartbeat();
    } finally {
      state.inFlightBatches -= 1;
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

/** A classification kind without a case above: a compile error, and never reached at run time. */
function unhandled(c: never): never {
  throw new InternalError(`unhandled classification ${JSON.stringify(c)}`);
}
