import type { Consumer } from 'kafkajs';
import type { PartitionWorker } from '../partition';

/**
 * The member's few mutable flags, shared by reference between the group's parts (lifecycle, runner,
 * recovery, monitor, offsets) so that none of them has to import another to ask.
 */
export interface GroupState {
  /** The running consumer. A dropped one (still disconnecting) is not it: its events and commits are ignored. */
  consumer: Consumer | null;
  /** The consumer is being stopped gracefully: no new batch starts, recoveries give up. */
  closing: boolean;
  /** Archiver.stop() was called; nothing starts any more. */
  stopped: boolean;
  /** Batches inside eachBatch; a graceful stop waits for them before draining. */
  inFlightBatches: number;
}

export function newGroupState(): GroupState {
  return { consumer: null, closing: false, stopped: false, inFlightBatches: 0 };
}

/** One assigned partition of one group generation; a new generation gets a new slot. */
export interface Slot {
  topic: string;
  partition: number;
  ready: Promise<PartitionWorker | null>;
  worker: PartitionWorker | null;
  retired: boolean;
  /** Offset gaps seen in a row that retention does not explain (see BatchRunner.onGap). */
  gapStrikes: number;
}

export const slotKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
